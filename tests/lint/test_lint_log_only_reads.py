"""A clock, random or uuid read whose value only fills log output (``lint.log_flow``), engine by engine.

Every engine but Temporal re-runs workflow code as plain Python against what it recorded (steps, activities,
tasks, journal entries, checkpoints), never against what the code logged: there such a read is no finding
(``FrameworkProfile.log_only_harmless``). Temporal's workflow sandbox rejects the read itself, so there it
stays a finding, worded so. A value that also goes anywhere else (a step's input, a return, a branch) keeps
the finding everywhere. DBOS's real recovery judges the harmless case in
``tests/dbos/test_dbos_log_only_clock.py``; Temporal's sandbox in
``tests/temporal/test_temporal_replay.py::test_a_clock_read_only_logged_is_still_rejected_by_the_sandbox``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]


def findings(tmp_path: Path, source: str) -> list[tuple[str, int, str]]:
    module = tmp_path / "example.py"
    module.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    config = Config(root=tmp_path)
    result = lint_paths([module], config, PROFILES, use_cache=False, jobs=1, context=build_context(config, PROFILES),
                        cwd=tmp_path)
    return sorted((d.rule, d.line, d.message) for d in result.diagnostics)


# Each engine's orchestration function with ``{body}`` in it (indented four spaces), the step call it can
# pass a value to (``{step}``), and what it imports. The body's first line is line 10 of the module.
ENGINES = {
    "dbos": (
        "from dbos import DBOS\n\n@DBOS.step()\ndef save(value: str) -> str:\n    return value\n\n\n\n"
        "@DBOS.workflow()\ndef flow(order: str) -> str:\n{body}\n    return order\n",
        "save(str({value}))",
    ),
    "langgraph": (
        "from langgraph.func import entrypoint, task\n\n@task\ndef save(value: str) -> str:\n    return value\n\n\n\n"
        "@entrypoint()\ndef flow(order: str) -> str:\n{body}\n    return order\n",
        "save(str({value})).result()",
    ),
    # A graph node's reads are findings only before its last interrupt (RT205: the node re-runs on resume).
    "langgraph-node": (
        "from langgraph.graph import StateGraph\nfrom langgraph.types import interrupt\n\n\n\n\n\n\n"
        "def review(state: dict) -> dict:\n{body}\n    state['answer'] = interrupt('ok?')\n    return state\n\n"
        "builder = StateGraph(dict)\nbuilder.add_node('review', review)\n",
        "state.update(at=str({value}))",
    ),
    "restate": (
        "import restate\n\nservice = restate.Service('orders')\n\n\n\n\n"
        "@service.handler()\nasync def flow(ctx: restate.Context, order: str) -> str:\n{body}\n    return order\n",
        "await ctx.run('save', lambda: str({value}))",
    ),
    "azure_durable": (
        "import azure.durable_functions as df\n\napp = df.DFApp()\n\n\n\n\n"
        "@app.orchestration_trigger(context_name='context')\ndef flow(context: df.DurableOrchestrationContext):\n"
        "{body}\n    return (yield context.call_activity('Charge', context.get_input()))\n",
        "(yield context.call_activity('Save', str({value})))",
    ),
    "aws_durable": (
        "from aws_durable_execution_sdk_python import DurableContext, durable_execution\n\n\n\n\n\n\n"
        "@durable_execution\ndef flow(event: dict, context: DurableContext) -> str:\n{body}\n    return event['order']\n",
        "context.step(lambda _: str({value}), name='save')",
    ),
    "journal": (
        "from replaytest.journal import workflow\n\n\n\n\n\n\n\n"
        "@workflow\ndef flow(ctx, order: str) -> str:\n{body}\n    return order\n",
        "ctx.step('save', lambda: str({value}))",
    ),
    "temporal": (
        "from temporalio import workflow\n\n\n\n\n\n\n@workflow.defn\nclass Flow:\n    @workflow.run\n"
        "    async def run(self, order: str) -> str:\n{body}\n        return order\n",
        "await workflow.execute_activity('save', str({value}), start_to_close_timeout=None)",
    ),
}
IMPORTS = "import logging\nimport random\nimport time\nimport uuid\nfrom datetime import datetime\nlogger = logging.getLogger(__name__)\n"
READS = {"RT101": "datetime.now()", "RT102": "random.random()", "RT103": "uuid.uuid4()"}
TEMPORAL_WORDS = ("in workflow code, only for a log line, where it does not break replay but Temporal's workflow "
                  "sandbox rejects it at run time")


def module(engine: str, *lines: str) -> tuple[str, int]:
    """The engine's module with ``lines`` as the orchestration body, and the line number of the first."""
    template, _ = ENGINES[engine]
    indent = " " * (8 if engine == "temporal" else 4)
    body = "\n".join(indent + line for line in lines)
    text = IMPORTS + template.format(body=body)
    first = text.splitlines().index(indent + lines[0]) + 1
    return text, first


def step_call(engine: str, value: str) -> str:
    return ENGINES[engine][1].format(value=value)


def reported(engine: str, code: str) -> str:
    """The rule reporting a read of ``code``'s kind in the engine's orchestration code."""
    return "RT205" if engine == "langgraph-node" else code


@pytest.mark.parametrize("engine", [name for name in ENGINES if name != "temporal"])
@pytest.mark.parametrize("code", list(READS))
def test_a_read_only_logged_is_no_finding_where_the_engine_re_runs_plain_python(
    tmp_path: Path, engine: str, code: str
) -> None:
    read = READS[code]
    source, _ = module(
        engine,
        f'logger.error(f"failed at {{{read}}}")',  # an f-string part
        f'logging.info("drawn %s", {read})',  # a %-format argument
        f'print("at {{}}".format({read}))',  # str.format
        f"value = {read}",  # through a local used only in log lines
        'logger.info("value %s", value)',
    )
    assert [f for f in findings(tmp_path, source) if f[0] == reported(engine, code)] == []


@pytest.mark.parametrize("engine", [name for name in ENGINES if name != "temporal"])
@pytest.mark.parametrize("code", list(READS))
def test_a_read_also_given_to_a_step_is_a_finding_in_every_engine(tmp_path: Path, engine: str, code: str) -> None:
    source, first = module(engine, f"value = {READS[code]}", 'logger.info("value %s", value)', step_call(engine, "value"))
    rule = reported(engine, code)
    assert [(found, line) for found, line, _ in findings(tmp_path, source) if found == rule] == [(rule, first)]


@pytest.mark.parametrize("code", list(READS))
def test_on_temporal_a_read_only_logged_stays_a_finding_because_the_sandbox_rejects_it(tmp_path: Path, code: str) -> None:
    source, first = module("temporal", f'workflow.logger.info(f"at {{{READS[code]}}}")')
    [(rule, line, message)] = [f for f in findings(tmp_path, source) if f[0] == code]
    assert (rule, line) == (code, first)
    assert TEMPORAL_WORDS in message and " in workflow code;" not in message


def test_on_temporal_a_read_that_also_feeds_an_activity_keeps_the_plain_wording(tmp_path: Path) -> None:
    source, first = module("temporal", "stamp = datetime.now()", 'workflow.logger.info(f"at {stamp}")',
                           step_call("temporal", "stamp"))
    [(_, line, message)] = [f for f in findings(tmp_path, source) if f[0] == "RT101"]
    assert line == first
    assert message == "datetime.now() reads the wall clock in workflow code; use workflow.now()"


@pytest.mark.parametrize(
    ("lines", "reported"),
    [
        # Pure operations on the way to the log line: arithmetic, methods of the value, format specs, chains of
        # locals each used only in log lines.
        (("start = time.time()", "elapsed = time.time() - start", 'logger.info(f"took {elapsed:.2f}s")'), []),
        (('DBOS.logger.info("at " + datetime.now().isoformat())',), []),
        (('logger.info("at %s", {"stamp": str(datetime.now())})',), []),
        (('print(f"at {datetime.now()}", file=sys.stderr)',), []),
        # The value goes somewhere else too.
        (("stamp = datetime.now()", 'logger.info(f"at {stamp}")', "return str(stamp)"), [0]),
        (("stamp = datetime.now()", 'logger.info(f"at {stamp}")', "if stamp.hour > 12:", "    logger.info('late')"), [0]),
        (("stamp = datetime.now()", 'logger.info(f"at {stamp}")', "DBOS.set_event('at', str(stamp))"), [0]),
        (("logger.info(save(str(datetime.now())))",), [0]),  # a step's input inside the log call
        (("logger.info((stamp := datetime.now()))", "return str(stamp)"), [0]),  # a walrus escapes
        (('print(datetime.now(), file=open("log.txt", "a"))',), [0]),  # a file, not log output
        (("stamp = datetime.now()",), [0]),  # used nowhere: not a way out this check follows
        (("global STAMP", "STAMP = datetime.now()", 'logger.info(f"{STAMP}")'), [1]),
        (("logger.info('%s', random.shuffle(ORDERS))",), [0]),  # shuffling changes the list
        (("log = make_logger()", 'log.info(f"at {datetime.now()}")'), [1]),  # not known to be a logger
    ],
)
def test_what_only_logged_means(tmp_path: Path, lines: tuple[str, ...], reported: list[int]) -> None:
    source = (
        "import logging\nimport random\nimport sys\nfrom datetime import datetime\nimport time\nfrom dbos import DBOS\n"
        "logger = logging.getLogger(__name__)\nORDERS = []\nSTAMP = None\n\ndef make_logger():\n    return object()\n\n"
        "@DBOS.step()\ndef save(value: str) -> str:\n    return value\n\n@DBOS.workflow()\ndef flow() -> str:\n"
        + "\n".join(f"    {line}" for line in lines) + "\n    return ''\n"
    )
    first = source.splitlines().index(f"    {lines[0]}") + 1
    lines_found = [line for rule, line, _ in findings(tmp_path, source) if rule in READS]
    assert lines_found == [first + offset for offset in reported]


def test_a_helper_only_logging_a_read_is_reported_through_its_temporal_caller_not_its_dbos_one(tmp_path: Path) -> None:
    source = (
        "import logging\nfrom datetime import datetime\nfrom dbos import DBOS\nfrom temporalio import workflow\n"
        "logger = logging.getLogger(__name__)\n\n"
        "def note() -> None:\n    logger.info(f'now {datetime.now()}')\n\n"
        "@DBOS.workflow()\ndef flow() -> None:\n    note()\n\n"
        "@workflow.defn\nclass Flow:\n    @workflow.run\n    async def run(self) -> None:\n        note()\n"
    )
    [(rule, line, message)] = findings(tmp_path, source)
    assert (rule, line) == ("RT101", 18)
    assert message.startswith(f"note() reaches datetime.now(), which reads the wall clock {TEMPORAL_WORDS}")


def test_a_logger_held_by_the_instance_counts(tmp_path: Path) -> None:
    source = (
        "import logging\nfrom datetime import datetime\nfrom dbos import DBOS, DBOSConfiguredInstance\n\n"
        "@DBOS.dbos_class()\nclass Desk(DBOSConfiguredInstance):\n    def __init__(self) -> None:\n"
        "        self.logger = logging.getLogger('desk')\n        super().__init__('desk')\n\n"
        "    @DBOS.workflow()\n    def flow(self) -> None:\n        self.logger.info(f'at {datetime.now()}')\n"
    )
    assert findings(tmp_path, source) == []
