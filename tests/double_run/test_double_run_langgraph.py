"""``replaytest double-run`` on LangGraph ``@entrypoint``s, task calls answered through LangGraph's own call
hook: ids deciding task order, ``hash(str)`` under another PYTHONHASHSEED and a module counter are found; a
deterministic control with tasks in parallel and an interrupt passes (parked at the interrupt, as a new thread);
no task body runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

HERE = Path(__file__).parent


def double_run(tmp_path, workflow):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [
        {"workflow": workflow, "engine": "langgraph", "input": "order-1", "steps": {"lookup": {"level": "gold"}}}]}))
    done = subprocess.run(
        [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format", "json",
         "-w", "dr_app.langgraph_workflows"],
        cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert done.stdout.strip(), done.stderr
    (result,) = json.loads(done.stdout)["results"]
    return done.returncode, result


def test_deterministic_control_passes(tmp_path):
    code, result = double_run(tmp_path, "control")
    assert code == 0, result
    assert result["status"] == "passed"
    assert result["events"] == 9  # lookup and eight checks, then the interrupt (a task body that ran would raise)
    assert result["notes"] == []


@pytest.mark.parametrize(("workflow", "kind", "side"), [
    ("by_counter", "command-mismatch", "the same run again in the same process"),
    ("by_string_hash", "args-mismatch", "a second process"),
    ("by_identity", "args-mismatch", ""),
])
def test_hazard_lint_cannot_see_is_found(tmp_path, workflow, kind, side):
    code, result = double_run(tmp_path, workflow)
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == kind
    assert side in divergence["message"]
    assert divergence["source"]["path"].endswith("langgraph_workflows.py")
