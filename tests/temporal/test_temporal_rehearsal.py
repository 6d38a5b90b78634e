"""The resume rehearsal on what a run waits for other than a signal: the recorded Hello run (activity
``say``, a 0.1 s timer, ``say`` again) cut where it was in flight — a timer pending, an activity in flight, a
workflow task pending — is resumed by temporalio's Replayer one workflow task past the cut, with the timer
fired or the activity completed; what the code issues there must be what the full recorded run did next.
(The signal path, and its check against a real server, is in tests/impact_e2e.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporal_wf_hello import Hello

from replaytest.plugins.temporal.replayer import TemporalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult

HERE = Path(__file__).resolve().parent


def rehearsed(replayer: TemporalReplayer, tmp_path: Path, last_event: int, rehearse: bool = True) -> ReplayResult:
    document = json.loads((HERE / "histories" / "hello_timer_history.json").read_text(encoding="utf-8"))
    document["events"] = document["events"][:last_event]
    path = tmp_path / f"hello_cut_at_{last_event}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = replayer.replay(path, WorkflowSet((Hello,)), ReplayOptions(rehearse=rehearse))
    assert result.status == "passed", result.error or result.divergence
    return result


def steps(result: ReplayResult) -> list[tuple[str, str]]:
    assert result.rehearsal is not None, result.notes
    return [(view.kind, view.name) for view in result.rehearsal.commands]


def test_a_pending_timer_is_fired_and_the_run_schedules_the_second_activity(
    temporal_replayer: TemporalReplayer, tmp_path: Path
) -> None:
    result = rehearsed(temporal_replayer, tmp_path, 11)  # timer 1 started at event 11, not fired
    assert result.in_flight
    assert result.rehearsal is not None
    assert (result.rehearsal.outcome, result.rehearsal.delivered) == ("continues", "timer 1 (started at event 11) fired")
    assert steps(result) == [("activity", "say")]  # event 16 of the full run


def test_an_activity_in_flight_completes_with_no_recorded_result_and_the_run_starts_the_timer(
    temporal_replayer: TemporalReplayer, tmp_path: Path
) -> None:
    result = rehearsed(temporal_replayer, tmp_path, 6)  # say scheduled (5) and started (6)
    assert result.rehearsal is not None
    assert result.rehearsal.outcome == "continues"
    assert result.rehearsal.delivered == (
        "activity 'say' (event 5) completed with no result (null: the history records no result of this activity type)"
    )
    assert steps(result) == [("timer", "1")]  # event 11 of the full run


def test_the_last_activity_completes_with_a_recorded_result_and_the_run_completes(
    temporal_replayer: TemporalReplayer, tmp_path: Path
) -> None:
    result = rehearsed(temporal_replayer, tmp_path, 16)  # the second say scheduled, not started
    assert result.rehearsal is not None
    assert result.rehearsal.outcome == "completes"
    assert result.rehearsal.delivered == "activity 'say' (event 16) completed with the result recorded at event 7"
    assert steps(result) == [("complete", "")]


def test_a_pending_workflow_task_runs_with_nothing_delivered(temporal_replayer: TemporalReplayer, tmp_path: Path) -> None:
    result = rehearsed(temporal_replayer, tmp_path, 8)  # say completed (7), the next task scheduled (8)
    assert result.rehearsal is not None
    assert (result.rehearsal.outcome, result.rehearsal.delivered) == ("continues", "")
    assert steps(result) == [("timer", "1")]
    assert "a workflow task was pending" in result.rehearsal.note


@pytest.mark.parametrize("last_event", [11, 22])
def test_no_rehearsal_unless_asked_for_and_in_flight(
    temporal_replayer: TemporalReplayer, tmp_path: Path, last_event: int
) -> None:
    asked = last_event == 22  # the completed run: asked for, but nothing to resume
    result = rehearsed(temporal_replayer, tmp_path, last_event, rehearse=asked)
    assert result.rehearsal is None
    assert not [note for note in result.notes if "rehearsed" in note]
