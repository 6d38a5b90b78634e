"""Library logging and tracebacks during a replay (temporalio's "Failed activation" warning with its
traceback) go into the history's report, not onto stderr: real Temporal Replayer, diverging history."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replaytest.replay.capture import captured_output

TEMPORAL = Path(__file__).resolve().parents[1] / "temporal"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(TEMPORAL / "temporal_wf_hello.py", tmp_path / "hello_flows.py")
    (tmp_path / "histories").mkdir()
    shutil.copy(TEMPORAL / "histories" / "hello_timer_history.json", tmp_path / "histories")
    # The code raises where the history completed: temporalio logs the failed activation with a traceback.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["hello_flows:HelloRaisesBug"]\n'
    )
    return tmp_path


def _replay(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "replay", *args], cwd=project,
                          capture_output=True, text=True, timeout=180)


@pytest.mark.slow
def test_temporal_traceback_is_in_the_details_not_on_stderr(project: Path) -> None:
    run = _replay(project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "result-mismatch" in run.stdout
    assert run.stderr == ""
    assert "library output captured; --details shows them" in run.stdout
    assert "Traceback" not in run.stdout

    detailed = _replay(project, "--details")
    assert detailed.stderr == ""
    assert "WARNING temporalio.worker._workflow_instance: Failed activation on workflow Hello" in detailed.stdout
    assert "KeyError: 'key'" in detailed.stdout and "Traceback (most recent call last)" in detailed.stdout

    document = json.loads(_replay(project, "--format", "json").stdout)
    assert "Failed activation" in document["results"][0]["log"]


def test_check_keeps_stderr_clean_too(project: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "replaytest", "check", "--no-cache", "histories"], cwd=project,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 1 and "Failed activation" not in run.stderr, run.stderr


def test_capture_restores_the_handlers_and_stderr_it_set_aside() -> None:
    root = logging.getLogger()
    before, stderr = root.handlers[:], sys.stderr
    with captured_output() as captured:
        logging.getLogger("somelib").warning("disk %s", "full")
        print("raw write", file=sys.stderr)
    assert root.handlers == before and sys.stderr is stderr
    assert captured.text == "WARNING somelib: disk full\nraw write"
