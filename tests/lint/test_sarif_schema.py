"""``--format sarif`` validated against the official SARIF 2.1.0 JSON schema (OASIS, vendored unmodified in
``tests/lint/sarif/``, source and terms in its README) with ``jsonschema``: a log of findings that carry fixes
and helper traces (code flows with the helper's file, the helper's hazard line as a related location), the log of a clean run (a run with no results), and a
guard that the validator refuses what the schema forbids. ``test_sarif.py`` checks what GitHub code scanning
needs on top of the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator
from lintkit import CLOCK_WORKFLOW, run_replaytest

SCHEMA_FILE = Path(__file__).with_name("sarif") / "sarif-schema-2.1.0.json"
TEMPORAL_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lint_projects" / "temporal"

HELPER = '''\
"""A helper the workflow calls: its clock read is reported at the call site, with the helper in the trace."""
import time


def stamp() -> float:
    return time.time()
'''
CALLS_HELPER = '''\
"""A workflow that reads the clock through a helper of the project."""
from temporalio import workflow

from app.util import stamp


@workflow.defn
class Stamped:
    @workflow.run
    async def run(self) -> float:
        return stamp()
'''


@pytest.fixture(scope="module")
def validator() -> Draft4Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    Draft4Validator.check_schema(schema)  # the schema's own draft (draft-04), so every keyword is understood
    return Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)


def _errors(validator: Draft4Validator, log: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(log)]


def _lint(project: Path, output_format: str) -> Any:
    run = run_replaytest("lint", "--format", output_format, "--no-cache", ".", cwd=project)
    assert "Traceback" not in run.stderr, run.describe()
    return run


def test_findings_with_fixes_and_helper_traces_are_valid_sarif(validator: Draft4Validator) -> None:
    report = _lint(TEMPORAL_FIXTURE, "json").json()
    # The log must hold what is being validated: fixable findings and findings reached through a helper.
    assert any(d["fix"] for d in report["diagnostics"]), "no fixable finding in the fixture"
    assert any(d["trace"] for d in report["diagnostics"]), "no finding with a trace in the fixture"
    log = _lint(TEMPORAL_FIXTURE, "sarif").json()
    assert _errors(validator, log) == []
    assert len(log["runs"][0]["results"]) == len(report["diagnostics"])
    assert any("codeFlows" in result for result in log["runs"][0]["results"])


def test_a_finding_in_a_helper_of_another_file_is_valid_sarif(validator: Draft4Validator, make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/util.py": HELPER, "app/wf.py": CALLS_HELPER})
    log = _lint(project, "sarif").json()
    assert _errors(validator, log) == []
    [result] = log["runs"][0]["results"]
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    helper_files = [step["location"]["physicalLocation"]["artifactLocation"]["uri"] for step in steps[1:]
                    if "physicalLocation" in step["location"]]
    assert any(uri.endswith("app/util.py") for uri in helper_files), steps
    # The hazard line behind the call ("also at"), as related locations the schema accepts.
    related = [location["physicalLocation"]["artifactLocation"]["uri"] for location in result["relatedLocations"]]
    assert any(uri.endswith("app/util.py") for uri in related), result["relatedLocations"]


def test_fixable_findings_of_a_project_are_valid_sarif(validator: Draft4Validator, make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    [diagnostic] = _lint(project, "json").json()["diagnostics"]
    assert diagnostic["fix"] is not None
    assert _errors(validator, _lint(project, "sarif").json()) == []


def test_a_clean_run_is_a_valid_log_with_an_empty_run(validator: Draft4Validator, make_project) -> None:
    project = make_project({"app/notes.py": '"""Nothing to see."""\n'})
    run = _lint(project, "sarif")
    assert run.returncode == 0, run.describe()
    log = run.json()
    assert _errors(validator, log) == []
    assert [len(each["results"]) for each in log["runs"]] == [0]


def test_the_schema_refuses_what_sarif_forbids(validator: Draft4Validator, make_project) -> None:
    # Guard against a validation that accepts anything: each change below breaks the schema, not a style.
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    good = _lint(project, "sarif").json()
    assert _errors(validator, good) == []
    mutations = {
        "version": lambda log: log.update(version="2.0.0"),
        "level": lambda log: log["runs"][0]["results"][0].update(level="fatal"),
        "startLine": lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
        .update(startLine=0),
        "unknown result property": lambda log: log["runs"][0]["results"][0].update(severity="high"),
        "message without text": lambda log: log["runs"][0]["results"][0].update(message={}),
        "no runs": lambda log: log.pop("runs"),
        "driver without name": lambda log: log["runs"][0]["tool"]["driver"].pop("name"),
    }
    for name, mutate in mutations.items():
        broken = json.loads(json.dumps(good))
        mutate(broken)
        assert _errors(validator, broken), f"the schema accepted a log with a broken {name}"
