"""``replaytest double-run --output-format github|sarif|junit``: check's CI formats through check's own
reporters, a ``double-run`` suite with one result per case at the line where the runs part, and check's exit
codes (0 alike, 1 a difference, 2 a case that could not run)."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SARIF_SCHEMA = HERE.parent / "lint" / "sarif" / "sarif-schema-2.1.0.json"  # the official schema, vendored
HAZARD_LINE = next(number for number, text in enumerate(
    (HERE / "dr_app" / "workflows.py").read_text().splitlines(), 1) if "sorted(CHECKS, key=hash)" in text) + 1


def double_run(tmp_path, output_format, *workflows):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"format": "replaytest-double-run-inputs", "cases": [
        {"workflow": name, "input": "order-1", "steps": {"lookup": {"level": "gold"}}} for name in workflows]}))
    args = [sys.executable, "-m", "replaytest", "double-run", "--inputs", str(inputs), "--output-format", output_format,
            "-w", "dr_app.workflows:control", "-w", "dr_app.workflows:by_string_hash"]
    done = subprocess.run(args, cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def test_github_annotates_the_line_where_the_runs_part(tmp_path):
    code, out, err = double_run(tmp_path, "github", "control", "by_string_hash")
    assert code == 1, err
    (annotation,) = [line for line in out.splitlines() if line.startswith("::error")]
    assert "workflows.py" in annotation and f"line={HAZARD_LINE}," in annotation
    assert "title=double-run command-mismatch" in annotation
    assert "a second process" in annotation


def test_sarif_has_a_rule_per_kind_of_difference(tmp_path):
    code, out, err = double_run(tmp_path, "sarif", "control", "by_string_hash")
    assert code == 1, err
    (run,) = json.loads(out)["runs"]
    failing = [result for result in run["results"] if result["ruleId"] == "double-run/command-mismatch"]
    (result,) = failing
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("workflows.py")
    assert location["region"]["startLine"] == HAZARD_LINE
    assert "double-run/command-mismatch" in {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    from jsonschema import Draft4Validator

    errors = list(Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).iter_errors(json.loads(out)))
    assert errors == [], errors[0].message if errors else ""


def test_junit_lists_every_case_and_no_lint_suite(tmp_path):
    code, out, err = double_run(tmp_path, "junit", "control", "by_string_hash")
    assert code == 1, err
    root = ET.fromstring(out)
    (suite,) = root.findall("testsuite")  # no lint ran: no lint suite claiming a pass
    assert suite.get("name") == "replaytest double-run"
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    # One inputs file holds both cases: each is named with its case, so no two test cases share a name.
    assert sorted(name.split(" ")[0] + name[name.index(" ("):] for name in cases) == [
        "by_string_hash (case 1)", "control (case 0)"]
    failing = [case for case in suite.findall("testcase") if case.find("failure") is not None]
    (failed,) = failing
    assert failed.get("name").startswith("by_string_hash") and failed.get("line") == str(HAZARD_LINE)
    assert failed.find("failure").get("type") == "double-run/command-mismatch"
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")


@pytest.mark.parametrize("output_format", ["github", "sarif", "junit"])
def test_alike_runs_exit_0(tmp_path, output_format):
    code, out, err = double_run(tmp_path, output_format, "control")
    assert code == 0, err
    assert "double-run/command-mismatch" not in out


def test_a_case_that_cannot_run_exits_2_and_is_reported(tmp_path):
    code, out, err = double_run(tmp_path, "junit", "no_such_workflow")
    assert code == 2, err
    failure = ET.fromstring(out).find("testsuite/testcase/failure")
    assert failure.get("type") == "double-run/error"
    assert "no current code for workflow type 'no_such_workflow'" in failure.get("message")
