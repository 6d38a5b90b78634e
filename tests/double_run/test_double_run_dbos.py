"""``replaytest double-run`` on DBOS workflows, run through DBOS's own wrappers with the replay stand-in for
its system database: ids deciding step order, ``hash(str)`` under another PYTHONHASHSEED and a module counter
are found; a deterministic control with a sleep and a patch passes; no step body runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

HERE = Path(__file__).parent


def double_run(tmp_path, workflow):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [
        {"workflow": workflow, "engine": "dbos", "input": "order-1", "steps": {"lookup": {"level": "gold"}}}]}))
    done = subprocess.run(
        [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format", "json",
         "-w", "dr_app.dbos_workflows:control"],
        cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert done.stdout.strip(), done.stderr
    (result,) = json.loads(done.stdout)["results"]
    return done.returncode, result


def test_deterministic_control_passes(tmp_path):
    code, result = double_run(tmp_path, "dr_control")
    assert code == 0, result
    assert result["status"] == "passed"
    # lookup, eight checks, the sleep, the patch marker and the patched branch's step: a step body that ran
    # would have failed the workflow.
    assert result["events"] == 12
    assert result["notes"] == []


@pytest.mark.parametrize(("workflow", "side"), [
    ("dr_by_counter", "the same run again in the same process"),
    ("dr_by_string_hash", "a second process"),
    ("dr_by_identity", ""),
])
def test_hazard_lint_cannot_see_is_found(tmp_path, workflow, side):
    code, result = double_run(tmp_path, workflow)
    assert code == 1
    divergence = result["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert side in divergence["message"]
    assert divergence["source"]["path"].endswith("dbos_workflows.py")
