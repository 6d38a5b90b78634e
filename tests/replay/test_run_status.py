"""Every replay result says what kind of run its history recorded (``run_status``: running, parked,
completed, failed; ``in_flight``), and every summary separates in-flight runs that break (the engine
resumes them by replaying) from finished runs that diverge (queries, resets, forks) — in the text and JSON
reports of ``replay`` and ``check``, and in the junit, SARIF and GitHub formats. The exit code does not
change with it.

The histories are runs of ``status_apps.returns_desk`` recorded on the real journal runtime, replayed
against a later version that renamed a step, so each of them diverges."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import status_apps as apps
from click.testing import CliRunner
from replaykit import record

from replaytest.cli import cli
from replaytest.history import load_history
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.runner import UNKNOWN_RUN_STATUS_NOTE, replay_file

RENAMED = "status_apps:returns_desk_renamed"


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """``histories/`` with one run per status: approved (completed), waiting (parked), unknown-order
    (failed), and stalled: the waiting run as the journal shows it while a worker still holds it
    (status running; the journal records no other difference for a run whose worker stops mid-run)."""
    histories = tmp_path / "histories"
    histories.mkdir()
    record(histories, apps.returns_desk, {"text": "I want to return my kettle", "order": "R-1"}, name="approved",
           signals=[("approved", {"ok": True})])
    waiting = record(histories, apps.returns_desk, {"text": "please return this lamp", "order": "R-2"}, name="waiting")
    record(histories, apps.returns_desk, {"text": "return my order", "order": "R-9"}, name="unknown-order")
    stalled = json.loads(waiting.read_text())
    assert stalled["status"] == "parked"
    stalled["status"] = "running"
    del stalled["waiting"]  # a running run stands at no wait
    stalled["workflow"]["id"] = "wf-stalled"
    (histories / "stalled.json").write_text(json.dumps(stalled, indent=2))
    for path in histories.glob("*.sqlite3"):
        path.unlink()
    return tmp_path


def run(cwd: Path, *args: str) -> tuple[int, str]:
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(previous)
    return result.exit_code, result.output


def test_recorded_statuses_reach_the_results(desk: Path) -> None:
    assert {path.name: load_history(path).status for path in (desk / "histories").glob("*.json")} == {
        "approved.json": "completed", "waiting.json": "parked", "unknown-order.json": "failed", "stalled.json": "running",
    }


def test_text_headlines_name_the_run_and_the_summary_splits_in_flight_from_finished(desk: Path) -> None:
    code, out = run(desk, "replay", "histories", "--workflows", RENAMED)
    assert code == 1  # as before: a divergence is exit 1, whatever kind of run diverged
    headlines = [line for line in out.splitlines() if line.startswith("histories/")]
    assert headlines == [
        "histories/approved.json: returns_desk id wf-approved: diverged (4 recorded events), finished run (completed)",
        "histories/stalled.json: returns_desk id wf-stalled: diverged (2 recorded events), in-flight run (running)",
        "histories/unknown-order.json: returns_desk id wf-unknown-order: diverged (2 recorded events), finished run (failed)",
        "histories/waiting.json: returns_desk id wf-waiting: diverged (2 recorded events), in-flight run (parked)",
    ]
    assert out.splitlines()[-3:] == [
        "replayed 4 histories: 0 passed, 4 diverged, 0 stale, 0 error; 0 warning(s)",
        "in-flight runs that break: 2 (1 running, 1 parked)",
        "finished runs that diverge: 2 (1 completed, 1 failed)",
    ]


def test_passing_histories_name_their_run_and_the_summary_adds_no_split(desk: Path) -> None:
    code, out = run(desk, "replay", "histories", "--workflows", "status_apps:returns_desk")
    assert code == 0, out
    assert "histories/waiting.json: returns_desk id wf-waiting: passed (2 events), in-flight run (parked)" in out
    assert out.splitlines()[-1] == "replayed 4 histories: 4 passed, 0 diverged, 0 stale, 0 error; 0 warning(s)"
    assert "in-flight runs" not in out


def test_json_results_carry_run_status_and_the_summary_counts_diverged_runs_by_it(desk: Path) -> None:
    (desk / "histories/approved.json").unlink()
    code, out = run(desk, "replay", "histories", "--workflows", RENAMED, "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert [(Path(r["history"]).name, r["status"], r["run_status"], r["in_flight"]) for r in data["results"]] == [
        ("stalled.json", "diverged", "running", True),
        ("unknown-order.json", "diverged", "failed", False),
        ("waiting.json", "diverged", "parked", True),
    ]
    summary = data["summary"]
    assert (summary["diverged_in_flight"], summary["diverged_finished"], summary["diverged_run_status_unknown"]) == (2, 1, 0)
    assert summary["diverged_by_run_status"] == {"completed": 0, "failed": 1, "running": 1, "parked": 1, "unknown": 0}


def _check_project(desk: Path) -> Path:
    (desk / "pyproject.toml").write_text(
        f'[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["{RENAMED}"]\n', encoding="utf-8"
    )
    (desk / "app.py").write_text("def total(prices):\n    return sum(prices)\n", encoding="utf-8")
    return desk


def test_check_text_and_json_carry_the_split(desk: Path) -> None:
    project = _check_project(desk)
    code, out = run(project, "check", "--no-cache", "app.py")
    assert code == 1
    assert "in-flight runs that break: 2 (1 running, 1 parked)" in out.splitlines()
    assert "finished runs that diverge: 2 (1 completed, 1 failed)" in out.splitlines()
    code, out = run(project, "check", "--no-cache", "--format", "json", "app.py")
    assert code == 1
    replay = json.loads(out)["replay"]
    assert {Path(r["history"]).name: r["run_status"] for r in replay["results"]} == {
        "approved.json": "completed", "stalled.json": "running", "unknown-order.json": "failed", "waiting.json": "parked",
    }
    assert replay["summary"]["diverged_in_flight"] == 2 and replay["summary"]["diverged_finished"] == 2


def test_junit_test_cases_hold_the_run_status_as_properties(desk: Path) -> None:
    code, out = run(_check_project(desk), "check", "--no-cache", "--format", "junit", "app.py")
    assert code == 1
    root = ET.fromstring(out)
    cases = root.findall("testsuite[@name='replaytest replay']/testcase")
    facts = {
        case.get("name", "").split()[-1]: {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        for case in cases
    }
    assert facts == {
        "histories/approved.json": {"run_status": "completed", "in_flight": "false"},
        "histories/stalled.json": {"run_status": "running", "in_flight": "true"},
        "histories/unknown-order.json": {"run_status": "failed", "in_flight": "false"},
        "histories/waiting.json": {"run_status": "parked", "in_flight": "true"},
    }
    waiting = next(case for case in cases if case.get("name", "").endswith("waiting.json"))
    failure = waiting.find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("replaying histories/waiting.json, in-flight run (parked): command-mismatch")


def test_sarif_results_hold_the_run_status_in_their_property_bag(desk: Path) -> None:
    code, out = run(_check_project(desk), "check", "--no-cache", "--format", "sarif", "app.py")
    assert code == 1
    [sarif_run] = json.loads(out)["runs"]
    replayed = [r for r in sarif_run["results"] if r["ruleId"].startswith("replay/")]
    assert sorted((r["partialFingerprints"]["replaytestFingerprint/v1"].split()[-1], r["properties"]["run_status"],
                   r["properties"]["in_flight"]) for r in replayed) == [
        ("histories/approved.json", "completed", "false"),
        ("histories/stalled.json", "running", "true"),
        ("histories/unknown-order.json", "failed", "false"),
        ("histories/waiting.json", "parked", "true"),
    ]
    # The rule descriptor stays one per kind of problem, not per kind of run.
    assert [rule["shortDescription"]["text"] for rule in sarif_run["tool"]["driver"]["rules"]
            if rule["id"] == "replay/command-mismatch"] == ["replay command-mismatch"]


def test_github_annotations_name_the_run_in_their_message(desk: Path) -> None:
    code, out = run(_check_project(desk), "check", "--no-cache", "--format", "github", "app.py")
    assert code == 1
    replay_lines = [line for line in out.splitlines() if "title=replay command-mismatch" in line]
    assert len(replay_lines) == 4
    messages = sorted(line.split("::", 2)[2].split("%0A")[0] for line in replay_lines)
    assert messages == [
        "histories/approved.json: returns_desk id wf-approved: diverged (4 recorded events), finished run (completed)",
        "histories/stalled.json: returns_desk id wf-stalled: diverged (2 recorded events), in-flight run (running)",
        "histories/unknown-order.json: returns_desk id wf-unknown-order: diverged (2 recorded events), finished run (failed)",
        "histories/waiting.json: returns_desk id wf-waiting: diverged (2 recorded events), in-flight run (parked)",
    ]


class _ThirdPartyReplayer:
    """A replayer outside this package that predates ``run_status``: it reports outcomes only."""

    def __init__(self, engine: str, sniffs: bool) -> None:
        self.engine = engine
        self._sniffs = sniffs

    def sniff(self, head: bytes) -> bool:
        return self._sniffs and head.lstrip().startswith(b'{"acme-run"')

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        return ReplayResult(path, self.engine, "desk", status="diverged", events=1)


def test_a_replayer_that_does_not_say_gets_the_neutral_history_status_from_the_runner(desk: Path) -> None:
    waiting = desk / "histories/waiting.json"
    data = json.loads(waiting.read_text())
    data["workflow"]["engine"] = "acme"
    waiting.write_text(json.dumps(data))
    result = replay_file(waiting, [_ThirdPartyReplayer("acme", sniffs=False)], WorkflowSet(), ReplayOptions())
    assert (result.run_status, result.in_flight, result.notes) == ("parked", True, [])


def test_a_native_format_whose_replayer_does_not_say_is_unknown_and_the_summary_says_so(tmp_path: Path) -> None:
    native = tmp_path / "run.json"
    native.write_text('{"acme-run": {"steps": []}}')
    result = replay_file(native, [_ThirdPartyReplayer("acme", sniffs=True)], WorkflowSet(), ReplayOptions())
    assert (result.run_status, result.in_flight) == (None, None)
    assert result.notes == [UNKNOWN_RUN_STATUS_NOTE]
    from replaytest.replay.report import diverged_by_run_status, headline, run_status_lines

    assert headline(result).endswith(": desk: diverged (1 recorded events), run status unknown")
    assert run_status_lines(diverged_by_run_status([result])) == [
        "in-flight runs that break: 0",
        "finished runs that diverge: 0",
        "diverged runs whose status is unknown (neither in-flight nor finished can be told): 1",
    ]
