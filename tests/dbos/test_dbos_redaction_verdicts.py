"""Redacted DBOS histories replay as the recorded ones do (``redaction_kit``): runs of the redaction desk
recorded for real, imported as stored (``--no-redact``), redacted by ``replaytest redact``, and both
replayed in fresh processes against the unchanged desk and changed ones. The runs hold an e-mail and an API
key redaction rewrites and a random token a later step takes as an argument; one run waits in recv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from redaction_kit import assert_same_cli_verdicts, redact, redacted_paths

from replaytest.cli import cli

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SOURCE = (HERE / "redaction_desk" / "app.py").read_text(encoding="utf-8")
SPEC = "redaction_desk.app:redaction_desk"


def _project(root: Path, old: str = "", new: str = "") -> Path:
    shutil.copytree(HERE / "redaction_desk", root / "redaction_desk", ignore=shutil.ignore_patterns("__pycache__"))
    assert not old or SOURCE.count(old) == 1
    (root / "redaction_desk" / "app.py").write_text(SOURCE.replace(old, new) if old else SOURCE, encoding="utf-8")
    return root


def test_redacted_dbos_histories_replay_as_the_recorded_ones(tmp_path: Path) -> None:
    recorder = _project(tmp_path / "recorder")
    effects = tmp_path / "effects.log"
    run = subprocess.run([sys.executable, str(HERE / "record_redaction_desk.py"), str(tmp_path / "system.sqlite3"), str(effects)],
                         cwd=recorder, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    histories = tmp_path / "histories"
    imported = CliRunner().invoke(cli, ["import", "dbos", "--database-url", f"sqlite:///{tmp_path / 'system.sqlite3'}",
                                        "--out", str(histories), "--no-redact"])
    assert imported.exit_code == 0, imported.output
    recorded = sorted(histories.glob("*.json"))
    assert [path.stem for path in recorded] == ["desk-done", "desk-waiting"], recorded
    assert all("sk-live-0123456789abcdefXYZ" in path.read_text() for path in recorded)
    redacted = redact(recorded, tmp_path / "clean" / "histories")
    assert all(paths for paths in redacted_paths(redacted).values()), redacted_paths(redacted)
    assert not any("sk-live-0123456789abcdefXYZ" in path.read_text() for path in redacted)
    env = {**os.environ, "REDACTION_DESK_EFFECTS": str(tmp_path / "replay-effects.log")}

    unchanged = assert_same_cli_verdicts(histories, redacted[0].parent, [SPEC], _project(tmp_path / "unchanged"), env)
    assert [verdict[:2] for verdict in unchanged.values()] == [("passed", "completed"), ("passed", "parked")], unchanged
    swapped = _project(tmp_path / "swapped", "    token = new_token()\n    profile = load_profile(customer)\n",
                       "    profile = load_profile(customer)\n    token = new_token()\n")
    changed = assert_same_cli_verdicts(histories, redacted[0].parent, [SPEC], swapped, env)
    assert [verdict[0] for verdict in changed.values()] == ["diverged", "diverged"], changed
    # The redacted contact passed on to a step: DBOS stores no step arguments, so both pass alike.
    shouted = _project(tmp_path / "shouted", 'open_case(token, profile["email"])', 'open_case(token, profile["email"].upper())')
    assert_same_cli_verdicts(histories, redacted[0].parent, [SPEC], shouted, env)
    assert not (tmp_path / "replay-effects.log").exists()  # replay ran no step body
