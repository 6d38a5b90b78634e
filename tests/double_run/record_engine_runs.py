"""Records runs on the real engines with the kits their own test folders use, and imports them into
neutral histories, for the double run's cases from recorded histories. One engine per process (DBOS and
LangGraph are not imported into one process in this suite):

``python record_engine_runs.py dbos|langgraph|aws_durable FOLDER`` leaves the histories in FOLDER/histories.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def record_dbos(folder: Path) -> None:
    sys.path.insert(0, str(TESTS / "dbos"))
    from dbos_kit import record

    record(folder, portable=False)  # the shop's runs for real on SQLite, then `replaytest import dbos`


def record_langgraph(folder: Path) -> None:
    sys.path.insert(0, str(TESTS / "langgraph"))
    import conftest as langgraph_kit
    from lg_apps import tasks

    tasks.EFFECTS = folder / "effects.log"
    database = folder / "checkpoints.sqlite"
    langgraph_kit.record_order_runs(database)  # thread "approved" resumed and completed, "waiting" parked
    code, output = langgraph_kit.import_histories(database, folder / "histories", "--workflows", langgraph_kit.AGENT_SPEC)
    assert code == 0, output


def record_aws_durable(folder: Path) -> None:
    sys.path.insert(0, str(TESTS / "aws_durable"))
    from aws_kit import ROOT, record_orders

    recording = record_orders(folder)  # the testing SDK's local runner: the real SDK, offline
    files = [str(path) for path in recording.files.values()]
    done = subprocess.run([sys.executable, "-m", "replaytest", "import", "aws-durable", *files, "--out",
                           str(folder / "histories")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


if __name__ == "__main__":
    engine, target = sys.argv[1], Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    {"dbos": record_dbos, "langgraph": record_langgraph, "aws_durable": record_aws_durable}[engine](target)
