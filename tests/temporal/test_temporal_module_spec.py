"""``--workflows`` naming a module without ``:attribute``: Temporal replay takes every workflow class in it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_a_module_name_replays_against_the_workflow_classes_in_it() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "histories/test_replayer_complete_history.json", "--workflows", "temporal_wf_sayhello"],
        cwd=HERE, capture_output=True, text=True, timeout=180,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "SayHelloWorkflow: passed" in output and "1 passed, 0 diverged, 0 stale, 0 error" in output
