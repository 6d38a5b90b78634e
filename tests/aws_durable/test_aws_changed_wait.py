"""A wait whose duration the code changed, replayed for an execution already waiting on it (the order history
cut at its ``cool_off`` wait, the wait still ``STARTED``): the SDK answers a started wait from its checkpoint
and the service ends it when it scheduled it, so the execution keeps the recorded duration, and replay says so
in a note naming the wait, its line and both durations. That the SDK and the local runner do keep it is
``tests/impact_e2e/test_impact_e2e_differential_aws.py::test_a_changed_wait_keeps_the_waiting_executions_end_as_the_sdk_does``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_kit import APP_SOURCE, line_of, run_cli

COOL_OFF = 'context.wait(Duration.from_seconds(2), name="cool_off")'
SLEEPING = ("this run is already sleeping on it and keeps the recorded duration (the engine fires it when it was "
            "due); runs that reach it later sleep the new one")


def _small_order(imported) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    (history,) = [history for history in map(json.loads, (path.read_text(encoding="utf-8") for path in imported.histories.glob("*.json")))
                  if any(event["name"] == "cool_off" for event in history["events"])]
    return history


def _waiting_on_cool_off(imported) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The small order as if the history ended while it waited on ``cool_off`` (as the import writes one)."""
    history = _small_order(imported)
    index = next(index for index, event in enumerate(history["events"]) if event["name"] == "cool_off")
    history["events"] = history["events"][:index + 1]
    history["events"][-1]["aws"]["status"] = "STARTED"
    history.update(status="parked", waiting={"kind": "timer", "name": "cool_off"}, result=None)
    return history


def _replay(folder: Path, history: dict[str, Any], new: str | None = None) -> tuple[Path, dict[str, Any]]:
    source = APP_SOURCE.read_text(encoding="utf-8")
    if new is not None:
        assert source.count(COOL_OFF) == 1
        source = source.replace(COOL_OFF, new)
    app = folder / "cooling_app.py"
    app.write_text(source, encoding="utf-8")
    path = folder / "history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    done = run_cli("replay", "--format", "json", str(path), "-w", "cooling_app:FUNCTIONS", cwd=folder)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (result,) = json.loads(done.stdout)["results"]
    return app, result


def _sleeping_notes(result: dict[str, Any]) -> list[str]:
    return [note for note in result["notes"] if note.endswith(SLEEPING)]


def test_an_execution_waiting_on_a_lengthened_wait_keeps_the_recorded_duration_as_a_note_says(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app, result = _replay(tmp_path, _waiting_on_cool_off(imported), COOL_OFF.replace("(2)", "(3600)"))
    assert result["status"] == "passed", result
    line = line_of(app, COOL_OFF.replace("(2)", "(3600)"))
    assert _sleeping_notes(result) == [f"wait 'cool_off' at cooling_app.py:{line} now sleeps 3600 s, recorded 2 s: {SLEEPING}"]


def test_no_note_when_the_wait_is_unchanged_finished_or_its_duration_unrecorded(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    longer = COOL_OFF.replace("(2)", "(3600)")
    _, unchanged = _replay(tmp_path, _waiting_on_cool_off(imported))
    assert unchanged["status"] == "passed" and _sleeping_notes(unchanged) == []
    # A finished execution's wait is over: the SDK skips it whatever its duration now.
    _, finished = _replay(tmp_path, _small_order(imported), longer)
    assert finished["status"] == "passed" and _sleeping_notes(finished) == []
    # Without the recorded duration there is nothing to compare (an API response without WaitStarted's Duration).
    history = _waiting_on_cool_off(imported)
    history["events"][-1].pop("duration_s")
    _, unrecorded = _replay(tmp_path, history, longer)
    assert unrecorded["status"] == "passed" and _sleeping_notes(unrecorded) == []
