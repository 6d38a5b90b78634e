"""``replaytest double-run`` on journal workflows: hazards lint cannot see are found (ids deciding step order,
``hash(str)`` under another PYTHONHASHSEED, a module counter, a helper's clock read), a deterministic control
passes with no step body run, and unusable input exits 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
WORKFLOWS = [f"dr_app.workflows:{name}" for name in
             ("control", "by_identity", "by_string_hash", "by_counter", "by_library_clock", "by_effect")]


def double_run(tmp_path, *cases, extra=()):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": list(cases)}))
    args = [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format", "json", *extra]
    for spec in WORKFLOWS:
        args += ["-w", spec]
    # A fixed hash seed here makes the second process's (one more) a known other one.
    done = subprocess.run(args, cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True)
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


def case(workflow):
    return {"workflow": workflow, "input": "order-1", "steps": {"lookup": {"level": "gold"}}}


def test_deterministic_control_passes_without_running_a_step_body(tmp_path):
    code, report, _ = double_run(tmp_path, case("control"))
    assert code == 0
    (result,) = report["results"]
    assert result["status"] == "passed"
    assert result["notes"] == []  # a step body that ran would have failed both runs (noted)


@pytest.mark.parametrize(("workflow", "kind", "side"), [
    ("by_counter", "command-mismatch", "the same run again in the same process"),
    ("by_string_hash", "command-mismatch", "a second process"),
    ("by_library_clock", "command-mismatch", "a second process"),
])
def test_hazard_lint_cannot_see_is_found(tmp_path, workflow, kind, side):
    code, report, _ = double_run(tmp_path, case(workflow))
    assert code == 1
    (result,) = report["results"]
    divergence = result["divergence"]
    assert divergence["kind"] == kind
    assert side in divergence["message"]
    assert divergence["source"]["path"].endswith("workflows.py")
    assert divergence["recorded"]["name"] != divergence["issued"]["name"]


def test_set_of_objects_hashed_by_id_is_found(tmp_path):
    code, report, _ = double_run(tmp_path, case("by_identity"))
    assert code == 1
    assert report["results"][0]["divergence"]["kind"] == "command-mismatch"


def test_text_report_names_both_sides_and_the_line(tmp_path):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [case("by_counter")]}))
    args = [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "-w", "dr_app.workflows:by_counter"]
    done = subprocess.run(args, cwd=HERE, capture_output=True, text=True)
    assert done.returncode == 1
    assert "recorded  step 'welcome'" in done.stdout
    assert "issued    step 'charge'" in done.stdout
    assert "dr_app/workflows.py:" in done.stdout


def test_unknown_workflow_is_an_error(tmp_path):
    code, report, _ = double_run(tmp_path, case("no_such_workflow"))
    assert code == 2
    assert "no current code for workflow type 'no_such_workflow'" in report["results"][0]["error"]


def test_a_module_named_alone_is_said_to_need_module_attr(tmp_path):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [case("control")]}))
    done = subprocess.run([sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--format", "json",
                           "-w", "dr_app.workflows"], cwd=HERE, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["results"][0]["error"]
    assert "'dr_app.workflows' names a module alone" in error and "module:attr" in error
    assert "give --workflows" not in error


def test_unsupported_engine_is_an_error(tmp_path):
    code, report, _ = double_run(tmp_path, {**case("control"), "engine": "restate"})
    assert code == 2
    assert "no double run for engine 'restate'" in report["results"][0]["error"]


def test_inputs_file_of_another_format_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"cases": []}))
    done = subprocess.run([sys.executable, "-m", "replaytest", "double-run", "--inputs", str(bad), "-w",
                           "dr_app.workflows:control"], cwd=HERE, capture_output=True, text=True)
    assert done.returncode == 2
    assert "not a double-run inputs file" in done.stderr


def test_recorded_histories_give_inputs_and_stub_values():
    fixtures = HERE.parent.parent / "fixtures"
    done = subprocess.run([sys.executable, "-m", "replaytest", "double-run", "histories", "--format", "json"],
                          cwd=fixtures, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    assert len(results) == 3
    assert {result["status"] for result in results} == {"passed"}
    assert all(result["notes"] == [] for result in results)  # no run failed under the stubs


def test_effect_made_by_orchestration_code_is_stopped_and_reported(tmp_path):
    code, report, _ = double_run(tmp_path, case("by_effect"))
    assert code == 1
    (result,) = report["results"]
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call"
    assert "call_service" in divergence["message"]
    assert divergence["source"]["path"].endswith("workflows.py")
    # Stopped before its body ran: the body's AssertionError would have failed the runs instead.
    assert any(note.startswith("runtime guard: stopped") for note in result["notes"])
