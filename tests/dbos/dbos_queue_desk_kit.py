"""A DBOS "desk" of queued reviews, shared by the queue tests: the app package (``queue_desk``,
``options_desk``) is recorded for real on SQLite by its recorder script, left PENDING in ``DBOS.recv``, imported,
then copied into a project with changed code, replayed in a fresh process (DBOS keeps one registry per process)
and resumed by DBOS itself on a copy of the system database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Recording:
    system_db: Path
    histories: Path


@dataclass(frozen=True)
class Desk:
    """One desk app: its package under tests/dbos, its recorder script, the environment variable its steps log
    their effects to, and its runs (workflow id -> the name ``import dbos --name`` takes)."""

    package: str
    recorder: Path
    effects_variable: str
    runs: Mapping[str, str]

    @property
    def app(self) -> str:
        return (HERE / self.package / "app.py").read_text()

    def record(self, tmp_path_factory: pytest.TempPathFactory, recorded_effects: Sequence[str]) -> Recording:
        """Record the runs for real (the steps' effects must be ``recorded_effects``, in any order) and import them."""
        directory = tmp_path_factory.mktemp(self.package.replace("_", "-"))
        shutil.copytree(HERE / self.package, directory / self.package, ignore=shutil.ignore_patterns("__pycache__"))
        system_db = directory / "system.sqlite3"
        run = subprocess.run(
            [sys.executable, str(self.recorder), str(system_db), str(directory / "effects.log")],
            capture_output=True, text=True, timeout=180, cwd=directory,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert sorted((directory / "effects.log").read_text().splitlines()) == sorted(recorded_effects)
        histories = directory / "histories"
        for name in self.runs.values():
            result = CliRunner().invoke(
                cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--name", name, "--out", str(histories)],
            )
            assert result.exit_code == 0, result.output
        return Recording(system_db, histories)

    def edited(self, *changes: tuple[str, str]) -> str:
        text = self.app
        for old, new in changes:
            assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {self.package}/app.py"
            text = text.replace(old, new)
        return text

    def project(self, root: Path, recording: Recording, app: str) -> Path:
        shutil.copytree(HERE / self.package, root / self.package, ignore=shutil.ignore_patterns("__pycache__"))
        (root / self.package / "app.py").write_text(app)
        (root / self.package / "replay.py").write_text(
            "from replaytest.plugins.dbos.replayer import DBOSReplayConfig\n\n"
            f'CONFIG = DBOSReplayConfig(modules=("{self.package}.app",))\n'
        )
        shutil.copytree(recording.histories, root / "histories")
        return root

    def replay(self, root: Path) -> tuple[int, dict[str, dict]]:
        """``replaytest replay`` in a fresh process: the exit code and each run's result by workflow id; no step
        body may run."""
        environment = {**os.environ, self.effects_variable: str(root / "replay-effects.log")}
        run = subprocess.run(
            [sys.executable, "-m", "replaytest", "replay", "--format", "json", "-w", f"{self.package}.replay:CONFIG",
             "histories"],
            capture_output=True, text=True, timeout=180, cwd=root, env=environment,
        )
        assert not (root / "replay-effects.log").exists(), "replay ran a step body"
        results = {result["workflow"]["id"]: result for result in json.loads(run.stdout)["results"]}
        assert sorted(results) == sorted(self.runs), run.stdout + run.stderr
        return run.returncode, results

    def resume(self, root: Path, recording: Recording) -> tuple[dict, list[str]]:
        """DBOS recovers the pending runs under the project's code on a copy of the system database (its queue
        workers running what is enqueued anew), and the editor's verdict is sent: how each run ended, and the
        step bodies that really ran."""
        system_db = root / "resumed.sqlite3"
        shutil.copy(recording.system_db, system_db)
        run = subprocess.run(
            [sys.executable, str(self.recorder), str(system_db), str(root / "resume-effects.log"), "--resume"],
            capture_output=True, text=True, timeout=180, cwd=root,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        effects = root / "resume-effects.log"
        return json.loads(run.stdout.splitlines()[-1]), sorted(effects.read_text().splitlines()) if effects.exists() else []


def line_of(app: str, text: str) -> int:
    numbers = [number for number, line in enumerate(app.splitlines(), 1) if text in line]
    assert len(numbers) == 1, f"{text!r} is on lines {numbers}"
    return numbers[0]
