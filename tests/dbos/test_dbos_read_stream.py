"""A DBOS workflow that reads another workflow's stream (``DBOS.read_stream`` inside a workflow, which DBOS
checkpoints as ``DBOS.readStream`` operations) and the one that wrote it, run for real on a SQLite system
database and imported: replay has no stand-in for either, so each history is an error naming the DBOS API
the workflow called (exit 2), never a pass."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_dispatch_desk.py"
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("dispatch_desk.app",))
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("dispatch-desk")
    system_db = directory / "system.sqlite3"
    run = subprocess.run([sys.executable, str(RECORDER), str(system_db), str(directory / "effects.log")],
                         capture_output=True, text=True, timeout=180, cwd=directory)
    assert run.returncode == 0, run.stdout + run.stderr
    imported = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out",
         str(directory / "histories")], capture_output=True, text=True, timeout=120,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    shutil.copytree(HERE / "dispatch_desk", directory / "dispatch_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (directory / "desk_replay.py").write_text(REPLAY_CONFIG)
    (directory / "pyproject.toml").write_text("[tool.replaytest.replay]\n")
    return directory


def test_the_reads_are_recorded_as_dbos_checkpoints_them(project: Path) -> None:
    follow = json.loads((project / "histories" / "follow-1.json").read_text())
    assert [(event["name"], event["result"]) for event in follow["events"]] == [
        ("DBOS.readStream", "depot"), ("DBOS.readStream", "bridge"), ("DBOS.readStream", "door"),
        ("DBOS.readStream", "__DBOS_STREAM_CLOSED__"),
    ]


def test_reading_and_writing_a_stream_are_refused_per_history_naming_the_api(project: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "replaytest", "replay", "histories", "-w", "desk_replay:CONFIG"],
                          cwd=project, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "histories/follow-1.json: follow id follow-1: error" in done.stdout
    assert "cannot replay: the workflow calls DBOS.read_stream, which replay has no stand-in for" in done.stdout
    assert "histories/narrate-1.json: narrate id narrate-1: error" in done.stdout
    assert "cannot replay: the workflow calls DBOS.write_stream, which replay has no stand-in for" in done.stdout
    assert "replayed 2 histories: 0 passed, 0 diverged, 0 stale, 2 error" in done.stdout
