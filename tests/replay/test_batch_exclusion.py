"""One history that cannot be checked never hides the others' verdicts, and ``exclude`` leaves histories
out of ``replaytest replay``/``check`` on purpose, saying so in the summary.

The project is the bundled journal support agent with its recorded histories, one recorded by the
agent's previous release (it diverges) and one file cut short in the middle (corrupt)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENT = REPO / "fixtures/journal_app/agent.py"
GOOD = ("support_agent-question.json", "support_agent-refund-approved.json", "support_agent-refund-waiting.json")
PREVIOUS_RELEASE = REPO / "fixtures/ci_histories/support_agent-previous-release.json"
TABLE = '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(AGENT, tmp_path / "agent.py")
    histories = tmp_path / "histories"
    shutil.copytree(REPO / "fixtures/histories", histories)
    (histories / "older").mkdir()
    shutil.copy(PREVIOUS_RELEASE, histories / "older/support_agent-previous-release.json")
    whole = (histories / GOOD[0]).read_text(encoding="utf-8")
    (histories / "support_agent-cut-short.json").write_text(whole[: len(whole) // 2], encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(TABLE, encoding="utf-8")
    return tmp_path


def replaytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=project, capture_output=True, text=True,
                          timeout=120)


def statuses(document: dict) -> dict[str, str]:
    return {Path(item["history"]).name: item["status"] for item in document["results"]}


def test_a_corrupt_history_is_an_error_and_every_other_history_keeps_its_verdict(project: Path) -> None:
    run = replaytest(project, "replay")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "histories/support_agent-cut-short.json: ?: error" in run.stdout
    assert "invalid JSON" in run.stdout
    assert "histories/older/support_agent-previous-release.json: support_agent id ticket-old-release: diverged" in run.stdout
    assert "command-mismatch at event #3" in run.stdout
    assert "replayed 5 histories: 3 passed, 1 diverged, 0 stale, 1 error" in run.stdout
    document = json.loads(replaytest(project, "replay", "--format", "json").stdout)
    assert statuses(document) == {
        "support_agent-cut-short.json": "error",
        "support_agent-previous-release.json": "diverged",
        "support_agent-question.json": "passed",
        "support_agent-refund-approved.json": "passed",
        "support_agent-refund-waiting.json": "passed",
    }
    assert document["summary"]["excluded"] == 0 and document["excluded"] == []


def test_excluding_the_corrupt_history_leaves_the_others_exit_code(project: Path) -> None:
    run = replaytest(project, "replay", "--exclude", "*-cut-short.json")
    assert run.returncode == 1, run.stdout + run.stderr  # the previous release's divergence
    assert "cut-short" not in run.stdout.replace("excluded 1 history (by --exclude)", "")
    assert "replayed 4 histories: 3 passed, 1 diverged, 0 stale, 0 error" in run.stdout
    assert "excluded 1 history (by --exclude)" in run.stdout
    both = replaytest(project, "replay", "--exclude", "*-cut-short.json", "--exclude", "older", "--details")
    assert both.returncode == 0, both.stdout + both.stderr
    assert "excluded 2 histories (by --exclude)" in both.stdout
    assert "  excluded histories/older/support_agent-previous-release.json (glob 'older')" in both.stdout
    assert "  excluded histories/support_agent-cut-short.json (glob '*-cut-short.json')" in both.stdout


def test_the_configured_exclude_is_reported_in_text_and_json(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    pyproject.write_text(TABLE + 'exclude = ["histories/support_agent-cut-short.json", "drafts/"]\n', encoding="utf-8")
    setting = f"[tool.replaytest.replay] exclude in {pyproject}"
    run = replaytest(project, "replay")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"excluded 1 history (by {setting})" in run.stdout
    assert f"note: exclude glob 'drafts/' ({setting}) matches no history under the replay paths" in run.stdout
    document = json.loads(replaytest(project, "replay", "--format", "json").stdout)
    assert "support_agent-cut-short.json" not in statuses(document)
    assert document["summary"]["excluded"] == 1
    assert document["excluded"] == [
        {"history": "histories/support_agent-cut-short.json", "glob": "histories/support_agent-cut-short.json",
         "setting": setting},
    ]
    assert f"exclude glob 'drafts/' ({setting}) matches no history under the replay paths" in document["summary"]["notes"]


def test_check_reports_the_exclusion_and_takes_the_others_exit_code(project: Path) -> None:
    (project / "pyproject.toml").write_text(TABLE + 'exclude = ["*-cut-short.json"]\n', encoding="utf-8")
    run = replaytest(project, "check", "--no-cache", "agent.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "replayed 4 histories: 3 passed, 1 diverged, 0 stale, 0 error" in run.stdout
    assert "excluded 1 history (by [tool.replaytest.replay] exclude in" in run.stdout
    document = json.loads(replaytest(project, "check", "--no-cache", "--format", "json", "agent.py").stdout)
    assert document["replay"]["summary"]["excluded"] == 1
    assert [item["history"] for item in document["replay"]["excluded"]] == ["histories/support_agent-cut-short.json"]
    github = replaytest(project, "check", "--no-cache", "--format", "github", "--exclude", "older", "agent.py")
    assert github.returncode == 0, github.stdout + github.stderr
    assert "excluded 1 history (by [tool.replaytest.replay] exclude in" in github.stderr
    assert "excluded 1 history (by --exclude)" in github.stderr


def test_excluding_every_history_is_an_error_not_a_pass(project: Path) -> None:
    run = replaytest(project, "replay", "--exclude", "histories")
    assert run.returncode == 2
    assert "nothing to replay: exclude (--exclude) leaves out every history under the replay paths (5 excluded)" in run.stderr
    (project / "pyproject.toml").write_text(TABLE + 'exclude = ["*.json"]\n', encoding="utf-8")
    gate = replaytest(project, "check", "--no-cache", "agent.py")
    assert gate.returncode == 2
    assert "nothing to replay: exclude ([tool.replaytest.replay] exclude in" in gate.stderr


def test_a_history_named_on_the_command_line_is_replayed_unless_force_exclude(project: Path) -> None:
    (project / "pyproject.toml").write_text(TABLE + 'exclude = ["older"]\n', encoding="utf-8")
    named = "histories/older/support_agent-previous-release.json"
    run = replaytest(project, "replay", named)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "replayed 1 histories: 0 passed, 1 diverged" in run.stdout
    forced = replaytest(project, "replay", "--force-exclude", named)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "replayed 0 histories" in forced.stdout
    assert "note: every history given is excluded (by [tool.replaytest.replay] exclude in" in forced.stdout
    # The folder named: its histories are walked, so the glob applies to them.
    assert replaytest(project, "replay", "histories/older").returncode == 2
    # force-exclude of [tool.replaytest] (lint's setting for files named on the command line) applies too.
    (project / "pyproject.toml").write_text('[tool.replaytest]\nforce-exclude = true\n\n' + TABLE + 'exclude = ["older"]\n',
                                            encoding="utf-8")
    assert "note: every history given is excluded" in replaytest(project, "replay", named).stdout


def test_globs_are_relative_to_the_project_root_not_the_working_directory(project: Path) -> None:
    (project / "pyproject.toml").write_text(TABLE + 'exclude = ["histories/older"]\n', encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "replaytest", "replay", "."], cwd=project / "histories",
                         capture_output=True, text=True, timeout=120)
    assert "support_agent-previous-release.json" not in run.stdout.split("excluded")[0]
    assert "excluded 1 history" in run.stdout


def test_the_replayed_code_calling_sys_exit_is_that_historys_error(project: Path) -> None:
    """Before, the first history whose replay reached ``sys.exit(0)`` ended the whole run with exit 0 and
    no output: every history after it unreplayed, and a pass reported."""
    agent = project / "agent.py"
    source = agent.read_text(encoding="utf-8")
    branch = '    if plan == "refund" and orders:\n'
    assert source.count(branch) == 1
    agent.write_text(source.replace(branch, '    if plan == "refund":\n        sys.exit(0)  # refunds moved to the back office\n' + branch)
                     .replace("from typing import Any\n", "import sys\nfrom typing import Any\n"), encoding="utf-8")
    run = replaytest(project, "replay", "--exclude", "*-cut-short.json", "--exclude", "older")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout.count("the replayed code called sys.exit(0) during journal replay; the history could not be checked") == 2
    assert "histories/support_agent-question.json: support_agent id ticket-question: passed" in run.stdout
    assert "replayed 3 histories: 1 passed, 0 diverged, 0 stale, 2 error" in run.stdout


def test_a_string_instead_of_a_list_is_a_configuration_error(project: Path) -> None:
    (project / "pyproject.toml").write_text(TABLE + 'exclude = "older"\n', encoding="utf-8")
    run = replaytest(project, "replay")
    assert run.returncode == 2
    assert "[tool.replaytest] replay.exclude: must be a list of strings, e.g. ['older']" in run.stderr


def test_the_pytest_ini_option_wins_over_the_table_for_the_command_line_too(project: Path) -> None:
    """``replay_exclude`` of the ini file pytest would read (here ``pytest.ini`` in a folder between the
    project root and the working directory: its globs are relative to that folder) replaces the table's."""
    (project / "pyproject.toml").write_text(TABLE + 'exclude = ["older"]\n', encoding="utf-8")
    (project / "histories/pytest.ini").write_text("[pytest]\nreplay_paths = .\nreplay_exclude =\n    support_agent-cut-*\n",
                                                  encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "replaytest", "replay", "-w", "agent:support_agent"],
                         cwd=project / "histories", capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(project)})
    assert run.returncode == 1, run.stdout + run.stderr  # the previous release is replayed: "older" does not apply
    assert f"excluded 1 history (by [pytest] replay_exclude in {project / 'histories/pytest.ini'})" in run.stdout
    assert "replayed 4 histories: 3 passed, 1 diverged, 0 stale, 0 error" in run.stdout
