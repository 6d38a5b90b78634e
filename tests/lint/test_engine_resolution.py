"""Name resolution, framework profiles and transitive analysis, through ``lint_paths`` on small projects.

Each test writes a throwaway project; expected findings are marked on their lines with the one
expectation syntax of the lint tests, read and compared by ``test_fixture_projects`` (see its docstring):
``# expect: RT101``, ``# expect: RT101:12`` (column), ``# expect: RT204 via`` when the finding is reported
at an orchestration call site with a trace (``via helper.name`` to name the helper called there), several
separated by commas. ``assert_marks`` reads them strictly (a malformed mark, an unknown code or a mark on a
line without code fails with ``file:line``) and compares exactly: a finding per mark, duplicates counted,
and every unmarked line quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_fixture_projects import MarkError, assert_findings_match_marks, linted_findings

from replaytest.config import Config, RuleTable
from replaytest.lint.engine import build_context, lint_paths
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def lint(root: Path, config: Config | None = None, targets: list[Path] | None = None):
    config = config or Config(root=root)
    return lint_paths(targets or [root], config, PROFILES, use_cache=False, jobs=1,
                      context=build_context(config, PROFILES), cwd=root)


def assert_marks(root: Path, config: Config | None = None) -> list:
    """Lint ``root`` in process and fail unless its findings match its ``# expect:`` marks exactly;
    returns the diagnostics for follow-up assertions."""
    result = lint(root, config)
    assert_findings_match_marks(root, linted_findings(result.diagnostics))
    return result.diagnostics


# --- assert_marks is as strict as the fixture projects' check ---------------------------------------

# Two direct clock reads on line 8; ``{after}`` is line 9.
_CLOCK_PAIR = """
    import time
    from temporalio import workflow

    @workflow.defn
    class Clock:
        @workflow.run
        async def run(self) -> float:
            pair = (time.time(), time.monotonic())  {mark}
            {after}
            return pair[0]
"""


@pytest.mark.parametrize(
    ("mark", "after", "complaint"),
    [
        ("# expect: RT1011, RT101", "", r"wf\.py:8: unknown rule code 'RT1011'"),
        ("# expect: RT101, RT101 vai", "", r"wf\.py:8: malformed expect mark item 'RT101 vai'"),
        ("# expect: RT101, RT101", "# expect: RT101", r"wf\.py:9: an expect mark must end a line of code"),
        ("# expect: RT101, RT101", "# <- RT101", r"wf\.py:9: `# <- CODE` is the old mark syntax"),
    ],
    ids=["unknown-code", "malformed-item", "mark-on-a-line-without-code", "old-syntax"],
)
def test_a_bad_mark_fails_assert_marks_with_file_and_line(
    tmp_path: Path, mark: str, after: str, complaint: str
) -> None:
    write(tmp_path, {"wf.py": _CLOCK_PAIR.format(mark=mark, after=after)})
    with pytest.raises(MarkError, match="^" + complaint):
        assert_marks(tmp_path)


def test_assert_marks_counts_two_findings_of_a_rule_on_one_line(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": _CLOCK_PAIR.format(mark="# expect: RT101, RT101", after="")})
    assert [(d.line, d.rule) for d in assert_marks(tmp_path)] == [(8, "RT101"), (8, "RT101")]
    write(tmp_path, {"wf.py": _CLOCK_PAIR.format(mark="# expect: RT101", after="")})
    with pytest.raises(AssertionError) as caught:
        assert_marks(tmp_path)
    message = str(caught.value)
    assert "missing (marked, not reported):\n  (none)\n" in message, message
    assert "extra (reported, not marked):\n  wf.py:8 RT101:" in message, message


def test_aliases_attributes_and_conditional_imports(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import datetime as dt
        from uuid import uuid4 as fresh
        from temporalio import workflow
        try:
            import ujson as json_impl
        except ImportError:
            import json as json_impl
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from os import environ
        with workflow.unsafe.imports_passed_through():
            import secrets

        @workflow.defn(name="aliases")
        class Aliases:
            @workflow.run
            async def run(self) -> str:
                a = dt.datetime.now()  # expect: RT101
                b = fresh()  # expect: RT103
                c = secrets.token_hex(4)  # expect: RT102
                d = environ.get("X")  # expect: RT204
                return json_impl.dumps([a, b, c, d])
    """})
    assert_marks(tmp_path)


def test_instances_of_known_classes(tmp_path: Path) -> None:
    write(tmp_path, {"agent.py": """
        import boto3
        from anthropic import AsyncAnthropic
        from google import genai
        from langchain.chat_models import init_chat_model
        from langchain_openai import ChatOpenAI
        from openai import AsyncOpenAI
        from temporalio import workflow

        llm = ChatOpenAI(model="gpt-4o")
        PROMPT = None
        parse = None

        @workflow.defn
        class Agent:
            def __init__(self) -> None:
                self.client = AsyncOpenAI()

            @workflow.run
            async def run(self, question: str) -> list:
                claude = AsyncAnthropic()
                gemini = genai.Client()
                chat = init_chat_model("gpt-4o")
                bedrock = boto3.client("bedrock-runtime")
                s3 = boto3.client("s3")
                return [
                    await self.client.responses.create(model="m", input=question),  # expect: RT201
                    await claude.messages.create(model="m", max_tokens=1, messages=[]),  # expect: RT201
                    gemini.models.generate_content(model="m", contents=question),  # expect: RT201
                    chat.invoke(question),  # expect: RT201
                    llm.bind_tools([]).invoke(question),  # expect: RT201
                    bedrock.converse(modelId="m", messages=[]),  # expect: RT201
                    (PROMPT | llm | parse).invoke({"q": question}),  # expect: RT201
                    s3.get_object(Bucket="b", Key="k"),  # expect: RT202
                ]
    """})
    assert_marks(tmp_path)


def test_transitive_chain_across_modules_is_reported_at_the_call_site(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/util.py": """
            import time
            from .deep import deeper

            def stamp() -> float:
                return deeper()

            def recursive(n: int) -> int:
                return recursive(n - 1) if n else ping(n)

            def ping(n: int) -> int:
                return recursive(n)
        """,
        "app/deep.py": """
            import time

            def deeper() -> float:
                return time.time()
        """,
        "app/llm.py": """
            from openai import AsyncOpenAI

            client = AsyncOpenAI()
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app import util
            from app.llm import client

            @workflow.defn
            class OrderWorkflow:
                @workflow.run
                async def run(self) -> float:
                    self.helper()  # expect: RT101 via
                    util.recursive(3)
                    await client.chat.completions.create(model="m", messages=[])  # expect: RT201
                    return util.stamp()  # same clock read as self.helper(): reported once, there

                def helper(self) -> float:
                    return util.stamp()
        """,
    })
    diagnostics = assert_marks(tmp_path)
    via_helper = next(d for d in diagnostics if d.line == 9)
    assert via_helper.trace == (
        "app.wf.OrderWorkflow.run", "app.wf.OrderWorkflow.helper", "app.util.stamp", "app.deep.deeper", "time.time"
    )
    assert via_helper.framework == "temporal"
    assert via_helper.message.endswith("(also reached from 1 other call site, in app.wf.OrderWorkflow.run)")


def test_steps_and_safe_calls_stop_the_walk(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import asyncio
        import random
        import time
        from datetime import timedelta
        from temporalio import activity, workflow

        @activity.defn
        async def fetch() -> float:
            return time.time()

        def not_called() -> float:
            return random.random()

        @workflow.defn
        class Safe:
            @workflow.run
            async def run(self) -> None:
                await asyncio.sleep(1)
                await workflow.execute_activity(fetch, start_to_close_timeout=timedelta(seconds=5))
                await fetch()
                workflow.now()
                await asyncio.wait([])  # expect: RT302
    """})
    assert_marks(tmp_path)


def test_registration_call_forms_and_interceptors(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import time
        import uuid
        import azure.durable_functions as df
        from temporalio import workflow
        from temporalio.worker import WorkflowInboundInterceptor

        class Late:
            @workflow.run
            async def run(self) -> None:
                time.time()  # expect: RT101

        Late = workflow.defn(name="late")(Late)

        class Inbound(WorkflowInboundInterceptor):
            async def execute_workflow(self, input):
                return uuid.uuid4()  # expect: RT103

        def orchestrator_function(context):
            uuid.uuid4()  # expect: RT103
            yield context.call_activity("Hello", "Tokyo")

        main = df.Orchestrator.create(orchestrator_function)
    """})
    assert_marks(tmp_path)


def test_restate_azure_journal_and_langgraph_profiles(tmp_path: Path) -> None:
    write(tmp_path, {
        "restate_app.py": """
            import time
            import uuid
            import restate

            greeter = restate.Service("Greeter")

            @greeter.handler()
            async def greet(ctx: restate.Context, name: str) -> str:
                stamp = await ctx.run("stamp", lambda: time.time())
                key = ctx.uuid()
                return f"{name} {stamp} {key} {uuid.uuid4()}"  # expect: RT103
        """,
        "azure_app.py": """
            import datetime
            import azure.durable_functions as df

            app = df.DFApp()

            @app.orchestration_trigger(context_name="context")
            def hello(context):
                fire_at = context.current_utc_datetime
                yield context.create_timer(fire_at)
                return datetime.datetime.utcnow()  # expect: RT101

            @app.activity_trigger(input_name="city")
            def say(city: str) -> str:
                return str(datetime.datetime.utcnow())
        """,
        "journal_app.py": """
            import time
            from replaytest.journal import workflow

            def call_llm(text):
                return text

            @workflow(name="agent", version="1")
            def agent(ctx, ticket):
                plan = ctx.model("plan", call_llm, ticket, prompt=None)
                ctx.step("wait", lambda: time.sleep(1))
                ctx.sleep(5)
                time.sleep(1)  # expect: RT303
                return plan
        """,
        "graph_app.py": """
            import random
            import time
            from langgraph.func import entrypoint, task

            @task
            def roll() -> float:
                return random.random()

            @entrypoint()
            def agent(question: str) -> float:
                time.sleep(1)
                return roll().result() + random.random()  # expect: RT102
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert {d.framework for d in diagnostics} == {"restate", "azure_durable", "journal", "langgraph"}


def test_config_declared_engine_and_extra_names(tmp_path: Path) -> None:
    write(tmp_path, {"flows.py": """
        import time
        import uuid
        from acme.durable import orchestration, step
        from acme.llm import complete

        @step
        def charge() -> None:
            time.time()
            send(acme_dedupe_token=str(uuid.uuid4()))  # expect: RT104

        @orchestration
        def nightly(report_id: str) -> str:
            complete("summarise")  # expect: RT201
            send(acme_dedupe_token=str(uuid.uuid4()))  # expect: RT103
            return str(time.time())  # expect: RT101
    """})
    config = Config(root=tmp_path, orchestration_decorators=("acme.durable.orchestration",),
                    step_decorators=("acme.durable.step",),
                    rules={"RT201": RuleTable({"calls": ["acme.llm.complete"]}),
                           "RT104": RuleTable({"key-names": ["acme_dedupe_token"]})})
    assert_marks(tmp_path, config)


def test_iteration_order_sources_and_sinks(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import glob
        import os
        from pathlib import Path
        from dbos import DBOS

        @DBOS.workflow()
        def order(tags: list, folder: str) -> list:
            seen = {t for t in tags}
            both = seen | set(folder)
            for tag in both:  # expect: RT301
                pass
            ordered = sorted(seen)
            count = len(seen)
            present = "x" in seen
            files = os.listdir(folder)
            first = files[0]  # expect: RT301
            listing = sorted(Path(folder).iterdir())
            names = ",".join(glob.glob("*.py"))  # expect: RT301
            shard = hash(f"{folder}") % 4  # expect: RT301
            shortest = min(seen, key=len)  # expect: RT301
            largest = max(seen)
            stable = {name: 1 for name in tags}
            for name in stable:
                pass
            return os.listdir(folder)  # expect: RT301
    """})
    assert_marks(tmp_path)


def test_global_state_and_concurrency(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import subprocess
        import threading
        from collections import defaultdict
        from dbos import DBOS

        CACHE = {}
        SEEN = defaultdict(list)
        LIMIT = 3

        @DBOS.workflow()
        def work(key: str) -> int:
            CACHE[key] = 1  # expect: RT304
            SEEN[key].append(1)
            SEEN.setdefault(key, [])  # expect: RT304
            local = {}
            local[key] = LIMIT
            threading.Thread(target=print).start()  # expect: RT302
            return subprocess.run(["true"]).returncode  # expect: RT302
    """})
    assert_marks(tmp_path)


@pytest.mark.parametrize("module_text", ["x = (", "def f(:\n    pass\n"])
def test_syntax_error_is_a_diagnostic_and_other_files_still_checked(tmp_path: Path, module_text: str) -> None:
    write(tmp_path, {
        "broken.py": "from temporalio import workflow\n@workflow.defn\n" + module_text,
        "ok.py": """
            import time
            from temporalio import workflow

            @workflow.defn
            class Ok:
                @workflow.run
                async def run(self) -> float:
                    return time.time()
        """,
    })
    result = lint(tmp_path)
    assert [(d.path, d.rule, d.category) for d in result.diagnostics] == [
        ("broken.py", "RT001", "syntax"), ("ok.py", "RT101", "clock")]
    assert result.errors == 1 and result.internal_errors == 0


def test_instance_attribute_sets_and_containers_of_other_modules(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/state.py": """
            EVENTS = []
            LIMITS = {"max": 3}
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app.state import EVENTS, LIMITS
            from app import state

            @workflow.defn
            class Tracker:
                def __init__(self) -> None:
                    self.pending: set[str] = set()
                    self.done = {"a", "b"}

                @workflow.signal
                async def add(self, item: str) -> None:
                    self.pending.add(item)
                    EVENTS.append(item)  # expect: RT304
                    state.EVENTS.clear()  # expect: RT304
                    LIMITS["max"] = 4  # expect: RT304
                    del state.LIMITS["max"]  # expect: RT304
                    local = {}
                    local["max"] = 1

                @workflow.run
                async def run(self) -> list:
                    ordered = sorted(self.pending)
                    first = [item for item in self.done]  # expect: RT301
                    for item in self.pending:  # expect: RT301
                        pass
                    return ordered + first + [LIMITS.get("max")]
        """,
    })
    assert_marks(tmp_path)


def test_field_default_factories_run_when_the_class_is_built(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/models.py": """
            import uuid
            from dataclasses import dataclass, field
            from datetime import datetime

            @dataclass
            class Order:
                items: list = field(default_factory=list)
                created: datetime = field(default_factory=datetime.now)
                id: str = field(default_factory=lambda: "fixed")
                token: str = field(default_factory=lambda: str(uuid.uuid4()), kw_only=True)

            @dataclass
            class Plain:
                key: uuid.UUID = field(default_factory=uuid.uuid4)

                def __init__(self) -> None:
                    self.key = uuid.UUID(int=0)
        """,
        "app/wf.py": """
            from dbos import DBOS
            from app.models import Order, Plain

            @DBOS.workflow()
            def place(now, token) -> str:
                order = Order()  # expect: RT101 via, RT103 via
                dated = Order([], now)  # the uuid4 factory again: folded into the finding above
                named = Order(created=now, token=token)
                spread = Order(*[[], now], token=token)  # the clock factory again: folded likewise
                plain = Plain()
                return f"{order} {dated} {named} {spread} {plain}"
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert diagnostics[0].trace == ("app.wf.place", "app.models.Order.__init__", "datetime.datetime.now")
    # Each factory's finding counts the other constructor call that runs it.
    assert all(d.message.endswith("(also reached from 1 other call site, in app.wf.place)") for d in diagnostics)


def test_valid_python_libcst_cannot_parse_is_analysed_and_a_syntax_error_is_python_s(tmp_path: Path) -> None:
    # ``(pars): bool = True`` is valid Python that libcst's parser refused; lint parses with CPython's own.
    write(tmp_path, {
        "annotated.py": "from temporalio import workflow\n\n@workflow.defn\nclass A:\n    pass\n\n(pars): bool = True\n",
        "broken.py": "from temporalio import workflow\n\n@workflow.defn\nclass B(:\n    pass\n",
    })
    result = lint(tmp_path)
    assert [(d.path, d.line, d.column, d.message) for d in result.diagnostics] == [
        ("broken.py", 4, 9, "syntax error: invalid syntax")]
    assert all(d.rule == "RT001" for d in result.diagnostics) and result.errors == 1


