"""Malformed Temporal histories are refused before the Replayer sees them: sdk-core panics on them and
the replay then waits forever (found by fuzzing ``hello_timer_history.json``: deleting, duplicating or
swapping events). The report names the file and the event."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import temporal_wf_hello as hello

from replaytest.plugins.temporal.history import sequence_problem

HERE = Path(__file__).resolve().parent


def _events(name: str = "hello_timer_history.json") -> list[dict]:
    return json.loads((HERE / "histories" / name).read_text(encoding="utf-8"))["events"]


def _write(tmp_path: Path, events: list[dict], renumber: bool) -> Path:
    if renumber:
        for index, event in enumerate(events):
            event["eventId"] = str(index + 1)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"events": events}), encoding="utf-8")
    return path


def _pairs(events: list[dict]) -> list[tuple[str, str]]:
    return [(event.get("eventId"), event.get("eventType")) for event in events]


def test_recorded_histories_are_well_formed() -> None:
    for path in sorted((HERE / "histories").glob("*.json")):
        assert sequence_problem(_pairs(json.loads(path.read_text(encoding="utf-8"))["events"])) is None, path


@pytest.mark.parametrize(
    ("mutate", "renumber", "message"),
    [
        # Deleting the first WorkflowTaskCompleted: core panicked ("should be WFT completed, failed, or
        # timed out") and the replay hung.
        (lambda ev: ev.pop(3), True, "event #4 is ActivityTaskScheduled, but a started workflow task must be followed"),
        (lambda ev: ev.pop(3), False, "event #4 has eventId 5; ids must run 1, 2, 3, … in order"),
        (lambda ev: ev.insert(3, copy.deepcopy(ev[2])), True, "event #4 is WorkflowTaskStarted, but a started"),
        (lambda ev: ev.__setitem__(slice(3, 5), [ev[4], ev[3]]), True, "event #4 is ActivityTaskScheduled"),
        (lambda ev: ev[10].__setitem__("eventType", "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"), False,
         "event #11 completes a workflow task that was not started"),
        (lambda ev: ev.pop(0), True, "the first event is WorkflowTaskScheduled, not WorkflowExecutionStarted"),
        (lambda ev: ev[5].pop("eventType"), False, "event #6 has no event type"),
    ],
)
def test_sequence_problem_names_the_event(mutate, renumber, message) -> None:
    events = _events()
    mutate(events)
    if renumber:
        for index, event in enumerate(events):
            event["eventId"] = str(index + 1)
    found = sequence_problem(_pairs(events))
    assert found is not None and message in found[1]


def test_replay_of_a_history_core_panics_on_is_an_immediate_error(tmp_path: Path, replay) -> None:
    events = _events()
    del events[3]
    path = _write(tmp_path, events, renumber=True)
    result = replay(path, hello.Hello)
    assert result.status == "error"
    assert result.error == (
        f"{path}: malformed Temporal history: event #4 is ActivityTaskScheduled, but a started workflow task "
        "must be followed by its completion, failure or time-out"
    )


def test_cli_replay_of_the_panicking_history_exits_2_quickly(tmp_path: Path) -> None:
    events = _events()
    del events[3]
    path = _write(tmp_path, events, renumber=True)
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", str(path), "--workflows", "temporal_wf_hello:Hello"],
        cwd=HERE, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "malformed Temporal history: event #4" in run.stdout
    assert "panicked" not in run.stderr
