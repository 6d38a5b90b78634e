"""Recall of RT304 on state that outlives a run without being a module-level container: a synchronisation
primitive or queue held at module level (declared by annotation only and bound later with ``global``, or
built there) whose state a workflow changes, and a class attribute written by a classmethod workflow of a
class defined inside a function (a factory or a test function).

Each project is written for the test. Expected findings are marked ``# expect: RT304`` (the syntax of
``test_fixture_projects``, compared exactly by ``assert_marks``); every other line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from test_engine_resolution import assert_marks, write


def test_module_level_primitives_changed_by_a_workflow(tmp_path: Path) -> None:
    write(tmp_path, {
        "wf.py": """
            import asyncio
            import threading
            from temporalio import workflow

            started: asyncio.Semaphore
            finished = threading.Event()
            jobs = asyncio.Queue()
            label: str

            def set_up() -> None:
                global started
                started = asyncio.Semaphore(0)

            @workflow.defn
            class Signalling:
                def __init__(self) -> None:
                    self.ready = asyncio.Event()

                @workflow.run
                async def run(self, name: str) -> str:
                    started.release()  # expect: RT304
                    finished.set()  # expect: RT304
                    jobs.put_nowait(name)  # expect: RT304
                    self.ready.set()
                    local = asyncio.Semaphore(1)
                    local.release()
                    return label.strip()
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert diagnostics[0].message.startswith("started.release() writes module-level state"), diagnostics[0].message


def test_a_class_defined_in_a_function_outlives_the_runs(tmp_path: Path) -> None:
    write(tmp_path, {
        "wf.py": """
            from dbos import DBOS

            def make_counter():
                @DBOS.dbos_class()
                class Counter:
                    total = 0

                    @classmethod
                    @DBOS.workflow()
                    def bump(cls, n: int) -> int:
                        cls.total = n  # expect: RT304
                        return cls.total

                return Counter

            @DBOS.workflow()
            def tally(n: int) -> int:
                class Scratch:
                    seen = 0

                    @classmethod
                    def note(cls, k: int) -> int:
                        cls.seen = k
                        return cls.seen

                return Scratch.note(n)
        """,
    })
    assert_marks(tmp_path)
