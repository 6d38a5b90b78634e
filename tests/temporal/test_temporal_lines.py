"""Which line of workflow code a Temporal divergence names, for timers, patches, signals and updates.

A real dev server records the history of ``temporal_wf_expenses.ExpenseClaim`` (a reviewer adds a note
through an update, then decides through a signal); each changed version of the workflow is replayed
against it with temporalio's Replayer. The expected lines are those of ``temporal_wf_expenses.py``,
written out here by hand.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import temporal_wf_expenses as expenses
from temporal_devserver import running_dev_server

from replaytest.replay.report import render_text

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

WORKFLOW_FILE = "temporal_wf_expenses.py"
CLAIM = {"employee": "ana", "amount": 420, "purpose": "train tickets to the Lisbon customer visit"}


@pytest.fixture(scope="module")
def claim_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("temporal-lines")
    with running_dev_server(folder) as server:
        path = folder / "claim_history.json"
        path.write_text(asyncio.run(_record_claim(server.address)), encoding="utf-8")
        yield path


async def _record_claim(address: str) -> str:
    """Run one claim to its end; the reviewer acts only once the workflow waits for the decision, so
    the note (update) and the decision (signal) come after the policy check in the history."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"claims-{uuid.uuid4()}"
    activities = [expenses.summarise_claim, expenses.check_policy, expenses.notify]
    async with Worker(client, task_queue=queue, workflows=[expenses.ExpenseClaim], activities=activities):
        handle = await client.start_workflow("ExpenseClaim", CLAIM, id=f"claim-{uuid.uuid4()}", task_queue=queue)
        for _ in range(200):
            history = await handle.fetch_history()
            completed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]
            last = history.events[-1].event_type
            if len(completed) == 2 and last == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                break
            await asyncio.sleep(0.05)
        assert await handle.execute_update("add_note", "receipts attached") == 1
        await handle.signal("decide", "rejected")
        result = await handle.result()
        assert result == "sent: ana claims 420 for train tickets to the Lisbon customer visit; within policy: rejected"
        return (await handle.fetch_history()).to_json()


def test_the_recording_code_replays_cleanly(replay, claim_history):
    result = replay(claim_history, expenses.ExpenseClaim)
    assert result.status == "passed", render_text(result)


# (changed workflow, divergence kind, recorded (kind, name), the line the divergence names, text of the message)
CHANGES = [
    # A timer added before the wait: it stands where the history accepted the reviewer's note.
    (expenses.ExpenseClaimExtraTimer, "command-mismatch", ("update", "add_note"), 74,
     "accepted update 'add_note', the code now starts a timer"),
    # The same timer moved before the summary.
    (expenses.ExpenseClaimTimerBeforeSummary, "command-mismatch", ("activity", "summarise_claim"), 99,
     "scheduled activity 'summarise_claim', the code now starts a timer"),
    # The cool-off timer removed: the notification now comes where the history started it.
    (expenses.ExpenseClaimWithoutCoolOff, "command-mismatch", ("timer", "1"), 90,
     "started timer '1' (0.050s), the code now schedules activity 'notify'"),
    # workflow.patched("policy-check") removed: the policy check it guarded now runs in the marker's place.
    (expenses.ExpenseClaimPatchRemoved, "patch-mismatch", ("patch", ""), 114,
     "the code schedules activity 'check_policy' at temporal_wf_expenses.py:114 in its place"),
    # The patch id changed: the call with the new id is named.
    (expenses.ExpenseClaimPatchRenamed, "patch-mismatch", ("patch", ""), 127,
     "the code calls workflow.patched('policy-check-2') at temporal_wf_expenses.py:127, an id the history has no marker for"),
    # The signal handler renamed: the recorded signal finds no handler and the code keeps waiting.
    (expenses.ExpenseClaimSignalRenamed, "missing-command", ("timer", "1"), 158,
     "it waits in workflow.wait_condition (temporal_wf_expenses.py:158); the code has no handler for signal 'decide'"),
    # The wait condition changed: the recorded decision reached its handler (line 44) but no longer satisfies it.
    (expenses.ExpenseClaimStricterWait, "missing-command", ("timer", "1"), 173,
     "it waits in workflow.wait_condition (temporal_wf_expenses.py:173); signal 'decide' (history event"),
    # The update handler now sleeps: its timer (line 207) is where the history completed the update.
    (expenses.ExpenseClaimUpdateSleeps, "command-mismatch", ("WorkflowExecutionUpdateCompleted", ""), 207,
     "recorded WorkflowExecutionUpdateCompleted, the code now starts a timer"),
]


@pytest.mark.parametrize(("workflow", "kind", "recorded", "line", "shown"), CHANGES, ids=[c[0].__name__ for c in CHANGES])
def test_divergence_names_the_line_of_workflow_code(replay, claim_history, workflow, kind, recorded, line, shown):
    result = replay(claim_history, workflow)
    assert result.status == "diverged", render_text(result)
    divergence = result.divergence
    assert divergence.kind == kind
    assert (divergence.recorded.kind, divergence.recorded.name) == recorded
    assert shown in divergence.message
    assert divergence.source is not None, divergence.message
    assert Path(divergence.source.path).name == WORKFLOW_FILE
    assert divergence.source.line == line
    text = render_text(result)
    assert f"{WORKFLOW_FILE}:{line}" in text
    assert "line unknown" not in text


def test_changed_wait_names_the_handler_of_the_recorded_signal(replay, claim_history):
    message = replay(claim_history, expenses.ExpenseClaimStricterWait).divergence.message
    assert "reached its handler at temporal_wf_expenses.py:44" in message  # `def decide`, not its decorator


def test_removed_update_handler_is_named_with_the_wait_it_left_open(replay, claim_history):
    divergence = replay(claim_history, expenses.ExpenseClaimUpdateRemoved).divergence
    assert divergence.kind == "missing-command"
    assert (divergence.recorded.kind, divergence.recorded.name) == ("update", "add_note")
    assert "it waits in workflow.wait_condition (temporal_wf_expenses.py:197)" in divergence.message
    assert "the code has no handler for update 'add_note'" in divergence.message
    assert Path(divergence.source.path).name == WORKFLOW_FILE and divergence.source.line == 197


def test_a_handler_set_at_run_time_is_named_not_reported_missing(replay, claim_history):
    divergence = replay(claim_history, expenses.ExpenseClaimHandlerSetAtRunTime).divergence
    assert divergence.kind == "missing-command"
    assert Path(divergence.source.path).name == WORKFLOW_FILE and divergence.source.line == 247
    assert "reached its handler at temporal_wf_expenses.py:238" in divergence.message  # `def record_decision`
    assert "no handler" not in divergence.message
