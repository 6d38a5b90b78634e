"""RT204 reports reads of the process environment: setting or deleting an item of ``os.environ`` reads
nothing a replay could see differently (a later read of it is reported), so neither is a finding, in the
workflow or in a helper it calls. An augmented assignment reads the item first and stays one.

The project is written for the test. Expected findings are marked ``# expect: RT204`` (``via`` when reached
through a helper; the syntax of ``test_fixture_projects``, compared exactly by ``assert_marks``); every other
line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from test_engine_resolution import assert_marks, write


def test_writing_the_environment_is_not_reading_it(tmp_path: Path) -> None:
    write(tmp_path, {
        "wf.py": """
            import os
            from dbos import DBOS

            def export_token(token: str) -> None:
                os.environ["SERVICE_TOKEN"] = token
                del os.environ["OLD_TOKEN"]

            def region() -> str:
                return os.environ["REGION"]

            @DBOS.workflow()
            def deploy(token: str) -> str:
                export_token(token)
                os.environ["MODE"] = "deploy"
                os.environ["PATH"] += ":/opt/tool"  # expect: RT204
                return region()  # expect: RT204 via
        """,
    })
    assert_marks(tmp_path)
