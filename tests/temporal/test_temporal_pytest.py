"""Temporal histories replayed through the pytest plugin (``replay_paths`` / ``replay_workflows``) in
a separate pytest run, without a server: the recorded histories of this folder are copied into a
temporary project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _project(tmp_path: Path, histories: Path, workflows: str, *names: str) -> Path:
    project = tmp_path / "project"
    (project / "histories").mkdir(parents=True)
    for name in names:
        shutil.copy(histories / name, project / "histories" / name)
    (project / "pytest.ini").write_text(
        f"[pytest]\nreplay_paths = histories\nreplay_workflows = {workflows}\n", encoding="utf-8"
    )
    return project


def _pytest(project: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=project, capture_output=True, text=True, timeout=120, env=env,
    )


@pytest.mark.slow
def test_current_code_passes_and_a_changed_one_fails_with_the_report(tmp_path, histories):
    names = ("hello_timer_history.json", "patched_v2_history.json")
    project = _project(tmp_path, histories, "temporal_wf_hello:Hello\n    temporal_wf_patched:PatchedV2", *names)
    passing = _pytest(project)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "2 passed" in passing.stdout

    (project / "pytest.ini").write_text(
        "[pytest]\nreplay_paths = histories\n"
        "replay_workflows = temporal_wf_hello:HelloRenamedSecond\n    temporal_wf_patched:PatchRemovedTooEarly\n",
        encoding="utf-8",
    )
    failing = _pytest(project)
    assert failing.returncode == 1
    assert "2 failed" in failing.stdout
    assert "command-mismatch at event #16" in failing.stdout
    assert "history event 16 scheduled activity 'say', the code now schedules activity 'shout'" in failing.stdout
    assert "patch-mismatch at event #5" in failing.stdout
    # The patch call is gone; the report names the timer the code now starts in the marker's place.
    assert "the code starts a timer at temporal_wf_patched.py:58 in its place" in failing.stdout


@pytest.mark.slow
def test_history_of_a_type_without_current_code_is_reported_stale(tmp_path, histories):
    project = _project(tmp_path, histories, "temporal_wf_hello:Hello", "test_replayer_complete_history.json")
    outcome = _pytest(project)
    assert outcome.returncode == 1
    assert "stale" in outcome.stdout
    assert "SayHelloWorkflow" in outcome.stdout
