"""``--format sarif``: the SARIF 2.1.0 shape GitHub code scanning accepts for upload.

GitHub's documented requirements: ``version`` 2.1.0 and a ``$schema``; ``runs[].tool.driver`` with a
``name`` and ``rules`` (each an ``id`` with a ``shortDescription.text``); every result with a ``ruleId``
that the driver defines, ``message.text``, a ``level`` of error/warning/note, a location whose
``artifactLocation.uri`` is relative to the repository root, a ``region.startLine`` >= 1, and
``partialFingerprints`` so alerts are tracked across commits. That check is structural and written out
here; ``test_sarif_schema.py`` validates the same output against the official SARIF 2.1.0 JSON schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lintkit import CLOCK_WORKFLOW, run_replaytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPORAL_FIXTURE = REPO_ROOT / "fixtures" / "lint_projects" / "temporal"


def _sarif(project: Path, *paths: str, cwd: Path | None = None) -> tuple[dict[str, Any], dict[str, Any], int]:
    cwd = cwd or project
    sarif_run = run_replaytest("lint", "--format", "sarif", "--no-cache", *(paths or (".",)), cwd=cwd)
    json_run = run_replaytest("lint", "--format", "json", "--no-cache", *(paths or (".",)), cwd=cwd)
    assert "Traceback" not in sarif_run.stderr, sarif_run.describe()
    return sarif_run.json(), json_run.json(), sarif_run.returncode


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def assert_valid_for_code_scanning(log: dict[str, Any]) -> None:
    """The structural subset of SARIF 2.1.0 that GitHub code scanning validates on upload."""
    assert log.get("version") == "2.1.0"
    assert _is_text(log.get("$schema")) and "sarif" in log["$schema"].lower()
    assert isinstance(log.get("runs"), list) and log["runs"], "runs must be a non-empty list"
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert _is_text(driver.get("name"))
        rules = driver.get("rules", [])
        assert isinstance(rules, list)
        ids = [rule.get("id") for rule in rules]
        assert len(ids) == len(set(ids)), f"duplicate rule ids: {ids}"
        for rule in rules:
            assert _is_text(rule.get("id"))
            assert _is_text(rule.get("shortDescription", {}).get("text")), rule
            if "defaultConfiguration" in rule:
                assert rule["defaultConfiguration"].get("level", "warning") in {"error", "warning", "note", "none"}
            if "helpUri" in rule:
                assert rule["helpUri"].startswith(("http://", "https://")), rule["helpUri"]
        assert isinstance(run.get("results"), list)
        for result in run["results"]:
            assert result.get("ruleId") in ids, f"result rule {result.get('ruleId')} not in driver.rules"
            # GitHub accepts a result without ruleIndex, but replaytest always writes it: consumers that
            # read rules by index (and the SARIF viewer) must land on the result's own rule.
            index = result.get("ruleIndex")
            assert type(index) is int and 0 <= index < len(ids), f"ruleIndex missing or out of range: {result}"
            assert ids[index] == result.get("ruleId"), f"ruleIndex {index} is {ids[index]}, not {result.get('ruleId')}"
            assert _is_text(result.get("message", {}).get("text"))
            assert result.get("level", "warning") in {"error", "warning", "note"}
            locations = result.get("locations")
            assert isinstance(locations, list) and locations, result
            for location in locations:
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                assert _is_text(uri)
                assert not uri.startswith(("/", "file:")) and "://" not in uri, f"uri must be relative: {uri}"
                assert "\\" not in uri, f"uri must use forward slashes: {uri}"
                region = physical["region"]
                assert type(region["startLine"]) is int and region["startLine"] >= 1
                for key in ("startColumn", "endLine", "endColumn"):
                    if key in region:
                        assert type(region[key]) is int and region[key] >= 1, (key, region)
            for flow in result.get("codeFlows", []):
                for thread in flow["threadFlows"]:
                    assert thread["locations"], "a thread flow needs at least one location"
                    for step in thread["locations"]:
                        uri = step.get("location", {}).get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                        if uri is not None:
                            assert not uri.startswith(("/", "file:")) and "://" not in uri, f"code flow uri: {uri}"
            for related in result.get("relatedLocations", []):
                assert type(related.get("id")) is int and related["id"] >= 0, related
                uri = related["physicalLocation"]["artifactLocation"]["uri"]
                assert not uri.startswith(("/", "file:")) and "://" not in uri, f"related location uri: {uri}"
                assert related["physicalLocation"]["region"]["startLine"] >= 1, related
            fingerprints = result.get("partialFingerprints")
            assert isinstance(fingerprints, dict) and fingerprints, result
            assert all(_is_text(key) and _is_text(value) for key, value in fingerprints.items())


def _results(log: dict[str, Any]) -> list[dict[str, Any]]:
    return [result for run in log["runs"] for result in run["results"]]


def _located(result: dict[str, Any]) -> tuple[str, int, int]:
    physical = result["locations"][0]["physicalLocation"]
    return (physical["artifactLocation"]["uri"], physical["region"]["startLine"],
            physical["region"].get("startColumn", 0))


def test_fixture_project_sarif_is_valid_for_github_code_scanning() -> None:
    log, report, exit_code = _sarif(TEMPORAL_FIXTURE)
    assert exit_code == 1
    assert_valid_for_code_scanning(log)
    results = _results(log)
    assert len(results) == len(report["diagnostics"]) > 0
    # Same findings as the JSON report, in the same places, under the same rule ids; SARIF paths are
    # relative to the repository's top level, JSON ones to the working directory (the fixture project).
    in_repository = TEMPORAL_FIXTURE.resolve().relative_to(Path(__file__).resolve().parents[2]).as_posix()
    from_sarif = sorted((*_located(r), r["ruleId"]) for r in results)
    from_json = sorted((f"{in_repository}/{d['path']}", d["line"], d["column"], d["rule"]) for d in report["diagnostics"])
    assert from_sarif == from_json
    # Distinct findings must not share a fingerprint, or GitHub merges them into one alert.
    prints = [json.dumps(r["partialFingerprints"], sort_keys=True) for r in results]
    assert len(set(prints)) == len(prints)


def test_outside_a_repository_uris_are_relative_to_the_working_directory(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    log, _, _ = _sarif(project, project.name, cwd=project.parent)
    assert_valid_for_code_scanning(log)
    assert [_located(r)[0] for r in _results(log)] == [f"{project.name}/app/wf.py"]


def test_fingerprints_survive_unrelated_line_shifts(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    before, _, _ = _sarif(project)
    (project / "app" / "wf.py").write_text("# a new first line\n\n" + CLOCK_WORKFLOW, encoding="utf-8")
    after, _, _ = _sarif(project)
    [old], [new] = _results(before), _results(after)
    assert _located(new)[1] == _located(old)[1] + 2
    assert new["partialFingerprints"] == old["partialFingerprints"]


def test_clean_project_is_an_empty_valid_log(make_project) -> None:
    project = make_project({"app/notes.py": '"""Nothing to see."""\n'})
    log, _, exit_code = _sarif(project)
    assert exit_code == 0
    assert_valid_for_code_scanning(log)
    assert _results(log) == []


def test_validator_rejects_what_github_rejects() -> None:
    # Guard against a validator that accepts anything: each mutation below must be caught.
    good = {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {"name": "replaytest", "rules": [{"id": "RT1", "shortDescription": {"text": "x"}}]}},
            "results": [{
                "ruleId": "RT1", "ruleIndex": 0, "level": "error", "message": {"text": "m"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a/b.py"}, "region": {"startLine": 3}}}],
                "partialFingerprints": {"replaytest/v1": "abc"},
            }],
        }],
    }
    assert_valid_for_code_scanning(good)
    mutations = [
        lambda log: log.update(version="2.0.0"),
        lambda log: log["runs"][0]["results"][0].update(ruleId="RT2"),
        lambda log: log["runs"][0]["results"][0].update(level="fatal"),
        lambda log: log["runs"][0]["results"][0].pop("ruleIndex"),
        lambda log: log["runs"][0]["results"][0].update(ruleIndex=1),
        lambda log: log["runs"][0]["results"][0].update(ruleIndex=-1),
        lambda log: log["runs"][0]["results"][0].pop("partialFingerprints"),
        lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"].update(uri="/abs/b.py"),
        lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0),
        lambda log: log["runs"][0]["tool"]["driver"]["rules"][0].pop("shortDescription"),
    ]
    for mutate in mutations:
        broken = json.loads(json.dumps(good))
        mutate(broken)
        try:
            assert_valid_for_code_scanning(broken)
        except (AssertionError, KeyError):
            continue
        raise AssertionError(f"validator accepted an invalid log: {broken}")


def test_uris_are_percent_encoded_uri_references(make_project) -> None:
    # artifactLocation.uri is a URI reference (RFC 3986, as SARIF 2.1.0 requires): a space, a non-ASCII
    # letter or a percent sign in a file name must be percent-encoded, and decoding gives the path back.
    project = make_project({"my app/w\u00f6rk 100%.py": CLOCK_WORKFLOW})
    log, report, _ = _sarif(project)
    assert_valid_for_code_scanning(log)
    [uri] = [_located(r)[0] for r in _results(log)]
    [path] = [d["path"] for d in report["diagnostics"]]
    assert path == "my app/w\u00f6rk 100%.py"
    assert re.fullmatch(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})+", uri), f"not a URI reference: {uri!r}"
    assert unquote(uri) == path


MIXED_WORKFLOW = """\
import os
from datetime import datetime

from temporalio import workflow


@workflow.defn
class Mixed:
    @workflow.run
    async def run(self) -> str:
        return f"{datetime.now()} {os.environ['HOME']}"
"""


def test_each_result_names_its_rule_by_index(make_project) -> None:
    # Two findings of two rules (RT101 and RT204, stated here): each result's ruleIndex is the position
    # of its own rule in driver.rules.
    project = make_project({"app/wf.py": MIXED_WORKFLOW})
    log, _, _ = _sarif(project)
    [run] = log["runs"]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    pairs = sorted((result["ruleId"], result["ruleIndex"]) for result in run["results"])
    assert [rule for rule, _ in pairs] == ["RT101", "RT204"]
    assert pairs == [("RT101", rule_ids.index("RT101")), ("RT204", rule_ids.index("RT204"))]
