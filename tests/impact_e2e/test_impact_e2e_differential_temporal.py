"""The engine is the judge, run by run: for each kind of change a team makes, two fresh dispute runs are parked
at the review wait on the real Temporal dev server and added to the scenario's histories; ``replaytest impact``
predicts what each does when it resumes on the changed code; then one is really resumed on the server with the
changed code (unguarded), the guard impact offers is written with ``--fix``, impact predicts again, and the
other is resumed on the guarded code. Every prediction must be what the server did: ``breaks`` (a workflow task
failed), ``new`` (it scheduled the changed command after the signal) or ``old``."""

from __future__ import annotations

import json
import shutil

import impact_temporal_kit as kit_module
import pytest
from impact_kit import ScenarioKit, edit_once, impact_json, predicted_resume, predicted_sleep, run_replaytest
from park_temporal_kit import park, resume_until_settled, server_outcome, signal_until, timer_durations

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

V1, WAIT, LOOKUP, AUDIT = kit_module.V1, kit_module.WAIT, kit_module.LOOKUP, kit_module.AUDIT
ACTIVITIES = "ACTIVITIES = [classify_dispute, lookup_invoice, issue_credit, notify_customer, record_audit, escalate_to_finance]\n"
FRAUD = (
    "        await workflow.execute_activity(\n"
    "            record_audit, args=[dispute[\"invoice_id\"], \"fraud screen\"], start_to_close_timeout=TIMEOUT\n"
    "        )\n"
)
TIMER = "        await workflow.sleep(timedelta(seconds=1))\n"
COOL_OFF = "        await workflow.sleep(timedelta(hours=1))\n"
CHILD_CLASS = '''@workflow.defn(name="ReviewAudit")
class ReviewAudit:
    @workflow.run
    async def run(self, invoice_id: str) -> str:
        return f"audited {invoice_id}"


@workflow.defn(name="InvoiceDispute")
'''
CHILD = '        await workflow.execute_child_workflow(ReviewAudit.run, dispute["invoice_id"], id=f"audit-{workflow.info().workflow_id}")\n'


def _with_child(source: str) -> str:
    source = edit_once(source, '@workflow.defn(name="InvoiceDispute")\n', CHILD_CLASS)
    return edit_once(source, "WORKFLOWS = [InvoiceDispute]\n", "WORKFLOWS = [InvoiceDispute, ReviewAudit]\n")


def _renamed(source: str) -> str:
    return (source.replace("async def lookup_invoice(", "async def find_invoice(").replace("(lookup_invoice,", "(find_invoice,")
            .replace(", lookup_invoice,", ", find_invoice,"))


# change -> (the code, the command that tells the new path, what impact and the server must both say for the
# parked run unguarded, and guarded).
CHANGES = {
    "step inserted before the wait": (edit_once(V1, WAIT, FRAUD + WAIT), ("activity", "record_audit"), "new", "old"),
    "step inserted after the wait": (edit_once(V1, WAIT, WAIT + AUDIT), ("activity", "record_audit"), "new", "new"),
    "step renamed": (_renamed(V1), ("activity", "find_invoice"), "breaks", "old"),
    "two steps swapped": (kit_module.CHANGES["lookup_first"], ("activity", "never"), "breaks", "old"),
    # Approved disputes over 200 (the parked ones are 250) go to finance now instead of being credited.
    "branch condition changed": (
        edit_once(V1, kit_module.APPROVED, kit_module.ESCALATE.replace("> 500", "> 200")),
        ("activity", "escalate_to_finance"), "new", "new",
    ),
    "timer added after the wait": (edit_once(V1, WAIT, WAIT + TIMER), ("timer", ""), "new", "new"),
    "child workflow added after the wait": (_with_child(edit_once(V1, WAIT, WAIT + CHILD)), ("child-workflow", "ReviewAudit"), "new", "new"),
}


def _add_history(kit: ScenarioKit, path) -> None:
    shutil.copyfile(path, kit.root / "histories" / path.name)


@pytest.mark.parametrize("change", list(CHANGES))
def test_impact_predicts_each_parked_run_as_the_server_resumes_it(temporal_kit: ScenarioKit, change: str) -> None:
    code, changed, unguarded, guarded = CHANGES[change]
    first, first_queue, first_path = park(temporal_kit)
    second, second_queue, second_path = park(temporal_kit)
    _add_history(temporal_kit, first_path)
    _add_history(temporal_kit, second_path)
    (temporal_kit.root / temporal_kit.code_file).write_text(code, encoding="utf-8")

    _, _, workflow = impact_json(temporal_kit, "--base", temporal_kit.base)
    prediction = predicted_resume(workflow, first)
    assert predicted_resume(workflow, second) == prediction
    served = server_outcome(resume_until_settled(temporal_kit, first, first_queue, "approve"), changed)
    assert (prediction, served) == (unguarded, unguarded), ([(g['kind'], g['issued'], g['recorded'], g['message']) for g in workflow['groups']], workflow.get("resume"))

    fixed = run_replaytest(temporal_kit.root, "impact", "--base", temporal_kit.base, "--fix")
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    if unguarded == "new" and "applied" not in fixed.stdout:
        # Nothing broke that needed a guard (the parked runs take the change, the finished ones replay): the
        # guarded code is the changed code.
        assert guarded == "new"
    _, _, workflow = impact_json(temporal_kit, "--base", temporal_kit.base)
    prediction = predicted_resume(workflow, second)
    served = server_outcome(resume_until_settled(temporal_kit, second, second_queue, "approve"), changed)
    assert (prediction, served) == (guarded, guarded), (fixed.stdout, workflow)


def test_a_changed_timer_keeps_the_sleeping_runs_duration_as_the_server_does(temporal_kit: ScenarioKit) -> None:
    """A cooling-off timer of an hour after the review wait; the code now sleeps two. Two runs of the hour-long
    code, the only histories: one parked at the wait (before the timer), one approved and now sleeping on it. A
    replay cannot tell the durations apart (sdk-core compares none), so impact names the sleeping run in a note
    (it keeps the hour) and says the other issues the timer next (runs that reach it later sleep two). The
    server does just that: resumed on the new code, the run parked before the timer starts a two-hour one; the
    sleeping run, given a workflow task on the new code, fails nothing and starts no other timer (its hour-long
    one stands)."""
    hour = edit_once(V1, WAIT, WAIT + COOL_OFF)
    before, before_queue, before_path = park(temporal_kit, hour)
    sleeping, sleeping_queue, _ = park(temporal_kit, hour)
    asleep = signal_until(temporal_kit, sleeping, sleeping_queue, "approve", "EVENT_TYPE_TIMER_STARTED")
    assert timer_durations(asleep) == ["3600s"]
    for recorded in (temporal_kit.root / "histories").glob("*.json"):
        recorded.unlink()  # v1's runs, without the timer: only the hour-long code's runs are in flight
    _add_history(temporal_kit, before_path)
    sleeping_path = temporal_kit.root / "histories" / f"{sleeping}.json"
    sleeping_path.write_text(json.dumps(asleep), encoding="utf-8")
    commit = run_replaytest(temporal_kit.root, "replay", "--format", "json", str(sleeping_path), str(before_path))
    assert commit.returncode == 0, commit.stdout + commit.stderr  # the hour-long code replays both green
    (temporal_kit.root / temporal_kit.code_file).write_text(hour.replace("hours=1", "hours=2"), encoding="utf-8")

    _, document, workflow = impact_json(temporal_kit)
    timer_line = hour.splitlines().index(COOL_OFF.rstrip("\n")) + 1
    sleeping_notes = [note for note in document["summary"]["notes"] if "already sleeping on it" in note]
    assert sleeping_notes == [
        f"timer 1 at dispute_agent.py:{timer_line} now sleeps 7200 s, recorded 3600 s: this run is already sleeping on "
        "it and keeps the recorded duration (the engine fires it when it was due); runs that reach it later sleep the "
        f"new one; already sleeping on it: {sleeping}"]
    predicted = (predicted_sleep(document, workflow, sleeping), predicted_sleep(document, workflow, before))

    # The server: the run parked before the timer sleeps the new duration, the sleeping one keeps its hour.
    resumed = signal_until(temporal_kit, before, before_queue, "approve", "EVENT_TYPE_TIMER_STARTED")
    nudged = signal_until(temporal_kit, sleeping, sleeping_queue, "approve", "EVENT_TYPE_WORKFLOW_TASK_COMPLETED")
    kinds = [event["eventType"] for event in [*nudged["events"], *resumed["events"]]]
    assert "EVENT_TYPE_WORKFLOW_TASK_FAILED" not in kinds, kinds
    assert len(nudged["events"]) > len(asleep["events"])  # the new code did run a workflow task for it
    durations = {"3600s": "recorded", "7200s": "new"}
    served = tuple(durations[duration] for [duration] in (timer_durations(nudged), timer_durations(resumed)))
    assert (predicted, served) == (("recorded", "new"),) * 2, workflow["resume"]


def test_a_negated_guard_sends_the_parked_run_down_the_old_path_as_the_server_does(temporal_kit: ScenarioKit) -> None:
    """The guard impact writes for an activity inserted after the wait, negated by hand (``if not
    workflow.patched(...)``): the SDK answers the check True in the task the review signal starts, so the parked
    run skips the audit. impact judges the path by the guard block, not by the answer: ``old``, as the server
    does when it resumes the run on that code."""
    code, changed, _unguarded, _guarded = CHANGES["step inserted after the wait"]
    parked, queue, path = park(temporal_kit)
    _add_history(temporal_kit, path)
    (temporal_kit.root / temporal_kit.code_file).write_text(code, encoding="utf-8")
    fixed = run_replaytest(temporal_kit.root, "impact", "--base", temporal_kit.base, "--fix")
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    guarded = (temporal_kit.root / temporal_kit.code_file).read_text(encoding="utf-8")
    assert guarded.count("if workflow.patched(") == 1, guarded
    (temporal_kit.root / temporal_kit.code_file).write_text(
        guarded.replace("if workflow.patched(", "if not workflow.patched("), encoding="utf-8")
    _, _, workflow = impact_json(temporal_kit, "--base", temporal_kit.base)
    prediction = predicted_resume(workflow, parked)
    served = server_outcome(resume_until_settled(temporal_kit, parked, queue, "approve"), changed)
    assert (prediction, served) == ("old", "old"), workflow.get("resume")
