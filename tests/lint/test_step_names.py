"""RT105 beyond the rule's documented examples: a name made once per process (at import) counts, as does a
set element taken by ``pop()``/``next(iter(...))``; names from workflow input, a loop counter, a sorted set,
the engine's own deterministic UUID, and functions given by reference stay quiet. Marks as in
``test_engine_resolution`` (``# expect: RT105``), compared exactly."""

from __future__ import annotations

from pathlib import Path

from test_engine_resolution import assert_marks, write


def test_names_that_differ_between_runs_and_names_that_do_not(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/steps.py": """
            import os
            import uuid

            from dbos import DBOS

            RUN = uuid.uuid4().hex

            @DBOS.step(name=f"fetch-{RUN}")  # expect: RT105
            def fetch() -> int:
                return 1

            @DBOS.transaction(name="save-" + os.environ["HOSTNAME"])  # expect: RT105
            def save() -> None:
                return None

            @DBOS.step(name="fixed")
            def fixed() -> int:
                return 2
        """,
        "app/wf.py": """
            from datetime import timedelta

            from temporalio import workflow

            T = timedelta(seconds=5)

            @workflow.defn
            class Orders:
                @workflow.run
                async def run(self, region: str, kinds: list[str]) -> None:
                    await workflow.execute_activity(f"charge-{region}", start_to_close_timeout=T)
                    for index, kind in enumerate(kinds):
                        await workflow.execute_activity(f"step-{index}-{kind}", start_to_close_timeout=T)
                    await workflow.execute_activity(f"audit-{workflow.uuid4()}", start_to_close_timeout=T)
                    pending = {"card", "bank"}
                    for kind in sorted(pending):
                        await workflow.execute_activity(f"refund-{kind}", start_to_close_timeout=T)
                    await workflow.execute_activity(pending.pop(), start_to_close_timeout=T)  # expect: RT105, RT301
                    await workflow.execute_activity(next(iter(pending)), start_to_close_timeout=T)  # expect: RT105, RT301
                    await workflow.execute_child_workflow(f"Child{id(self)}", start_to_close_timeout=T)  # expect: RT105
                    await workflow.execute_activity(self.run, start_to_close_timeout=T)
        """,
    })
    diagnostics = assert_marks(tmp_path)
    diagnostics = [d for d in diagnostics if d.rule == "RT105"]
    assert [d.message.split(" names the ")[1].split(" with")[0] for d in diagnostics] == [
        "step", "step", "activity", "activity", "child workflow"]
    assert "(os.environ)" in diagnostics[1].message and "(a set's iteration order)" in diagnostics[2].message
