"""``replaytest double-run`` on Temporal workflow classes, driven by temporalio's own Replayer with no server:
ids deciding activity order, ``hash(str)`` under another PYTHONHASHSEED and a counter in a module the sandbox
passes through are found (the counter by temporalio's own nondeterminism error on the run's second task);
a deterministic control with activities in parallel, a timer and a patch passes; no activity runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

HERE = Path(__file__).parent


def double_run(tmp_path, workflow, steps=None):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [
        {"workflow": workflow, "engine": "temporal", "input": "order-1", "steps": steps or {}}]}))
    done = subprocess.run(
        [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format", "json",
         "-w", "dr_app.temporal_workflows"],
        cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert done.stdout.strip(), done.stderr
    (result,) = json.loads(done.stdout)["results"]
    return done.returncode, result


def test_deterministic_control_passes(tmp_path):
    code, result = double_run(tmp_path, "Control", {"lookup": {"level": "gold"}})
    assert code == 0, result
    assert result["status"] == "passed"
    # lookup, eight checks in parallel, the timer, the patch marker, the patched branch's activity: every
    # task ran (an activity that ran would have failed the workflow, a missing stub value its last step).
    assert result["events"] == 12
    assert result["notes"] == []


def test_hash_of_str_under_another_hash_seed_is_found(tmp_path):
    code, result = double_run(tmp_path, "ByStringHash")
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "args-mismatch"
    assert "a second process" in divergence["message"]
    assert divergence["source"]["path"].endswith("temporal_workflows.py")


def test_set_of_objects_hashed_by_id_is_found(tmp_path):
    code, result = double_run(tmp_path, "ByIdentity")
    assert code == 1
    assert result["divergence"]["kind"] == "args-mismatch"


def test_module_counter_outliving_a_run_is_found_by_the_engine(tmp_path):
    code, result = double_run(tmp_path, "ByCounter")
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert "Nondeterminism" in divergence["message"]
    assert "'check'" in divergence["message"] and "'lookup'" in divergence["message"]


def test_unknown_workflow_type_is_an_error(tmp_path):
    code, result = double_run(tmp_path, "NoSuchWorkflow")
    assert code == 2
    assert "no workflow class for Temporal workflow type 'NoSuchWorkflow'" in result["error"]
