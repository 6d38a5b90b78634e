"""Only regular files are read: a FIFO named ``*.py`` / ``*.json`` (reading it would block forever) and a
symlink to ``/dev/zero`` (reading it never ends) are reported, and the run goes on with the other files.
Each run is a subprocess with a timeout, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
APP = "fixtures.journal_app.agent:support_agent"
CLOCK_WORKFLOW = (
    "import time\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass Clock:\n"
    "    @workflow.run\n    async def run(self) -> float:\n        return time.time()\n"
)

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def test_lint_reports_a_fifo_and_a_device_symlink_and_checks_the_rest(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "wf.py").write_text(CLOCK_WORKFLOW)
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    run = _run("lint", "--no-cache", ".", cwd=tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "wf.py:9:16: RT101" in run.stdout
    assert "pipe.py:1:1: RT001 pipe.py is a FIFO, not a regular file; not read" in run.stdout
    assert "zero.py:1:1: RT001 zero.py is a character device, not a regular file; not read" in run.stdout
    # Explicitly named, too.
    run = _run("lint", "--no-cache", "pipe.py", "wf.py", cwd=tmp_path)
    assert run.returncode == 2 and "pipe.py is a FIFO" in run.stdout


def test_replay_reports_a_fifo_and_a_device_symlink_and_replays_the_rest(tmp_path: Path) -> None:
    histories = tmp_path / "histories"
    shutil.copytree(REPO / "fixtures/histories", histories)
    os.mkfifo(histories / "pipe.json")
    (histories / "zero.json").symlink_to("/dev/zero")
    run = _run("replay", str(histories), "--workflows", APP, cwd=REPO)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "replayed 5 histories: 3 passed, 0 diverged, 0 stale, 2 error" in run.stdout
    assert "is a FIFO, not a regular file" in run.stdout
    assert "is a character device, not a regular file" in run.stdout


def test_lint_text_output_escapes_control_characters_in_file_names(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "evil\x1b[2K\rFound 0 findings.py").write_text("def f(:\n")
    run = _run("lint", "--no-cache", ".", cwd=tmp_path)
    assert run.returncode == 2
    assert "\x1b" not in run.stdout and "\r" not in run.stdout
    assert "evil\\x1b[2K\\rFound 0 findings.py" in run.stdout
