"""docs/ci.md ships a GitHub Actions workflow and a deploy-impact job to add under its ``jobs:``: the YAML
parses, has the jobs and steps it promises (lint annotations, SARIF upload, replay gate, the impact report as
step summary and pull-request comment), and every ``replaytest`` command in it parses with our CLI's real
options (a renamed or removed flag fails here, not in a user's pipeline)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from replaytest.cli import cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def _workflow() -> dict[str, Any]:
    """The workflow with the impact job added under ``jobs:``, as the document tells the reader to."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 2, "docs/ci.md should hold one workflow and the impact job to add to it"
    document = yaml.safe_load(blocks[0])
    assert isinstance(document, dict)
    added = yaml.safe_load(blocks[1])
    assert isinstance(added, dict) and set(added) == {"impact"}, "the second block is the impact job alone"
    document["jobs"].update(added)
    return document


def _steps() -> list[dict[str, Any]]:
    return [step for job in _workflow()["jobs"].values() for step in job["steps"]]


def _replaytest_commands() -> list[list[str]]:
    commands = []
    for step in _steps():
        script = step.get("run", "")
        for line in re.split(r"&&|\n(?!\s*-)", script.replace("\\\n", " ")):  # commands; continued lines joined
            line = re.sub(r"\$\{\{[^}]*\}\}", "REV", line)  # expressions: a placeholder argument
            line = re.split(r"\s(?:>|\|\|)\s", line)[0]  # shell redirection and fallbacks are not ours
            words = shlex.split(line)
            if words and words[0] == "replaytest":
                commands.append(words[1:])
    return commands


def _parse(arguments: list[str]) -> click.Context:
    """Parse like the real command line does, down to the subcommand, without running anything."""
    name, *rest = arguments
    context = click.Context(cli, info_name="replaytest")
    command = cli.get_command(context, name)
    assert command is not None, f"unknown command {name!r}"
    return command.make_context(name, rest, parent=context)


def test_workflow_triggers_permissions_and_jobs() -> None:
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    assert workflow["permissions"]["security-events"] == "write"
    assert set(workflow["jobs"]) == {"lint", "replay", "impact"}
    for job in workflow["jobs"].values():
        assert job["runs-on"] and job["steps"][0]["uses"].startswith("actions/checkout@")


def test_lint_job_annotates_and_uploads_the_sarif_it_writes() -> None:
    steps = _workflow()["jobs"]["lint"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    assert "replaytest lint --format github" in runs
    written = re.search(r"--format sarif .*?> (\S+)", runs)
    assert written is not None
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == written.group(1)


def test_replay_job_gates_with_check_and_can_diff_against_the_base() -> None:
    steps = _workflow()["jobs"]["replay"]["steps"]
    checkout = steps[0]
    assert checkout["with"]["fetch-depth"] == 0  # --diff-base needs history
    checks = [step["run"] for step in steps if step.get("run", "").startswith("replaytest check")]
    assert any("--diff-base" in run and "--output-format github" in run for run in checks)
    cache = next(step for step in steps if step.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == ".replaytest_cache"  # the configuration's default cache-dir


def test_every_replaytest_command_parses() -> None:
    commands = _replaytest_commands()
    assert {words[0] for words in commands} == {"lint", "check", "impact"}
    for words in commands:
        _parse(words)


def test_impact_job_posts_the_markdown_report_and_gates_on_in_flight_runs() -> None:
    job = _workflow()["jobs"]["impact"]
    assert job["if"] == "github.event_name == 'pull_request'"
    assert job["permissions"]["pull-requests"] == "write"
    assert job["steps"][0]["with"]["fetch-depth"] == 0  # the guards' base revision needs history
    runs = [step.get("run", "") for step in job["steps"]]
    report = next(run for run in runs if "replaytest impact" in run)
    assert "--output-format markdown > impact.md" in report and "--in-flight-only" in report
    assert '>> "$GITHUB_STEP_SUMMARY"' in report
    assert any("gh pr comment" in run and "--body-file impact.md" in run for run in runs)
    assert runs[-1] == "exit ${{ steps.impact.outputs.exit }}"


def test_the_parse_check_rejects_a_misspelt_flag() -> None:
    """Guard: the check above must fail on an option our CLI lacks."""
    with pytest.raises(click.UsageError):
        _parse(["check", "--output-fromat", "github", "."])
