"""The journal resume rehearsal judged by the journal itself: the five recorded dispute runs (two parked at the
reviewer's decision) are replayed with ``rehearse`` against each next version, and each parked run is then
really resumed by a journal ``Worker`` running that version on a copy of the recorded journal, with the
decision the rehearsal delivered. What the worker recorded after the wait must be what the rehearsal said."""

from __future__ import annotations

import inspect
import re
import shutil
from pathlib import Path
from typing import Any

import impact_agent as agent
import pytest
import rehearsal_agent as versions
from impactkit import RUNS, record_runs, tagged_line

from replaytest.history import load_history
from replaytest.impact.grouping import build_report
from replaytest.impact.resume import attach_guard_blocks, resume_groups
from replaytest.journal import Journal, Timing, Worker
from replaytest.plugins.journal import PLUGIN
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.batch import replay_many
from replaytest.replay.report import display_path
from replaytest.replay.runner import load_workflows

PARKED = ("dispute-parked-1", "dispute-parked-2")
# What the rehearsal delivers: the first approved run's decision, as it recorded it.
DECISION = {"approve": True}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("disputes")
    record_runs(folder, agent.invoice_dispute)
    return folder


def rehearse(recorded: Path, version: Any) -> dict[str, Any]:
    workflows = load_workflows((), None, [version])
    assert PLUGIN.replayer is not None
    results = replay_many(sorted((recorded / "histories").glob("*.json")), [PLUGIN.replayer], workflows,
                          ReplayOptions(rehearse=True))
    return {result.workflow_id: result for result in results}


def worker_resume(recorded: Path, tmp_path: Path, version: Any, run: str) -> tuple[str | None, list[tuple[str, str, str | None]]]:
    """Resume the parked run on a copy of the recorded journal with ``version`` and the delivered decision: the
    type of the error it failed with (None: it did not fail) and the commands the worker recorded from the wait on
    (kind, name, patch id)."""
    copy = tmp_path / f"{run}-{getattr(version, '__name__', 'v')}.sqlite3"
    shutil.copyfile(recorded / "journal.sqlite3", copy)
    with Journal(copy, clock=lambda: 1_700_000_100.0) as journal:
        run_id = f"run-{run.removeprefix('dispute-')}"
        before = max(journal.events(run_id))
        journal.signal(run_id, "decision", DECISION)
        with Worker(journal, [version], timing=Timing(sleep=lambda seconds: None)) as worker:
            worker.run_until_idle()
        error = journal.error(run_id) if journal.status(run_id) == "failed" else None
        events = journal.events(run_id)
        return (None if error is None else error.type,
                [(row.kind, row.name, row.patch_id) for seq, row in sorted(events.items()) if seq >= before])


def resumed(recorded: Path, tmp_path: Path, version: Any, run: str) -> list[tuple[str, str, str | None]]:
    return worker_resume(recorded, tmp_path, version, run)[1]


def test_the_unchanged_code_resumes_into_the_credit_note_as_the_worker_does(recorded: Path, tmp_path: Path) -> None:
    results = rehearse(recorded, agent.invoice_dispute)
    for run in PARKED:
        rehearsal = results[run].rehearsal
        assert rehearsal is not None and rehearsal.outcome == "continues"
        assert rehearsal.delivered == "signal 'decision' with a recorded payload"
        assert [(c.kind, c.name) for c in rehearsal.commands] == [("step", "issue credit note")]
        worker = resumed(recorded, tmp_path, agent.invoice_dispute, run)
        assert worker[:2] == [("signal", "decision", None), ("step", "issue credit note", None)]


def test_a_guard_before_the_wait_answers_false_on_resume_as_the_worker_does(recorded: Path, tmp_path: Path) -> None:
    """The parked runs passed the guard's position before the deploy: the journal holds their wait there."""
    results = rehearse(recorded, versions.check_before_wait_guarded)
    report = build_report(list(results.values()))
    [impact] = report.workflows
    for run in PARKED:
        rehearsal = results[run].rehearsal
        assert rehearsal is not None
        assert [(d.patch_id, d.taken) for d in rehearsal.patch_decisions] == [("dispute-check-fraud", False)]
        assert [(c.kind, c.name) for c in rehearsal.commands] == [("step", "issue credit note")]
        worker = resumed(recorded, tmp_path, versions.check_before_wait_guarded, run)
        assert ("step", "check fraud", None) not in worker and all(kind != "marker" for kind, _n, _p in worker)
        assert worker[1] == ("step", "issue credit note", None)
    [(verdict, runs)] = [(v, r) for v, r in resume_groups(impact) if {x.workflow_id for x in r} == set(PARKED)]
    assert verdict.path == "old"
    assert verdict.text == "take the old path: the engine answers patch 'dispute-check-fraud' False for them"


def test_a_negated_guard_after_the_wait_sends_the_parked_runs_down_the_old_path_as_the_worker_does(
    recorded: Path, tmp_path: Path,
) -> None:
    """``if not ctx.patched(...)``: the worker answers the check True past the parked runs' history, so they skip
    the audit log. The verdict follows the block the answer runs under the guard's test, not the answer."""
    results = rehearse(recorded, versions.audit_after_wait_negated)
    [impact] = build_report(list(results.values())).workflows
    attach_guard_blocks([impact], [Path(inspect.getfile(versions))])
    for run in PARKED:
        rehearsal = results[run].rehearsal
        assert rehearsal is not None
        assert [(d.patch_id, d.taken) for d in rehearsal.patch_decisions] == [("dispute-audit-log-negated", True)]
        assert [(c.kind, c.name) for c in rehearsal.commands] == [("step", "issue credit note")]
        worker = resumed(recorded, tmp_path, versions.audit_after_wait_negated, run)
        assert worker[1:3] == [("marker", "patched", "dispute-audit-log-negated"), ("step", "issue credit note", None)]
    [(verdict, runs)] = resume_groups(impact)
    assert sorted(x.workflow_id or "" for x in runs) == list(PARKED)
    assert (verdict.path, verdict.text) == ("old", "take the old path: the engine answers patch 'dispute-audit-log-negated' "
                                                   "True for them, which runs the guard's old block under its test")


def test_a_step_after_the_wait_is_what_the_worker_runs_next(recorded: Path, tmp_path: Path) -> None:
    results = rehearse(recorded, versions.audit_after_wait)
    [impact] = build_report(list(results.values())).workflows
    for run in PARKED:
        rehearsal = results[run].rehearsal
        assert rehearsal is not None and [(c.kind, c.name) for c in rehearsal.commands] == [("step", "write audit log")]
        assert resumed(recorded, tmp_path, versions.audit_after_wait, run)[1] == ("step", "write audit log", None)
    assert [(v.path, sorted(x.workflow_id or "" for x in r)) for v, r in resume_groups(impact)] == [
        ("new", list(PARKED))]


def test_a_guard_after_the_wait_answers_true_on_resume_as_the_worker_does(recorded: Path, tmp_path: Path) -> None:
    results = rehearse(recorded, versions.audit_after_wait_guarded)
    for run in PARKED:
        rehearsal = results[run].rehearsal
        assert rehearsal is not None
        assert [(d.patch_id, d.taken) for d in rehearsal.patch_decisions] == [("dispute-write-audit-log", True)]
        assert [(c.kind, c.name) for c in rehearsal.commands] == [("step", "write audit log")]
        worker = resumed(recorded, tmp_path, versions.audit_after_wait_guarded, run)
        assert worker[1:3] == [("marker", "patched", "dispute-write-audit-log"), ("step", "write audit log", None)]


def test_no_step_body_runs_while_rehearsing(recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(versions, "write_audit_log", lambda *args: ran.append("audit") or {"logged": True})
    monkeypatch.setattr(versions, "issue_credit_note",
                        lambda *args, **kwargs: ran.append("credit") or {"credit_note": "CN", "amount": 1})
    rehearse(recorded, versions.audit_after_wait)
    assert ran == []
    # The control: the worker itself does run them, so the stand-ins would have shown a rehearsal that did.
    resumed(recorded, tmp_path, versions.audit_after_wait, PARKED[0])
    assert ran[:2] == ["audit", "credit"]


# version (unguarded, then guarded as impact's guard writes it) -> the command that tells the new path, and what
# impact and the journal worker must both say for each parked run (parked-1 is INV-100 at 120, parked-2 INV-200
# at 940; the decision delivered approves).
DIFFERENTIAL = {
    "step inserted before the wait": (versions.check_before_wait, versions.check_before_wait_guarded, ("step", "check fraud"),
                                      ("breaks", "breaks"), ("old", "old")),
    "step inserted after the wait": (versions.audit_after_wait, versions.audit_after_wait_guarded, ("step", "write audit log"),
                                     ("new", "new"), ("new", "new")),
    "step renamed": (versions.invoice_renamed, versions.invoice_renamed_guarded, ("step", "fetch invoice"),
                     ("breaks", "breaks"), ("old", "old")),
    "two steps swapped": (versions.lookups_swapped, versions.lookups_swapped_guarded, ("step", "never"),
                          ("breaks", "breaks"), ("old", "old")),
    # Unguarded, only the large dispute escalates; guarded, both take the new branch (the small one is credited
    # there, as before).
    "branch condition changed": (versions.escalating, versions.escalating_guarded, ("step", "escalate to finance"),
                                 ("old", "new"), ("new", "new")),
    "timer added after the wait": (versions.timer_after_wait, versions.timer_after_wait_guarded, ("timer", "cool off"),
                                   ("new", "new"), ("new", "new")),
}


def _predicted(results: dict[str, Any], run: str, changed: tuple[str, str]) -> str:
    """What impact says of the run: ``breaks`` (a group, or the engine refusing the resume), ``new`` (the report
    says it takes the new path, or the engine issues the changed command next), else ``old``."""
    [impact] = build_report(list(results.values())).workflows
    if any(results[run] in group.in_flight for group in impact.groups):
        return "breaks"
    [verdict] = [verdict for verdict, runs in resume_groups(impact) if results[run] in runs]
    rehearsal = results[run].rehearsal
    if verdict.path in ("new", "breaks", "unrehearsed"):
        return verdict.path
    issued = rehearsal is not None and any((view.kind, view.name) == changed for view in rehearsal.commands)
    return "new" if issued else "old"


def _worker_outcome(recorded: Path, tmp_path: Path, version: Any, run: str, changed: tuple[str, str]) -> str:
    error, commands = worker_resume(recorded, tmp_path, version, run)
    if error == "JournalDivergence":
        return "breaks"
    after = [(kind, name) for kind, name, _patch in commands[1:]]  # past the wait
    # The new path: the changed command ran, or the guard's marker was recorded (the guarded branch taken).
    return "new" if changed in after or ("marker", "patched") in after else "old"


@pytest.mark.parametrize("change", list(DIFFERENTIAL))
def test_impact_predicts_each_parked_run_as_the_journal_worker_resumes_it(recorded: Path, tmp_path: Path, change: str) -> None:
    unguarded, guarded, changed, expected_unguarded, expected_guarded = DIFFERENTIAL[change]
    for version, expected in ((unguarded, expected_unguarded), (guarded, expected_guarded)):
        results = rehearse(recorded, version)
        predicted = tuple(_predicted(results, run, changed) for run in PARKED)
        worker = tuple(_worker_outcome(recorded, tmp_path, version, run, changed) for run in PARKED)
        assert (predicted, worker) == (expected, expected), version.__name__


# Each guarded version's patch id: the check a fresh run of that version is driven to.
GUARD_IDS = {
    versions.check_before_wait_guarded: "dispute-check-fraud",
    versions.audit_after_wait_guarded: "dispute-write-audit-log",
    versions.invoice_renamed_guarded: "invoice-dispute-fetch-invoice",
    versions.lookups_swapped_guarded: "invoice-dispute-load-payments",
    versions.escalating_guarded: "invoice-dispute-escalate-to-finance",
    versions.timer_after_wait_guarded: "invoice-dispute-timer",
}


def _after_marker(commands: list[tuple[str, str]]) -> tuple[str, str] | None:
    marker = next((index for index, command in enumerate(commands) if command[0] in ("patch", "marker")), None)
    return None if marker is None or marker + 1 >= len(commands) else commands[marker + 1]


@pytest.mark.parametrize("change", list(DIFFERENTIAL))
def test_a_fresh_run_of_each_guarded_version_issues_after_the_check_what_a_new_worker_run_does(
    recorded: Path, tmp_path: Path, change: str,
) -> None:
    """``replay --fresh-run``: a new run of the guarded code from a recorded run's input, by the worker's own
    backend with every step stubbed; the journal worker then really starts a new run with that input (and the
    decision that run recorded) and must record the same command right after the guard's marker."""
    guarded = DIFFERENTIAL[change][1]
    patch_id = GUARD_IDS[guarded]
    workflows = load_workflows((), None, [guarded])
    assert PLUGIN.replayer is not None
    results = replay_many(sorted((recorded / "histories").glob("*.json")), [PLUGIN.replayer], workflows,
                          ReplayOptions(rehearse=True, fresh_run=(patch_id,)))
    [source] = [result for result in results if result.fresh_run is not None]
    fresh = source.fresh_run
    assert fresh is not None and source.in_flight is False  # a finished run's input, first
    assert [(d.patch_id, d.taken) for d in fresh.patch_decisions] == [(patch_id, True)]
    said = _after_marker([(view.kind, view.name) for view in fresh.commands])
    assert said is not None

    history = load_history(source.history_path)
    decision = next(history.event_result(event) for event in history.events if event.kind == "signal")
    with Journal(tmp_path / "new.sqlite3", clock=lambda: 1_700_000_500.0) as journal:
        journal.start(guarded, history.input, run_id="run-new", workflow_id="dispute-new")
        with Worker(journal, [guarded], timing=Timing(sleep=lambda seconds: None)) as worker:
            worker.run_until_idle()
            journal.signal("run-new", "decision", decision)
            worker.run_until_idle()
        rows = [(row.kind, row.name) for _seq, row in sorted(journal.events("run-new").items())]
    assert _after_marker(rows) == said


def test_guards_on_branches_no_one_run_takes_each_get_a_fresh_run_from_an_input_that_reaches_it(recorded: Path) -> None:
    """One input cannot reach a guard in the approved branch and one in the rejected branch: a fresh run is
    made from an approved run's input and another from the rejected run's, each answering its own check."""
    version = versions.audit_each_branch_guarded
    ids = ("dispute-audit-credit", "dispute-audit-rejection")
    assert PLUGIN.replayer is not None
    results = replay_many(sorted((recorded / "histories").glob("*.json")), [PLUGIN.replayer],
                          load_workflows((), None, [version]), ReplayOptions(rehearse=True, fresh_run=ids))
    made = {result.workflow_id: result.fresh_run for result in results if result.fresh_run is not None}
    assert sorted(made) == ["dispute-approved-1", "dispute-rejected-1"]
    answered = {run: [(d.patch_id, d.taken) for d in fresh.patch_decisions] for run, fresh in made.items() if fresh}
    assert answered == {"dispute-approved-1": [("dispute-audit-credit", True)],
                        "dispute-rejected-1": [("dispute-audit-rejection", True)]}
    for fresh in made.values():
        assert fresh is not None
        assert _after_marker([(view.kind, view.name) for view in fresh.commands]) == ("step", "write audit log")


# Recorded with ``cooling_off`` (an hour-long timer after the wait): one run parked at the wait, before the timer,
# and one approved and sleeping on it; the journal's clock stands at RECORDED_AT.
COOLING_RUNS = {"cool-before": (RUNS["parked-1"][0], None), "cool-sleeping": (RUNS["parked-2"][0], {"approve": True})}
RECORDED_AT = 1_700_000_000.0


def cooling_worker(folder: Path, tmp_path: Path, now: float) -> dict[str, tuple[str, float]]:
    """The journal worker running ``cooling_off_longer`` at ``now`` on a copy of the recorded journal, the run
    parked before the timer given its decision: per run, its status and how long its cooling-off timer lasts
    (its due time less when it started: the recorded clock for the sleeping run, ``now`` for the other)."""
    copy = tmp_path / "cooling-copy.sqlite3"
    shutil.copyfile(folder / "journal.sqlite3", copy)
    with Journal(copy, clock=lambda: now) as journal:
        journal.signal("run-cool-before", "decision", DECISION)
        with Worker(journal, [versions.cooling_off_longer], timing=Timing(sleep=lambda seconds: None)) as worker:
            worker.run_until_idle()
        found = {}
        for run, started in (("cool-before", now), ("cool-sleeping", RECORDED_AT)):
            [due] = [row.due_at for row in journal.events(f"run-{run}").values() if row.name == "cool off"]
            found[run] = (journal.status(f"run-{run}"), due - started)
        return found


def test_a_changed_timer_keeps_the_sleeping_runs_due_time_as_the_journal_worker_does(tmp_path: Path) -> None:
    """The timer now lasts two hours. The journal keeps the due time it recorded when a timer started, so impact
    names the run already sleeping on it in a note (it keeps the hour) and says the run parked before it issues
    the timer next (it sleeps the new two hours). The worker, an hour and a bit after the recording, agrees: the
    sleeping run wakes when its hour was due and finishes; the other, given its decision, sleeps two hours."""
    folder = tmp_path / "cooling"
    record_runs(folder, versions.cooling_off, COOLING_RUNS)
    results = rehearse(folder, versions.cooling_off_longer)
    report = build_report(list(results.values()))
    where = f"{display_path(inspect.getsourcefile(versions.cooling_off_longer) or '')}:{tagged_line(versions.cooling_off_longer, 'cool off')}"
    assert [note for note in report.notes if "already sleeping on it" in note] == [
        f"timer 'cool off' at {where} now sleeps 7200 s, recorded 3600 s: this run is already sleeping on it and keeps "
        "the recorded duration (the engine fires it when it was due); runs that reach it later sleep the new one; "
        "already sleeping on it: dispute-cool-sleeping"]
    [impact] = report.workflows
    verdicts = {run.workflow_id: verdict for verdict, runs in resume_groups(impact) for run in runs}
    predicted = tuple(_predicted_sleep(report.notes, verdicts[f"dispute-{run}"], f"dispute-{run}") for run in ("cool-sleeping", "cool-before"))

    worker = cooling_worker(folder, tmp_path, RECORDED_AT + 3700)
    assert {run: status for run, (status, _) in worker.items()} == {"cool-before": "parked", "cool-sleeping": "completed"}
    durations = {3600.0: "recorded", 7200.0: "new"}  # the sleeping run kept its hour, the other sleeps the new two
    engine = tuple(durations[worker[run][1]] for run in ("cool-sleeping", "cool-before"))
    assert (predicted, engine) == (("recorded", "new"),) * 2, verdicts


def _predicted_sleep(notes: list[str], verdict: Any, workflow_id: str) -> str:
    """``recorded`` (a note names the run as already sleeping on the changed timer), ``new`` (its rehearsal reaches
    a timer next: it sleeps the new duration), else ``none``."""
    for note in notes:
        if "; already sleeping on it: " in note and workflow_id in note.rsplit("; already sleeping on it: ", 1)[1].split(", "):
            return "recorded"
    return "new" if re.search(r"the engine issues timer '[^']+' next", verdict.text) else "none"
