"""Hazards a helper reaches only under a condition on its own parameters (``lint.guards``).

``if not force: return base`` before ``uuid.uuid4()``, ``if force:`` around it, ``force and x()``, ``x() if force
else y``: a call that omits ``force`` (default a falsy literal) or passes a falsy literal does not reach the hazard;
one that passes its own parameter on carries the condition to its caller (chains of helpers); any other argument
keeps the finding. Each project is written for the test; findings are marked ``# expect:`` (``test_fixture_projects``)
and every other line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_engine_resolution import assert_marks, write

KEYS = """
    import uuid

    def dedup_key(base: str, *, force: bool = False) -> str:
        if not force:
            return base
        return f"{base}:force:{uuid.uuid4()}"

    def doc_key(kind: str, number: int, *, force=False) -> str:
        return dedup_key(f"doc:{kind}:{number}", force=force)

    def stamped(name, stamp=None):
        if stamp:
            return f"{name}-{uuid.uuid4()}"
        return name

    def tagged(name: str, fresh: bool = False) -> str:
        return fresh and str(uuid.uuid4()) or name

    def labelled(name: str, fresh: bool = False) -> str:
        return str(uuid.uuid4()) if fresh else name
"""


def _workflow(calls: str) -> str:
    body = "\n".join(f"            {line}" for line in calls.strip().splitlines())
    return f"""
    from temporalio import workflow
    from app.keys import dedup_key, doc_key, labelled, stamped, tagged

    @workflow.defn
    class Keys:
        @workflow.run
        async def run(self, number: int, force: bool) -> list:
            keys = []
{body}
            return keys
    """


@pytest.mark.parametrize("calls", [
    pytest.param('keys.append(dedup_key("a"))', id="argument-left-out-default-false"),
    pytest.param('keys.append(dedup_key("a", force=False))', id="falsy-literal"),
    pytest.param('keys.append(doc_key("doc", number))', id="chain-forwarded-and-left-out"),
    pytest.param('keys.append(doc_key("doc", number, force=0))', id="chain-forwarded-falsy-literal"),
    pytest.param('keys.append(stamped("a"))\nkeys.append(stamped("b", None))', id="if-parameter-default-none"),
    pytest.param('keys.append(tagged("a"))\nkeys.append(tagged("b", False))', id="and-operand"),
    pytest.param('keys.append(labelled("a", fresh=False))', id="conditional-expression"),
])
def test_a_call_that_cannot_satisfy_the_guard_does_not_reach_the_hazard(tmp_path: Path, calls: str) -> None:
    write(tmp_path, {"app/__init__.py": "", "app/keys.py": KEYS, "app/flows.py": _workflow(calls)})
    assert_marks(tmp_path)


@pytest.mark.parametrize("calls", [
    pytest.param('keys.append(dedup_key("a", force=True))  # expect: RT103 via', id="truthy-literal"),
    pytest.param('keys.append(dedup_key("a", force=force))  # expect: RT103 via', id="workflow-parameter-unknown"),
    pytest.param('keys.append(doc_key("doc", number, force=True))  # expect: RT103 via', id="chain-truthy-literal"),
    pytest.param('keys.append(doc_key("doc", number, force=force))  # expect: RT103 via', id="chain-unknown"),
    pytest.param('keys.append(stamped("a", number))  # expect: RT103 via', id="positional-unknown"),
    pytest.param('keys.append(stamped("a", *[number]))  # expect: RT103 via', id="unpacked-arguments"),
    pytest.param('keys.append(tagged("a", True))  # expect: RT103 via', id="and-operand-truthy"),
    pytest.param('keys.append(labelled("a", fresh=True))  # expect: RT103 via', id="conditional-expression-truthy"),
])
def test_a_call_that_may_satisfy_the_guard_keeps_the_finding(tmp_path: Path, calls: str) -> None:
    write(tmp_path, {"app/__init__.py": "", "app/keys.py": KEYS, "app/flows.py": _workflow(calls)})
    assert_marks(tmp_path)


def test_a_guard_on_a_parameter_the_helper_rebinds_is_not_trusted(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/keys.py": """
            import os
            import uuid

            def run_key(base: str, force: bool = False) -> str:
                force = force or bool(os.environ.get("FORCE_RERUN"))
                if force:
                    return f"{base}-{uuid.uuid4()}"
                return base
        """,
        "app/flows.py": """
            from temporalio import workflow
            from app.keys import run_key

            @workflow.defn
            class Keys:
                @workflow.run
                async def run(self) -> str:
                    return run_key("a")  # expect: RT103 via, RT204 via
        """,
    })
    assert_marks(tmp_path)


def test_a_falsy_default_guards_only_its_own_branch_and_a_second_unguarded_path_is_reported(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/clock.py": """
            import time

            def now() -> float:
                return time.time()

            def timed(name: str, dry_run: bool = True) -> dict:
                if dry_run:
                    return {"name": name}
                return {"name": name, "at": now()}

            def stamp() -> float:
                return time.monotonic()

            def both(name: str, timed_too: bool = False) -> dict:
                first = stamp() if timed_too else 0.0
                return {"name": name, "first": first, "second": stamp()}
        """,
        "app/flows.py": """
            from temporalio import workflow
            from app.clock import both, timed

            @workflow.defn
            class Clocks:
                @workflow.run
                async def run(self) -> list:
                    quiet = timed("a")
                    loud = timed("b", dry_run=False)  # expect: RT101 via
                    merged = both("c")  # expect: RT101 via
                    return [quiet, loud, merged]
        """,
    })
    assert_marks(tmp_path)


def test_methods_count_positions_after_self_and_a_dbos_workflow_is_followed_alike(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/ids.py": """
            import random

            class Ids:
                def pick(self, name: str, shuffle: bool = False) -> str:
                    if not shuffle:
                        return name
                    return f"{name}-{random.randint(0, 9)}"
        """,
        "app/flows.py": """
            from dbos import DBOS
            from app.ids import Ids

            IDS = Ids()

            @DBOS.workflow()
            def pick_names(count: int) -> list:
                quiet = [IDS.pick("a"), IDS.pick("b", False)]
                loud = IDS.pick("c", True)  # expect: RT102 via
                return [*quiet, loud]
        """,
    })
    assert_marks(tmp_path)
