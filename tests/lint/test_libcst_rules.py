"""Rules that read libcst's tree (``Rule.uses_libcst``): the sleep rule written with libcst matchers (as a plugin
author would) finds exactly what the built-in RT303, a ``calls`` table, finds, so ``LibcstFacts`` resolves and
reports as the ``ast`` pass does; RT206, the built-in libcst rule, is exact on the forms of ``try`` it judges; a
plugin author's libcst rule reports where the ``ast`` pass would; the tree is built only for the files a libcst
rule selects, never in a default run over code without RT206's pattern, and never when no such rule is
installed; a file libcst cannot be given is reported, never passed silently."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.rule import Rule
from replaytest.lint.rules import BUILTIN_RULES
from replaytest.lint.rules.rt303_sleep import SleepsWithoutDurableTimer
from replaytest.plugins import load_plugins

if TYPE_CHECKING:
    import libcst

    from replaytest.lint.libcst_facts import LibcstFacts

PLUGINS = load_plugins()
REPOSITORY = Path(__file__).resolve().parents[2]
SLEEPS = frozenset({"time.sleep", "asyncio.sleep", "trio.sleep", "anyio.sleep", "gevent.sleep"})


def _spelled(node: libcst.BaseExpression) -> str:
    import libcst

    if isinstance(node, libcst.Name):
        return node.value
    if isinstance(node, libcst.Attribute):
        return f"{_spelled(node.value)}.{node.attr.value}"
    if isinstance(node, libcst.Call):
        return f"{_spelled(node.func)}()"
    if isinstance(node, libcst.Subscript):
        return f"{_spelled(node.value)}[...]"
    return "(...)"


def _zero(literal: str) -> bool:
    return bool(ast.literal_eval(literal) == 0)


class MatchedSleeps(SleepsWithoutDurableTimer):
    """RT303 written with libcst matchers, as a plugin author would write it (RT303 was, for a while)."""

    calls = {}
    uses_libcst = True
    libcst_screen = (b"sleep",)
    libraries = ("trio", "anyio", "gevent")

    def on_libcst_module(self, facts: LibcstFacts) -> None:
        if not SLEEPS & facts.reportable_callees:
            return
        import libcst
        import libcst.matchers as m

        zero = m.Integer(value=m.MatchIfTrue(_zero)) | m.Float(value=m.MatchIfTrue(_zero))
        for call in m.findall(facts.module, m.Call()):
            assert isinstance(call, libcst.Call)
            qualname = facts.qualname(call)
            if qualname not in SLEEPS:
                continue
            positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
            if qualname != "gevent.sleep" and positional and m.matches(positional[0].value, zero):
                continue
            facts.report(self, call, f"{_spelled(call.func)}()", qualname)


def _rt303(root: Path, rules: tuple[type[Rule], ...], paths: list[Path] | None = None) -> list[tuple]:
    config = Config(root=root)
    context = build_context(config, PLUGINS, rules)
    result = lint_paths(paths or [root], config, PLUGINS, use_cache=False, jobs=1, context=context, cwd=root)
    return sorted((d.path, d.line, d.column, d.end_line, d.end_column, d.message, d.fix, d.trace,
                   tuple((r.path, r.line, r.column) for r in d.related))
                  for d in result.diagnostics if d.rule in ("RT303", "RT002"))


def _with_matched_rt303() -> tuple[type[Rule], ...]:
    return tuple(MatchedSleeps if rule is SleepsWithoutDurableTimer else rule for rule in BUILTIN_RULES)


# Every way a sleep is reached or excused that the table version knows: aliases, ``from`` imports, zero and
# non-zero literals, starred arguments, helpers (followed from the workflow), steps, first-run-only code,
# lambdas, non-ASCII text before the call (character columns), a call spanning lines, a local shadowing.
SLEEPY = {
    "pyproject.toml": "[tool.replaytest]\n",
    "flows/__init__.py": "",
    "flows/helpers.py": """
        import time

        def pause_a_bit(seconds):
            time.sleep(seconds)
            time.sleep(0)
    """,
    "flows/dbos_flow.py": """
        import asyncio
        import time as t
        from time import sleep as nap
        import trio, anyio, gevent
        from dbos import DBOS
        from flows.helpers import pause_a_bit

        @DBOS.step()
        def recorded() -> None:
            t.sleep(5)

        @DBOS.workflow()
        async def flow(items: list[int]) -> None:
            label = "café"; nap(1)
            t.sleep(0.0)
            t.sleep(0_0)
            t.sleep(0x0)
            t.sleep(00)
            t.sleep(0e5)
            t.sleep(0j)
            t.sleep(False)
            t.sleep(-0)
            t.sleep(*items)
            await asyncio.sleep(
                30,
            )
            await asyncio.sleep(0)
            await trio.sleep(2)
            await anyio.sleep(0)
            gevent.sleep(0)
            pause_a_bit(3)
            wait = lambda: t.sleep(4)
            recorded()

        @DBOS.workflow()
        def shadowed(time) -> None:
            time.sleep(1)
    """,
    "flows/azure_flow.py": """
        import time
        import azure.durable_functions as df

        def orchestrator(context: df.DurableOrchestrationContext):
            if not context.is_replaying:
                time.sleep(1)
            time.sleep(2)
            yield context.call_activity("a", 1)

        main = df.Orchestrator.create(orchestrator)
    """,
    "flows/temporal_flow.py": """
        import asyncio
        import time
        from temporalio import workflow

        @workflow.defn
        class Flow:
            @workflow.run
            async def run(self) -> None:
                await asyncio.sleep(5)
                time.sleep(5)
    """,
}


def test_rt303_on_libcst_finds_what_the_table_version_finds_on_many_forms(tmp_path: Path) -> None:
    for name, text in SLEEPY.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    new = _rt303(tmp_path, _with_matched_rt303())
    old = _rt303(tmp_path, BUILTIN_RULES)
    assert new == old
    # The comparison compares something: findings in every engine file, through the helper, with fixes.
    assert {finding[0] for finding in new} == {"flows/azure_flow.py", "flows/dbos_flow.py", "flows/temporal_flow.py"}
    assert len(new) >= 8, new
    assert any(finding[7] for finding in new), "a sleep reached through a helper"
    assert any(finding[6] is not None for finding in new), "a finding with a fix"


@pytest.mark.parametrize("fixture", ["fixtures/lint_projects", "fixtures/example_app", "fixtures/crash_experiment"])
def test_rt303_on_libcst_finds_what_the_table_version_finds_on_the_fixtures(fixture: str) -> None:
    root = REPOSITORY / fixture
    assert _rt303(REPOSITORY / "fixtures", _with_matched_rt303(), [root]) == _rt303(
        REPOSITORY / "fixtures", BUILTIN_RULES, [root])


def test_the_fixtures_compared_hold_sleeps() -> None:
    # Guards the comparison above: the fixtures do give RT303 something to find.
    found = _rt303(REPOSITORY / "fixtures", BUILTIN_RULES, [REPOSITORY / "fixtures" / "lint_projects"])
    assert any("sleep" in finding[5] for finding in found), found


class PrintsInWorkflow(Rule):
    """A plugin author's libcst rule: ``print(...)`` with more than one argument, matched in libcst's tree."""

    code = "XP901"
    name = "prints-in-workflow"
    category = "filesystem"
    summary = "print in workflow code"
    what = "writes to stdout"
    uses_libcst = True
    libcst_screen = (b"print(",)

    def on_libcst_module(self, facts: LibcstFacts) -> None:
        import libcst.matchers as m

        for call in m.findall(facts.module, m.Call(func=m.Name("print"), args=[m.ZeroOrMore(), m.Arg(), m.Arg()])):
            assert facts.in_function(call) is not None or facts.qualname(call) == "builtins.print"
            facts.report(self, call, "print()", facts.qualname(call) or "")


def test_a_plugin_libcst_rule_reports_in_orchestration_code_only(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (tmp_path / "wf.py").write_text(textwrap.dedent("""
        from dbos import DBOS

        print("a", "b")

        @DBOS.step()
        def step() -> None:
            print("a", "b")

        @DBOS.workflow()
        def flow() -> None:
            print("one")
            print("a",
                  "b")
    """), encoding="utf-8")
    config = Config(root=tmp_path)
    context = build_context(config, PLUGINS, (*BUILTIN_RULES, PrintsInWorkflow))
    result = lint_paths([tmp_path], config, PLUGINS, use_cache=False, jobs=1, context=context, cwd=tmp_path)
    found = [(d.rule, d.line, d.column, d.end_line, d.message) for d in result.diagnostics if d.rule == "XP901"]
    assert found == [("XP901", 13, 5, 14, "print() writes to stdout in workflow code; use a @DBOS.step() function")]


def _imports_libcst(root: Path, rules: str) -> bool:
    code = (
        "import sys; from pathlib import Path\n"
        "from replaytest.config import Config\n"
        "from replaytest.lint.engine import build_context, lint_paths\n"
        "from replaytest.lint.rules import BUILTIN_RULES\n"
        "from replaytest.plugins import load_plugins\n"
        "plugins = load_plugins(); root = Path('.').resolve(); config = Config(root=root)\n"
        f"rules = {rules}\n"
        "lint_paths([root], config, plugins, use_cache=False, jobs=1, context=build_context(config, plugins, rules))\n"
        "print('libcst' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root,
                         check=True)
    return run.stdout.split()[-1] == "True"


GUARDED = {
    "flows/temporal_flow.py": """
        import asyncio
        import time
        from temporalio import workflow

        @workflow.defn
        class Flow:
            @workflow.run
            async def run(self) -> None:
                await asyncio.sleep(5)
                time.sleep(5)
    """,
    "flows/graph.py": """
        from langgraph.types import interrupt

        def review(state: dict) -> dict:
            answer = interrupt("approve?")
            try:
                amount = int(answer)
            except Exception:
                amount = 0
            return {"amount": amount}
    """,
}


def test_a_default_run_builds_no_tree_for_code_without_rt206s_pattern(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    for name, text in GUARDED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    every_rule = "BUILTIN_RULES"
    # A sleep RT303 reports (its calls table), an interrupt and a try/except in the same node, but no interrupt
    # inside a guarded try body: RT206 reads nothing of libcst.
    assert not _imports_libcst(tmp_path, every_rule)
    graph = tmp_path / "flows" / "graph.py"
    graph.write_text(graph.read_text().replace('    answer = interrupt("approve?")\n    try:\n',
                                               '    try:\n        answer = interrupt("approve?")\n'))
    assert _imports_libcst(tmp_path, every_rule)
    # No rule reading libcst's tree installed: never imported, whatever the files hold.
    assert not _imports_libcst(tmp_path, "tuple(r for r in BUILTIN_RULES if not r.uses_libcst)")


# RT206 on the forms of ``try`` it judges; "# swallowed" marks the calls it must report, and nothing else.
SWALLOWING_FORMS = """
    import contextlib
    from contextlib import suppress

    import langgraph.types as lt
    from langgraph import errors
    from langgraph.errors import GraphBubbleUp, GraphInterrupt, NodeInterrupt
    from langgraph.func import entrypoint, task
    from langgraph.types import interrupt
    from langgraph.types import interrupt as ask

    def node(state):
        try:
            a = lt.interrupt(1)
        except BaseException as error:
            if isinstance(error, KeyError):
                raise
        try:
            b = interrupt(2)  # swallowed
        except Exception:
            def later():
                raise
        try:
            c = ask(3)  # swallowed
        except errors.GraphInterrupt:
            c = None
        try:
            d = interrupt(4)
        except NodeInterrupt:
            d = None
        try:
            e = interrupt(5)
        except ValueError:
            e = None
        else:
            try:
                f = interrupt(6)  # swallowed
            except (KeyError, Exception):
                f = None
        try:
            pass
        except Exception:
            g = interrupt(7)
        finally:
            h = interrupt(8)
        try:
            try:
                i = interrupt(9)  # swallowed
            except GraphInterrupt:
                raise RuntimeError("no")
        except:
            i = None
        try:
            j = (lambda: interrupt(10))()
        except Exception:
            j = None

        with suppress(Exception):
            k = interrupt(14)  # swallowed
        with contextlib.suppress(KeyError), open("answers") as answers:
            m = interrupt(15)
        try:
            with suppress(KeyError):
                n = interrupt(16)  # swallowed
            with open("answers"):
                o = interrupt(17)  # swallowed
        except Exception:
            pass

    class Desk:
        def ask(self):
            try:
                return interrupt(11)  # swallowed
            except BaseException:
                return None

    @entrypoint()
    def flow(x):
        try:
            return interrupt(12)
        except GraphInterrupt:
            raise
        except Exception:
            return None

    try:
        interrupt(13)  # swallowed
    except Exception:
        pass
"""
# ``except*`` (Python 3.11 and later).
STAR_FORM = """
    @task
    def star(x):
        try:
            return interrupt(x)  # swallowed
        except* (ValueError, GraphBubbleUp):
            pass
"""


def test_rt206_reports_exactly_the_swallowed_interrupts(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    text = textwrap.dedent(SWALLOWING_FORMS) + (textwrap.dedent(STAR_FORM) if sys.version_info >= (3, 11) else "")
    (tmp_path / "graph.py").write_text(text, encoding="utf-8")
    config = Config(root=tmp_path)
    result = lint_paths([tmp_path], config, PLUGINS, use_cache=False, jobs=1,
                        context=build_context(config, PLUGINS, BUILTIN_RULES), cwd=tmp_path)
    marked = [number for number, line in enumerate(text.splitlines(), 1) if line.endswith("# swallowed")]
    assert len(marked) == (10 if sys.version_info >= (3, 11) else 9)
    assert sorted(d.line for d in result.diagnostics if d.rule == "RT206") == marked
    assert [d.rule for d in result.diagnostics if d.rule != "RT206"] == []
    if sys.version_info >= (3, 11):
        star = next(d for d in result.diagnostics if d.line == marked[-1])
        assert f"`except* (ValueError, GraphBubbleUp):` (line {marked[-1] + 1})" in star.message
    # interrupt(9): the inner handler raises, so the outer bare ``except:`` three lines below swallows it.
    nested = next(d for d in result.diagnostics if "`except:`" in d.message)
    assert (nested.line, f"(line {marked[3] + 3})" in nested.message) == (marked[3], True)
    suppressed = next(d for d in result.diagnostics if d.line == marked[4])
    assert f"`with suppress(Exception):` (line {marked[4] - 1})" in suppressed.message


def test_a_file_libcst_cannot_be_given_is_reported_not_passed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    deep = "x = " + "(" * 60 + "[" + "1, " * 800 + "]" + ")" * 60 + "[0]" * 200
    (tmp_path / "wf.py").write_text(textwrap.dedent("""
        from langgraph.types import interrupt

        def review(state: dict) -> dict:
            try:
                return {"answer": interrupt("approve?")}
            except Exception:
                return {}
    """) + deep + "\n", encoding="utf-8")
    config = Config(root=tmp_path)
    result = lint_paths([tmp_path], config, PLUGINS, use_cache=False, jobs=1,
                        context=build_context(config, PLUGINS, BUILTIN_RULES), cwd=tmp_path)
    assert [(d.path, d.rule, d.message) for d in result.diagnostics] == [
        ("wf.py", "RT002", "not checked by RT206: the statement at line 9 is too long and deeply nested for libcst's "
                           "parser, which these rules read")]
