"""``impact.grouping``: five recorded runs of the invoice-dispute agent (two parked at the reviewer's decision,
three completed past it) replayed against changed versions, grouped per divergence point. Histories are
recorded with the real journal runtime; every expected group, position, line and run id is written out."""

from __future__ import annotations

from pathlib import Path

import impact_agent as agent
import pytest
from impactkit import record_runs, replay_all, tagged_line

from replaytest.impact.grouping import build_report, command_text, exit_code, group_results, run_id
from replaytest.impact.model import GroupKey
from replaytest.replay.divergence import Divergence, ReplayResult

AGENT_FILE = str(Path(agent.__file__).resolve())
PARKED = ["dispute-parked-1", "dispute-parked-2"]
COMPLETED = ["dispute-approved-1", "dispute-approved-2", "dispute-rejected-1"]


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_runs(tmp_path_factory.mktemp("disputes"), agent.invoice_dispute)


def ids(results: list[ReplayResult]) -> list[str]:
    return [run_id(result) for result in results]


def test_the_recorded_runs_are_parked_at_the_decision_or_completed_past_it(histories: Path) -> None:
    results = replay_all(histories, agent.invoice_dispute)
    assert {run_id(r): (r.run_status, r.events, r.status) for r in results} == {
        "dispute-approved-1": ("completed", 6, "passed"), "dispute-approved-2": ("completed", 6, "passed"),
        "dispute-parked-1": ("parked", 3, "passed"), "dispute-parked-2": ("parked", 3, "passed"),
        "dispute-rejected-1": ("completed", 5, "passed"),
    }
    [impact] = group_results(results)
    assert (impact.workflow_type, impact.engine, impact.groups, impact.not_reached) == (
        "invoice_dispute", "journal", [], [])
    # No change: nothing is "not reached", every green run is unaffected.
    assert ids(impact.unaffected) == sorted(COMPLETED + PARKED)


def test_a_step_after_the_wait_breaks_the_completed_runs_and_has_not_reached_the_parked_ones(histories: Path) -> None:
    results = replay_all(histories, agent.audit_after_decision)
    [impact] = group_results(results)
    [group] = impact.groups
    assert group.key == GroupKey("invoice_dispute", "command-mismatch", ("step", "write audit log"), AGENT_FILE,
                                 tagged_line(agent.audit_after_decision, "audit"))
    assert group.position == 5
    # Approved runs recorded the credit note there, the rejected one its notice: both sides are listed.
    assert [command_text(view) for view in group.recorded] == ["step 'issue credit note'", "step 'notify customer'"]
    assert command_text(group.issued) == "step 'write audit log'"
    assert (ids(group.in_flight), ids(group.finished), group.unknown_status) == ([], COMPLETED, [])
    assert ids(impact.not_reached) == PARKED
    assert impact.unaffected == []
    report = build_report(results)
    assert (exit_code(report), exit_code(report, in_flight_only=True)) == (1, 0)


def test_steps_swapped_before_the_wait_break_every_run_in_one_group(histories: Path) -> None:
    results = replay_all(histories, agent.payments_first)
    [impact] = group_results(results)
    [group] = impact.groups
    assert group.key == GroupKey("invoice_dispute", "command-mismatch", ("step", "load payments"), AGENT_FILE,
                                 tagged_line(agent.payments_first, "swapped"))
    assert group.position == 1
    assert [command_text(view) for view in group.recorded] == ["step 'load invoice'"]
    assert (ids(group.in_flight), ids(group.finished)) == (PARKED, COMPLETED)
    assert impact.not_reached == [] and impact.unaffected == []
    report = build_report(results)
    assert (exit_code(report), exit_code(report, in_flight_only=True)) == (1, 1)


def test_a_branch_change_breaks_only_the_runs_on_that_branch(histories: Path) -> None:
    results = replay_all(histories, agent.credit_limit_check)
    [impact] = group_results(results)
    [group] = impact.groups
    assert group.key == GroupKey("invoice_dispute", "command-mismatch", ("step", "check credit limit"), AGENT_FILE,
                                 tagged_line(agent.credit_limit_check, "limit"))
    assert group.position == 5
    assert [command_text(view) for view in group.recorded] == ["step 'issue credit note'"]
    assert (ids(group.in_flight), ids(group.finished)) == ([], ["dispute-approved-1", "dispute-approved-2"])
    assert ids(impact.not_reached) == PARKED
    assert ids(impact.unaffected) == ["dispute-rejected-1"]  # the rejected branch did not change


def test_prompt_drift_is_grouped_like_any_divergence(histories: Path) -> None:
    """Parked runs fail on a reworded prompt (they resume with it); completed ones only warn (not grouped,
    and the report says so)."""
    results = replay_all(histories, agent.reworded_recommendation)
    report = build_report(results)
    [impact] = report.workflows
    [group] = impact.groups
    assert (group.key.kind, group.key.command, group.key.line, group.position) == (
        "prompt-drift", ("model", "recommend"), tagged_line(agent.reworded_recommendation, "reworded"), 3)
    assert (ids(group.in_flight), group.finished) == (PARKED, [])
    assert ids(impact.unaffected) == COMPLETED
    assert ("3 green histories replayed with warnings (prompt drift, changed arguments, hazards under warn); "
            "warnings are not grouped") in report.notes


def test_a_clock_read_is_grouped_at_its_line(histories: Path) -> None:
    results = replay_all(histories, agent.dated_credit_note)
    [impact] = group_results(results)
    [group] = impact.groups
    assert (group.key.kind, group.key.command, group.key.line, group.position) == (
        "nondeterministic-call", None, tagged_line(agent.dated_credit_note, "clock"), 5)
    assert ids(group.finished) == ["dispute-approved-1", "dispute-approved-2"]
    assert ids(impact.not_reached) == PARKED


def test_error_and_stale_histories_are_not_grouped_but_could_not_be_checked(histories: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "replaytest-history", "format_version": 9}')
    results = replay_all(histories, agent.payments_first)
    from replaytest.plugins.journal import PLUGIN
    from replaytest.replay.adapter import ReplayOptions
    from replaytest.replay.runner import load_workflows, replay_file

    assert PLUGIN.replayer is not None
    bad = replay_file(broken, [PLUGIN.replayer], load_workflows((), None, [agent.payments_first]), ReplayOptions())
    assert bad.status == "error"
    report = build_report([*results, bad])
    assert report.could_not_check == [bad]
    assert sum(len(g.in_flight) + len(g.finished) for w in report.workflows for g in w.groups) == 5
    assert exit_code(report) == 2


def _diverged(workflow_id: str, run_status: str | None, position: int, line: int, kind: str = "command-mismatch") -> ReplayResult:
    from replaytest.replay.divergence import CommandView, SourcePosition

    return ReplayResult(
        Path(f"/h/{workflow_id}.json"), "journal", "billing", workflow_id, status="diverged", run_status=run_status,
        events=9, divergence=Divergence(kind, position, "changed", recorded=CommandView("step", "old"),
                                        issued=CommandView("step", "new"), source=SourcePosition("app.py", line)),
    )


def test_groups_are_ordered_worst_first_and_unknown_status_is_kept_and_counts_as_in_flight() -> None:
    results = [
        _diverged("b-1", "completed", 4, 20), _diverged("b-2", "completed", 4, 20), _diverged("b-3", "completed", 4, 20),
        _diverged("a-1", "parked", 7, 30), _diverged("u-1", None, 7, 30),
        ReplayResult(Path("/h/g.json"), "journal", "billing", None, run_status="running", events=3),
    ]
    report = build_report(results)
    [impact] = report.workflows
    first, second = impact.groups
    assert (first.key.line, ids(first.in_flight), ids(first.unknown_status)) == (30, ["a-1"], ["u-1"])
    assert (second.key.line, ids(second.finished)) == (20, ["b-1", "b-2", "b-3"])
    # A green run without a workflow id is named by its history; it ends (3 events) before event #4.
    assert ids(impact.not_reached) == ["/h/g.json"]
    assert exit_code(report, in_flight_only=True) == 1
    assert ("1 diverged history recorded no run status: neither in-flight nor finished can be told, so they count "
            "as in-flight for the exit code") in report.notes
    only_unknown = build_report([_diverged("u-1", None, 7, 30)])
    assert exit_code(only_unknown, in_flight_only=True) == 1


def test_a_reworded_prompt_the_parked_runs_already_called_is_a_prompt_group_of_those_runs(histories: Path) -> None:
    """The journal records each model call's version: the group compares with those, lists only the in-flight
    runs (completed ones call nothing again) and says they already called the prompt."""
    from impact_agent import RECOMMEND, RECOMMEND_V2

    from replaytest.impact.report import impact_data, render_text

    report = build_report(replay_all(histories, agent.reworded_recommendation))
    [impact] = report.workflows
    [group] = impact.prompt_groups
    assert (group.prompt, group.started, group.current, group.compared) == (
        "recommend", RECOMMEND.version, RECOMMEND_V2.version, ["call"])
    assert (ids(group.called), group.not_called) == (PARKED, [])
    [data] = impact_data(report)["workflows"]
    # The line of the current code using the prompt: where the reworded prompt is rendered.
    line = tagged_line(agent.reworded_recommendation, "reworded") - 1
    assert data["prompt_groups"] == [{
        "prompt": "recommend", "from": RECOMMEND.version, "to": RECOMMEND_V2.version, "compared": ["call"],
        "runs": {"not_called": [], "called": PARKED}, "source": {"path": AGENT_FILE, "line": line},
    }]
    assert (
        f"  prompt recommend: {RECOMMEND.version[:19]} -> {RECOMMEND_V2.version[:19]} (compared with the version its "
        f"recorded calls used, used at tests/impact/impact_agent.py:{line}), 2 in-flight runs\n"
        "    already called it, keep that result; any later call of it uses the new version (2): dispute-parked-1, dispute-parked-2\n"
    ) in render_text(report)


def test_unchanged_prompts_make_no_prompt_group(histories: Path) -> None:
    [impact] = build_report(replay_all(histories, agent.invoice_dispute)).workflows
    assert impact.prompt_groups == []


def _at(workflow_id: str, run_status: str, kind: str, position: int, message: str) -> ReplayResult:
    """A run that breaks where the code now issues step 'fraud check' at app.py:40."""
    from replaytest.replay.divergence import CommandView, SourcePosition

    return ReplayResult(
        Path(f"/h/{workflow_id}.json"), "dbos", "resolve_dispute", workflow_id, status="diverged", run_status=run_status,
        events=9, divergence=Divergence(kind, position, message, recorded=CommandView("step", "recorded here"),
                                        issued=CommandView("step", "fraud check"), source=SourcePosition("app.py", 40)),
    )


def test_one_change_at_one_line_is_one_group_whatever_each_run_recorded_there() -> None:
    """A step inserted before a wait: the finished runs recorded the wait there (command-mismatch), the parked
    runs nothing before the wait's timeout (extra-command). One change, one group; it speaks with the words of
    its in-flight run and of the smallest event, so its header and text agree."""
    results = [
        _at("done-1", "completed", "command-mismatch", 3, "recorded the wait at function id 3"),
        _at("done-2", "completed", "command-mismatch", 5, "recorded the wait at function id 5"),
        _at("parked-1", "parked", "extra-command", 3, "nothing recorded at function id 3"),
    ]
    [impact] = group_results(results)
    [group] = impact.groups
    assert (ids(group.in_flight), ids(group.finished)) == (["parked-1"], ["done-1", "done-2"])
    assert (group.key.kind, group.position, group.message) == ("extra-command", 3, "nothing recorded at function id 3")
    # The grouped summary of `check` and pytest counts them as one group too.
    from replaytest.impact.grouping import divergence_point, summary_lines

    [line] = summary_lines(divergence_point(result) for result in results)
    assert line.startswith("1 in-flight run of resolve_dispute breaks at event #3 (app.py:40), and 2 finished diverge there")


def test_the_group_header_names_the_event_its_message_speaks_of() -> None:
    results = [
        _at("done-late", "completed", "command-mismatch", 21, "history event 21 scheduled 'issue_credit'"),
        _at("done-early", "completed", "command-mismatch", 17, "history event 17 scheduled 'notify'"),
    ]
    [impact] = group_results(results)
    [group] = impact.groups
    assert (group.position, group.message) == (17, "history event 17 scheduled 'notify'")


def test_other_kinds_at_one_line_stay_apart() -> None:
    """A clock read and a command change at one line are two problems, two groups."""
    results = [_at("a", "completed", "command-mismatch", 3, "m"), _at("b", "completed", "nondeterministic-call", 3, "clock")]
    [impact] = group_results(results)
    assert sorted(group.key.kind for group in impact.groups) == ["command-mismatch", "nondeterministic-call"]


def test_an_in_flight_run_the_engine_refuses_to_resume_breaks_though_it_replays_green() -> None:
    """Replay is green, but the engine's own code, resuming the run past its history, fails its next task: that
    run breaks on deploy, and the report and the exit code say so."""
    from replaytest.impact.report import render_text, summary_sentence
    from replaytest.replay.divergence import Rehearsal

    refused = ReplayResult(Path("/h/p-1.json"), "temporal", "billing", "p-1", run_status="parked", events=16,
                           rehearsal=Rehearsal("breaks", "signal 'review' with a recorded payload",
                                               error="the workflow task failed: ValueError: no decision"))
    accepted = ReplayResult(Path("/h/p-2.json"), "temporal", "billing", "p-2", run_status="parked", events=16,
                            rehearsal=Rehearsal("waits"))
    report = build_report([refused, accepted])
    assert exit_code(report) == exit_code(report, in_flight_only=True) == 1
    assert "1 in-flight run the engine refuses to resume" in summary_sentence(report)
    text = render_text(report)
    assert ("  on resume (1 in flight, rehearsed on the engine): the engine refuses the resume: the workflow task "
            "failed: ValueError: no decision: p-1") in text.splitlines()
    assert exit_code(build_report([accepted])) == 0


def test_a_prompt_the_parked_runs_have_not_reached_is_named_without_an_empty_command_pair() -> None:
    """Under ``prompts-pending = fail`` a parked run fails on a prompt it uses after its wait; no recorded command
    differs, so the group says where (the resume point) and the message names the prompt and both versions,
    never "recorded nothing / code now nothing / line unknown"."""
    from replaytest.impact.report import render_markdown, render_text
    from replaytest.replay.adapter import ReplayOptions
    from replaytest.replay.engine import check_pending_prompts

    results = []
    for workflow_id in ("notice-1", "notice-2"):
        result = ReplayResult(Path(f"/h/{workflow_id}.json"), "journal", "billing", workflow_id, run_status="parked", events=3)
        check_pending_prompts(result, "parked", {"notice": "v1"}, {"notice": "v2"}, (), ReplayOptions(prompts_pending="fail"))
        results.append(result)
    report = build_report(results)
    [impact] = report.workflows
    [group] = impact.groups
    assert ids(group.in_flight) == ["notice-1", "notice-2"]
    text, markdown = render_text(report), render_markdown(report)
    for rendered in (text, markdown):
        assert "nothing" not in rendered and "line unknown" not in rendered, rendered
        assert "at the resume point (a prompt the runs use after it changed)" in rendered
        assert "will use notice v2, started under v1" in rendered


def test_the_summary_line_of_a_prompt_drift_offers_no_guard() -> None:
    """impact has no guard for a changed prompt; the one-line summary points at what it does report."""
    from replaytest.impact.grouping import summary_lines

    point = {"engine": "journal", "type": "billing", "kind": "prompt-drift", "command": None, "path": "app.py",
             "line": 12, "position": None, "in_flight": True}
    [line] = summary_lines([point])
    assert line == ("1 in-flight run of billing breaks (app.py:12); a prompt change: run `replaytest impact` "
                    "for the runs that use it")
    [step] = summary_lines([{**point, "kind": "command-mismatch", "command": ["step", "a"], "position": 3}])
    assert step.endswith("; run `replaytest impact` for the guard")
