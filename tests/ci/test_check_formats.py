"""``replaytest check --output-format github|sarif|junit``: lint findings and replay divergences in one CI
report, a divergence placed at the source line that issued the diverging command, and paths relative to
the git top level (not the working directory) so a job with a ``working-directory`` maps to files."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
AGENT = FIXTURES / "journal_app" / "agent.py"
OLD_RELEASE = FIXTURES / "ci_histories" / "support_agent-previous-release.json"


def _code_scanning_validator():  # the lint tests' structural check of what GitHub accepts on upload
    lint_tests = REPO / "tests" / "lint"
    sys.path.insert(0, str(lint_tests))
    try:
        spec = importlib.util.spec_from_file_location("lint_sarif_checks", lint_tests / "test_sarif.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(lint_tests))
    return module.assert_valid_for_code_scanning


ANNOTATION = re.compile(r"^::(error|warning) file=([^,]+),line=(\d+)(?:,[^:]*)?,title=([^:]+)::(.*)$")


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--no-cache", *args],
        cwd=cwd, capture_output=True, text=True, timeout=180,
    )


def _line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_bundled_example_github_annotations_hold_a_finding_and_a_divergence() -> None:
    run = _check(FIXTURES, "--output-format", "github", "example_app")
    assert run.returncode == 1, run.stdout + run.stderr
    annotations = [ANNOTATION.match(line) for line in run.stdout.splitlines()]
    assert all(annotations), run.stdout
    found = {(m.group(2), int(m.group(3)), m.group(4)) for m in annotations if m}
    workflows = FIXTURES / "example_app" / "support_agent" / "workflows.py"
    assert ("fixtures/example_app/support_agent/workflows.py", _line_of(workflows, "datetime.now()"), "RT101") in found
    # The previous release's history diverges at the line that now issues "write reply".
    assert ("fixtures/journal_app/agent.py", _line_of(AGENT, 'ctx.model("write reply"'), "replay command-mismatch") in found
    divergence = next(m for m in annotations if m and m.group(4) == "replay command-mismatch")
    assert "draft reply" in divergence.group(5) and "%0A" in divergence.group(5)  # the report, one line


def _service_repo(tmp_path: Path, git: bool) -> Path:
    """A repository whose Python project sits in ``service/``: the journal agent with a clock read added
    outside the replayed path, its histories and the previous release's one."""
    service = tmp_path / "repo" / "service"
    service.mkdir(parents=True)
    source = AGENT.read_text()
    source = source.replace("from typing import Any\n", "import time\nfrom typing import Any\n")
    source += '\n\n@workflow(name="stamp", version="1")\ndef stamp(ctx: Any) -> float:\n    return time.time()\n'
    (service / "agent.py").write_text(source)
    shutil.copytree(FIXTURES / "histories", service / "histories")
    shutil.copy(OLD_RELEASE, service / "histories" / OLD_RELEASE.name)
    (service / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n'
    )
    if git:
        subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    return service


def test_sarif_from_a_subdirectory_maps_to_repository_root_paths(tmp_path: Path) -> None:
    service = _service_repo(tmp_path, git=True)
    run = _check(service, "--output-format", "sarif", ".")
    assert run.returncode == 1, run.stderr
    log = json.loads(run.stdout)
    _code_scanning_validator()(log)
    results = log["runs"][0]["results"]
    uris = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in results}
    assert ("RT101", "service/agent.py") in uris
    assert ("replay/command-mismatch", "service/agent.py") in uris
    divergence = next(r for r in results if r["ruleId"] == "replay/command-mismatch")
    assert divergence["locations"][0]["physicalLocation"]["region"]["startLine"] == _line_of(service / "agent.py", 'ctx.model("write reply"')
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[divergence["ruleIndex"]]["id"] == "replay/command-mismatch"
    assert "git repository" in log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["description"]["text"]
    # Same for the annotations: the runner resolves file= from the repository root.
    github = _check(service, "--format", "github", ".")
    assert "file=service/agent.py,line=" in github.stdout


def test_outside_a_repository_paths_stay_relative_to_the_working_directory(tmp_path: Path) -> None:
    service = _service_repo(tmp_path, git=False)
    run = _check(service, "--output-format", "sarif", ".")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(run.stdout)["runs"][0]["results"]}
    assert uris == {"agent.py"}


def test_junit_lists_every_history_and_fails_the_diverged_one(tmp_path: Path) -> None:
    service = _service_repo(tmp_path, git=True)
    run = _check(service, "--output-format", "junit", ".")
    assert run.returncode == 1, run.stderr
    root = ET.fromstring(run.stdout)
    suites = {suite.get("name"): suite for suite in root}
    replay = suites["replaytest replay"]
    cases = replay.findall("testcase")
    assert len(cases) == 4 and replay.get("tests") == "4" and replay.get("failures") == "1"
    failed = [case for case in cases if case.find("failure") is not None]
    assert len(failed) == 1 and "previous-release" in (failed[0].get("name") or "")
    assert failed[0].find("failure").get("type") == "replay/command-mismatch"  # type: ignore[union-attr]
    lint = suites["replaytest lint"]
    assert lint.get("failures") == "1" and "RT101" in (lint.find("testcase/failure").text or "")  # type: ignore[union-attr]
    assert root.get("tests") == "5" and root.get("failures") == "2"


def test_a_new_untracked_project_folder_is_linted_and_its_gitignore_honoured(tmp_path: Path) -> None:
    """git lists an untracked folder as a whole ("./") when asked from inside it; its files must still be
    linted one by one, and what its .gitignore ignores left out."""
    service = _service_repo(tmp_path, git=True)
    (service / "build").mkdir()
    (service / "build" / "generated.py").write_text((service / "agent.py").read_text())
    (service / ".gitignore").write_text("build/\n")
    run = _check(service, "--output-format", "json", ".")
    paths = {d["path"] for d in json.loads(run.stdout)["lint"]["diagnostics"]}
    assert paths == {"agent.py"}, run.stdout


def test_json_and_junit_reports_parse_when_a_history_name_is_not_utf8(tmp_path: Path) -> None:
    """A file name's bytes that are not UTF-8 are escaped in the JSON and JUnit reports as in the text one
    (and, in JUnit, a control character, which XML 1.0 cannot hold), so both still parse."""
    if sys.platform != "linux":  # other file systems refuse names that are not UTF-8
        import pytest

        pytest.skip("file names of arbitrary bytes are a Linux file-system feature")
    service = _service_repo(tmp_path, git=False)
    histories = service / "histories"
    (histories / OLD_RELEASE.name).rename(histories / os.fsdecode(b"old-\xff\xfe.json"))
    (histories / "support_agent-question.json").rename(histories / "question-\x01.json")
    for output_format in ("json", "junit"):
        run = subprocess.run(
            [sys.executable, "-m", "replaytest", "check", "--no-cache", "--output-format", output_format, "."],
            cwd=service, capture_output=True, timeout=180,
        )
        assert run.returncode == 1, run.stderr.decode(errors="replace")
        if output_format == "json":
            results = json.loads(run.stdout)["replay"]["results"]
            names = {result["history"]: result["status"] for result in results}
            assert names["histories/old-\\xff\\xfe.json"] == "diverged"
            assert names["histories/question-\x01.json"] == "passed"  # JSON holds a control character itself
        else:
            cases = ET.fromstring(run.stdout).findall("testsuite/testcase")
            names = {case.get("name") for case in cases}
            assert {"support_agent histories/old-\\xff\\xfe.json", "support_agent histories/question-\\x01.json"} <= names
