"""Precision and recall classes found by linting real public durable-workflow code (issue "lint you can
trust"), each pinned on a small project written for the test, plus the whole-program walk's order
independence.

Expected findings are marked on their lines with ``# <- RULE`` (``via`` when reached through a helper);
every other line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_engine_resolution import assert_marks, lint, write

from replaytest.config import Config
from replaytest.lint.engine import build_context
from replaytest.lint.model import CallSite, Effect, FunctionSummary, ModuleSummary, Span
from replaytest.lint.resolve import Program
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
TEMPORAL = next(profile for profile in PROFILES if profile.name == "temporal")


# --- the whole-program walk does not depend on the order entry points are resolved in -------------


def _cycle_program(tmp_path: Path) -> Program:
    """``a() -> b() -> a()`` with a clock read in ``a`` (summaries built by hand, no parse)."""
    span = Span(1, 1, 1, 2)
    clock = Effect("RT101", "clock", "time.time()", "time.time", span)
    module = ModuleSummary(
        module="app.helpers",
        path="app/helpers.py",
        functions={
            "a": FunctionSummary("a", effects=(clock,), calls=(CallSite("app.helpers.b", span, "b()"),)),
            "b": FunctionSummary("b", calls=(CallSite("app.helpers.a", span, "a()"),)),
        },
    )
    config = Config(root=tmp_path)
    program = Program(build_context(config, PROFILES), lambda name: None)
    program.add(module)
    return program


@pytest.mark.parametrize("first", ["a", "b"])
def test_cycle_results_do_not_depend_on_which_entry_is_resolved_first(tmp_path: Path, first: str) -> None:
    program = _cycle_program(tmp_path)
    span = Span(1, 1, 1, 2)
    second = "b" if first == "a" else "a"
    reached = {}
    for name in (first, second):
        found, _ = program.call_effects(CallSite(f"app.helpers.{name}", span, f"{name}()"), TEMPORAL)
        reached[name] = [(item.effect.qualname, item.chain) for item in found]
    assert reached["a"] == [("time.time", ("app.helpers.a", "time.time"))]
    assert reached["b"] == [("time.time", ("app.helpers.b", "app.helpers.a", "time.time"))]


@pytest.mark.parametrize("order", ["a_first", "b_first"])
def test_workflows_calling_into_a_cycle_are_reported_whatever_the_file_order(tmp_path: Path, order: str) -> None:
    via_a = """
        from temporalio import workflow
        from app.helpers import a

        @workflow.defn
        class ViaA:
            @workflow.run
            async def run(self) -> None:
                a()  # <- RT101 via
    """
    via_b = via_a.replace("import a", "import b").replace("ViaA", "ViaB").replace("  a()", "  b()")
    # Files are resolved in path order: the first file's workflow walks the cycle first.
    first, second = ("w1.py", "w2.py") if order == "a_first" else ("w2.py", "w1.py")
    write(tmp_path, {
        "app/__init__.py": "",
        "app/helpers.py": """
            import time

            def a(n=3):
                if n:
                    b(n - 1)
                return time.time()

            def b(n):
                return a(n)
        """,
        f"app/{first}": via_a,
        f"app/{second}": via_b,
    })
    assert_marks(tmp_path)


def test_a_dense_cycle_is_walked_in_reasonable_time(tmp_path: Path) -> None:
    """Every function of a 30-function cycle calls every other: partial results are reused within the walk."""
    span = Span(1, 1, 1, 2)
    names = [f"f{i}" for i in range(30)]
    clock = Effect("RT101", "clock", "time.time()", "time.time", span)
    functions = {
        name: FunctionSummary(
            name, effects=(clock,) if name == "f29" else (),
            calls=tuple(CallSite(f"app.m.{other}", span, f"{other}()") for other in names if other != name),
        )
        for name in names
    }
    program = Program(build_context(Config(root=tmp_path), PROFILES), lambda name: None)
    program.add(ModuleSummary(module="app.m", path="app/m.py", functions=functions))
    for name in names:
        found, _ = program.call_effects(CallSite(f"app.m.{name}", span, f"{name}()"), TEMPORAL)
        assert [item.effect.qualname for item in found] == ["time.time"], name
