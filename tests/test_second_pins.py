"""Second, independent pins for behaviour a single test used to guard: baseline counts, a stale history
failing replay and check, GitHub's ``%`` escaping, and the replay half of ``check --format json``.

Each test here checks the real code (the reporter, the baseline functions, the command line) against
expectations written out by hand, in a different way from the first test of the same behaviour.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from replaytest.lint.filtering import new_findings, read_baseline, write_baseline
from replaytest.lint.model import Diagnostic, LintResult
from replaytest.lint.reporters.github import render_github

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "fixtures" / "journal_app" / "agent.py"
HISTORIES = REPO / "fixtures" / "histories"


def _counts(summary: dict) -> dict:
    """The replay summary's counts (other keys, such as notes, may sit beside them)."""
    return {key: summary[key] for key in ("histories", "passed", "diverged", "stale", "error", "warnings")}


def _diagnostic(line: int, message: str = "datetime.now() reads the wall clock", path: str = "app/wf.py") -> Diagnostic:
    return Diagnostic(path, line, 9, line, 23, "RT101", "clock", message, "temporal", fingerprint="f-1")


# --- baseline counts ------------------------------------------------------------------------------


def test_baseline_file_records_how_many_identical_findings(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    write_baseline(baseline, [_diagnostic(3), _diagnostic(4)])
    document = json.loads(baseline.read_text(encoding="utf-8"))
    assert document["findings"] == [{"path": "app/wf.py", "rule": "RT101", "fingerprint": "f-1", "count": 2}]
    assert read_baseline(baseline) == Counter({("app/wf.py", "RT101", "f-1"): 2})


@pytest.mark.parametrize(("known", "current", "new"), [(2, 3, 1), (2, 2, 0), (1, 3, 2), (3, 1, 0), (0, 2, 2)])
def test_only_findings_beyond_the_recorded_count_are_new(known: int, current: int, new: int) -> None:
    recorded = Counter({("app/wf.py", "RT101", "f-1"): known}) if known else Counter()
    fresh = new_findings([_diagnostic(line) for line in range(1, current + 1)], recorded)
    assert len(fresh) == new


# --- GitHub annotations: % escaping ---------------------------------------------------------------


def test_github_annotation_escapes_percent_newline_and_property_separators() -> None:
    result = LintResult([_diagnostic(7, 'strftime("100%") at 5:00, then\nmore', path="we,ird:dir%/wf.py")], 1, 0)
    assert render_github(result, {}) == (
        "::error file=we%2Cird%3Adir%25/wf.py,line=7,col=9,endLine=7,endColumn=23,title=RT101"
        "::strftime(\"100%25\") at 5:00, then%0Amore\n"
    )


def test_github_annotation_of_an_already_escaped_looking_message_is_escaped_again() -> None:
    # "%0A" in a message is text, not a newline: the runner must show it as typed.
    result = LintResult([_diagnostic(2, "key %0A and 50%")], 1, 0)
    assert render_github(result, {}).endswith("::key %250A and 50%25\n")


# --- stale histories fail replay and check --------------------------------------------------------


@pytest.fixture
def stale_project(tmp_path: Path) -> Path:
    """The bundled histories, replayed against a module that has no `support_agent` workflow."""
    shutil.copytree(HISTORIES, tmp_path / "histories")
    (tmp_path / "other.py").write_text(
        "from replaytest.journal import workflow\n\n\n@workflow(name='other', version='1')\n"
        "def other(ctx, payload):\n    return payload\n",
        encoding="utf-8",
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["other:other"]\n', encoding="utf-8")
    return tmp_path


def _replaytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180)


def test_stale_history_alone_makes_replay_exit_2(stale_project: Path) -> None:
    run = _replaytest(stale_project, "replay")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "replayed 3 histories: 0 passed, 0 diverged, 3 stale, 0 error" in run.stdout


def test_stale_history_alone_makes_check_exit_2(stale_project: Path) -> None:
    run = _replaytest(stale_project, "check", "--no-cache", "--format", "json")
    assert run.returncode == 2, run.stdout + run.stderr
    replay = json.loads(run.stdout)["replay"]
    assert _counts(replay["summary"]) == {"histories": 3, "passed": 0, "diverged": 0, "stale": 3, "error": 0, "warnings": 0}


# --- check --format json: the replay half, by content ---------------------------------------------


def test_check_json_replay_half_names_each_history_and_its_divergence(tmp_path: Path) -> None:
    shutil.copytree(HISTORIES, tmp_path / "histories")
    source = AGENT.read_text(encoding="utf-8")
    fetch = '    orders = ctx.step("fetch orders", fetch_orders, ticket["customer"])\n'
    (tmp_path / "agent.py").write_text(
        source.replace(fetch, fetch + '    ctx.step("load profile", fetch_orders, ticket["customer"])\n'), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n', encoding="utf-8")
    run = _replaytest(tmp_path, "check", "--no-cache", "--format", "json")
    assert run.returncode == 1, run.stdout + run.stderr
    replay = json.loads(run.stdout)["replay"]
    assert _counts(replay["summary"]) == {"histories": 3, "passed": 0, "diverged": 3, "stale": 0, "error": 0, "warnings": 0}
    by_file = {Path(item["history"]).name: item for item in replay["results"]}
    assert sorted(by_file) == ["support_agent-question.json", "support_agent-refund-approved.json",
                               "support_agent-refund-waiting.json"]
    assert [by_file[name]["status"] for name in sorted(by_file)] == ["diverged", "diverged", "diverged"]
    question = by_file["support_agent-question.json"]["divergence"]
    assert (question["kind"], question["position"]) == ("command-mismatch", 3)
    assert question["issued"]["name"] == "load profile" and question["recorded"]["name"] == "write reply"
    assert question["source"] == {"path": "agent.py", "line": 54, "function": "support_agent"}
    assert by_file["support_agent-refund-approved.json"]["divergence"]["recorded"]["kind"] == "signal"
    # The parked run waits for 'approved' right after 'fetch orders': the new step comes before that wait.
    waiting = by_file["support_agent-refund-waiting.json"]["divergence"]
    assert (waiting["kind"], waiting["position"]) == ("command-mismatch", 3)
    assert (waiting["recorded"]["kind"], waiting["recorded"]["name"]) == ("signal", "approved")
    assert waiting["issued"]["name"] == "load profile"


# --- fix: how many findings remain ----------------------------------------------------------------


def test_fix_counts_what_remains_after_the_safe_fixes(tmp_path: Path) -> None:
    # Two clock reads with a safe fix and one environment read without any (counts stated here).
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (tmp_path / "wf.py").write_text(
        "import os\nfrom datetime import datetime, timezone\n\nfrom temporalio import workflow\n\n\n@workflow.defn\n"
        "class Flow:\n    @workflow.run\n    async def run(self) -> str:\n"
        "        return f\"{datetime.now(timezone.utc)} {datetime.now(timezone.utc)} {os.environ['R']}\"\n",
        encoding="utf-8",
    )
    run = _replaytest(tmp_path, "fix", "--no-cache", ".")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.count(" -> workflow.now().astimezone(timezone.utc)") == 2, run.stdout
    assert re.search(r"\b2 finding\(s\) in 1 file\(s\); 1 remaining\.$", run.stdout.strip()), run.stdout
    again = _replaytest(tmp_path, "lint", "--no-cache", "--format", "json", ".")
    assert [d["rule"] for d in json.loads(again.stdout)["diagnostics"]] == ["RT204"]
