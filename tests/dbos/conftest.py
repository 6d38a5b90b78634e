"""Records the shop application for real once per session (pickle and portable JSON system databases)
and imports its runs with ``replaytest import dbos``; the tests replay those histories."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record.py"
# The runs each import below selects; bill-1 and keep-note are imported by the tests about them.
IMPORTED_NAMES = ("place_order", "ship", "pack_parcel", "Reports.daily")


@dataclass(frozen=True)
class Recording:
    system_db: Path
    histories: Path
    effects: Path  # every step body that really ran appended a line here while recording


def record(directory: Path, portable: bool) -> Recording:
    directory.mkdir(parents=True, exist_ok=True)
    system_db, effects = directory / "system.sqlite3", directory / "effects.log"
    command = [sys.executable, str(RECORDER), str(system_db), str(directory / "app.sqlite3"), str(effects)]
    run = subprocess.run(command + (["--portable"] if portable else []), capture_output=True, text=True, timeout=180, cwd=directory)
    assert run.returncode == 0, run.stdout + run.stderr
    histories = directory / "histories"
    for name in IMPORTED_NAMES if not portable else ("place_order", "ship"):
        result = CliRunner().invoke(
            cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--name", name, "--out", str(histories)]
        )
        assert result.exit_code == 0, result.output
    return Recording(system_db, histories, effects)


@pytest.fixture(scope="session")
def pickled(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("dbos-pickle"), portable=False)


@pytest.fixture(scope="session")
def portable(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("dbos-portable"), portable=True)
