"""The resume rehearsal on a real Temporal dev server: an invoice dispute parked at the review wait (run by
v1 of the code), its history rehearsed against changed code with ``replaytest replay --rehearse`` (the
Temporal SDK's own Replayer resumes it one workflow task past its history, the review signal appended),
then the same run actually resumed on the server by a worker running the changed code and sent the same
signal: the commands the server recorded in the first workflow task after the signal must be the ones
the rehearsal said the run would take.

Each test parks its own run (a new workflow id on a new task queue), so tests can resume runs without
touching the scenario's recorded ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impact_kit import ScenarioKit, edit_once, run_replaytest
from impact_temporal_kit import AUDIT, LOOKUP, V1, WAIT
from park_temporal_kit import commands_after_signal, park, resume

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

FILE = "dispute_agent.py"

FRAUD_ACTIVITY = '''@activity.defn
async def check_fraud(invoice_id: str) -> bool:
    return False


@workflow.defn(name="InvoiceDispute")
'''
FRAUD_CHECK = (
    '        if workflow.patched("fraud-check"):\n'
    '            await workflow.execute_activity(check_fraud, dispute["invoice_id"], start_to_close_timeout=TIMEOUT)\n'
)
GUARDED_AUDIT = '        if workflow.patched("audit"):\n' + "".join("    " + line for line in AUDIT.splitlines(True))
ACTIVITIES = "ACTIVITIES = [classify_dispute, lookup_invoice, issue_credit, notify_customer, record_audit, escalate_to_finance]\n"


def _with_fraud_activity(source: str) -> str:
    source = edit_once(source, '@workflow.defn(name="InvoiceDispute")\n', FRAUD_ACTIVITY)
    return edit_once(source, ACTIVITIES, ACTIVITIES.replace("]", ", check_fraud]"))


CHANGES = {
    # A fraud check inserted before the review wait, behind a patch guard: runs parked at the wait already
    # answered the guard (False) in a workflow task they completed.
    "fraud_check_before_wait": _with_fraud_activity(edit_once(V1, LOOKUP, LOOKUP + FRAUD_CHECK)),
    "audit_after_wait": edit_once(V1, WAIT, WAIT + AUDIT),
    "guarded_audit_after_wait": edit_once(V1, WAIT, WAIT + GUARDED_AUDIT),
    # The review moved from a signal to an update: the parked run's history still replays (it recorded no
    # signal), but nothing the rehearsal can deliver makes it go on.
    # The review handler now rejects an empty decision: the resume's workflow task fails.
    "review_rejects_empty": edit_once(
        V1, "        self.decision = decision\n",
        '        if not decision:\n            raise ValueError("a review needs a decision")\n        self.decision = decision\n',
    ),
    "review_by_update": edit_once(V1, "    @workflow.signal\n    def review(", "    @workflow.update\n    def review("),
}


def _line(source: str, text: str) -> int:
    [number] = [number for number, line in enumerate(source.splitlines(), 1) if text in line]
    return number


def rehearse(kit: ScenarioKit, change: str | None, path: Path) -> dict:
    """``replaytest replay --rehearse --format json`` of one parked history against ``change`` (None: v1)."""
    if change is None:
        kit.switch(None)
    else:
        (kit.root / kit.code_file).write_text(CHANGES[change], encoding="utf-8")
    done = run_replaytest(kit.root, "replay", "--rehearse", "--format", "json", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = json.loads(done.stdout)["results"]
    assert (result["status"], result["run_status"]) == ("passed", "parked"), result
    return result


def rehearsed_commands(rehearsal: dict) -> list[tuple[str, str]]:
    return [(c["kind"], c["detail"]["patch_id"] if c["kind"] == "patch" else c["name"]) for c in rehearsal["commands"]]


NEUTRAL = "signal 'review' with a neutral payload (''): no run of InvoiceDispute recorded one"


def test_unchanged_code_resumes_into_the_next_activity_as_the_server_does(temporal_kit: ScenarioKit) -> None:
    run_id, queue, path = park(temporal_kit)
    result = rehearse(temporal_kit, None, path)
    rehearsal = result["rehearsal"]
    notify_line = temporal_kit.line_of("notify_customer, args=") - 1  # the call's first line
    assert rehearsal["outcome"] == "continues"
    assert rehearsal["delivered"] == NEUTRAL
    assert rehearsed_commands(rehearsal) == [("activity", "notify_customer")]
    assert (Path(rehearsal["source"]["path"]).name, rehearsal["source"]["line"]) == (FILE, notify_line)
    assert rehearsal["driver"].startswith("temporalio ") and "Replayer" in rehearsal["driver"]
    assert rehearsal["patch_decisions"] == [] and rehearsal["note"] == "" and rehearsal["error"] is None

    served = resume(temporal_kit, run_id, queue, "")  # the payload the rehearsal delivered
    assert commands_after_signal(served) == rehearsed_commands(rehearsal)


def test_a_guarded_activity_before_the_wait_is_skipped_on_resume_as_the_server_skips_it(temporal_kit: ScenarioKit) -> None:
    run_id, queue, path = park(temporal_kit)
    result = rehearse(temporal_kit, "fraud_check_before_wait", path)
    rehearsal = result["rehearsal"]
    patched_line = _line(CHANGES["fraud_check_before_wait"], 'patched("fraud-check")')
    assert rehearsal["outcome"] == "continues"
    # The engine answered the guard False (it ran in the workflow task before the wait, replaying) and the
    # run goes on past the wait without the fraud check.
    assert [(d["patch_id"], d["taken"]) for d in rehearsal["patch_decisions"]] == [("fraud-check", False)]
    assert rehearsed_commands(rehearsal) == [("activity", "notify_customer")]
    assert rehearsal["note"] == (
        f"the guard's check `patched('fraud-check')` at {FILE}:{patched_line} ran in a workflow task this run "
        "already completed, so it answers False on resume: the run takes the old path"
    )

    served = resume(temporal_kit, run_id, queue, "")
    assert commands_after_signal(served) == rehearsed_commands(rehearsal)
    assert "check_fraud" not in [name for _, name in _all_activities(served)]


def _all_activities(history: dict) -> list[tuple[str, str]]:
    return [("activity", event["activityTaskScheduledEventAttributes"]["activityType"]["name"])
            for event in history["events"] if "activityTaskScheduledEventAttributes" in event]


@pytest.mark.parametrize(
    ("change", "expected", "decisions"),
    [
        ("audit_after_wait", [("activity", "record_audit")], []),
        ("guarded_audit_after_wait", [("patch", "audit"), ("activity", "record_audit")], [("audit", True)]),
    ],
)
def test_an_activity_inserted_after_the_wait_is_taken_on_resume_as_the_server_takes_it(
    temporal_kit: ScenarioKit, change: str, expected: list[tuple[str, str]], decisions: list[tuple[str, bool]],
) -> None:
    run_id, queue, path = park(temporal_kit)
    result = rehearse(temporal_kit, change, path)
    rehearsal = result["rehearsal"]
    assert rehearsal["outcome"] == "continues"
    assert rehearsed_commands(rehearsal) == expected
    assert [(d["patch_id"], d["taken"]) for d in rehearsal["patch_decisions"]] == decisions
    audit_line = _line(CHANGES[change], "record_audit, args=") - 1  # the call's first line
    assert (Path(rehearsal["source"]["path"]).name, rehearsal["source"]["line"]) == (FILE, audit_line)
    if decisions:
        assert "is first reached on resume, so it answers True: the run takes the new path" in rehearsal["note"]

    served = resume(temporal_kit, run_id, queue, "")
    assert commands_after_signal(served) == rehearsed_commands(rehearsal)


def test_a_run_whose_wait_cannot_be_worked_out_gets_a_note_not_a_pass_without_one(temporal_kit: ScenarioKit) -> None:
    _, _, path = park(temporal_kit)
    result = rehearse(temporal_kit, "review_by_update", path)
    assert result["rehearsal"] is None
    assert ("resume not rehearsed: could not work out what the run waits for (no activity or timer in flight, "
            "and the workflow handles no signal)") in result["notes"]


def test_a_resume_whose_workflow_task_fails_breaks_as_it_fails_on_the_server(temporal_kit: ScenarioKit) -> None:
    run_id, queue, path = park(temporal_kit)
    result = rehearse(temporal_kit, "review_rejects_empty", path)
    rehearsal = result["rehearsal"]
    assert (rehearsal["outcome"], rehearsal["delivered"]) == ("breaks", NEUTRAL)
    assert rehearsal["error"] == "the workflow task failed: ValueError: a review needs a decision"
    assert rehearsal["commands"] == []

    served = resume(temporal_kit, run_id, queue, "", task_fails=True)
    [failed] = [event for event in served["events"] if event["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_FAILED"][:1]
    assert failed["workflowTaskFailedEventAttributes"]["failure"]["message"] == "a review needs a decision"
    kinds = [event["eventType"] for event in served["events"]]
    after = kinds[kinds.index("EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"):]
    # No task after the signal completed, so no command of the resumed run was recorded.
    assert not [kind for kind in after if kind in ("EVENT_TYPE_WORKFLOW_TASK_COMPLETED", "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED")]


def test_a_parked_run_gets_the_signal_payload_another_run_of_its_batch_recorded(temporal_kit: ScenarioKit) -> None:
    """Replayed with the decided runs (the first, dispute-1, was approved), the parked run's rehearsal delivers
    the review payload dispute-1 recorded, so it resumes into issue_credit; resumed on the server with that
    same decision it schedules issue_credit too."""
    run_id, queue, path = park(temporal_kit)
    batch = temporal_kit.root / "batch"
    batch.mkdir()
    for recorded in ("dispute-1", "dispute-2", "dispute-3"):
        source = temporal_kit.history_files[recorded]
        (batch / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    (batch / "zz-parked.json").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    temporal_kit.switch(None)
    done = run_replaytest(temporal_kit.root, "replay", "--rehearse", "--format", "json", str(batch))
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["workflow"]["id"]: r for r in json.loads(done.stdout)["results"]}
    rehearsal = results[run_id]["rehearsal"]
    assert rehearsal["delivered"] == "signal 'review' with the payload another run of InvoiceDispute recorded"
    assert rehearsed_commands(rehearsal) == [("activity", "issue_credit")]
    # The finished runs are not rehearsed: they do not resume.
    assert all(results[run]["rehearsal"] is None for run in ("dispute-1", "dispute-2", "dispute-3"))
    served = resume(temporal_kit, run_id, queue, "approve")
    assert commands_after_signal(served) == rehearsed_commands(rehearsal)
