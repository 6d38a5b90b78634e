"""Double-run cases from Temporal's own history JSON (the files ``replaytest import temporal`` stores, as
``temporal workflow show --output json`` writes them), read without temporalio.

The case is the started event's workflow type, id and input, with each recorded activity's result as the
stub of that activity at its position among the commands the code issued (activities, timers, patch
markers, local activities, child workflows, signals to other workflows, in history order), which is the
position the Temporal tracer asks for. Only ``json/plain`` payloads are read (the default converter's
encoding): an input in another encoding cannot be a case (use an inputs file); a result in another encoding
is left out (the stub of that name from an inputs file, else null, answers instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from replaytest.fileio import read_regular
from replaytest.history import HistoryError
from replaytest.history.io import parse_json
from replaytest.plugins.temporal.history import (
    attributes,
    command_views,
    decode_json_payload,
    event_type,
    run_status,
    sniff_temporal_json,
)
from replaytest.replay.double_run import DoubleRunCase, DoubleRunInputError

# The events the code's commands made, in the kinds the tracer's commands have (a received signal or
# update, and the close event, are not commands).
_COMMAND_KINDS = frozenset({"activity", "timer", "patch", "local-activity", "marker", "child-workflow",
                            "signal-external", "cancel-external", "activity-cancel", "timer-cancel",
                            "search-attributes", "properties", "nexus-operation"})


def case_from_temporal_history(path: Path, head: bytes) -> DoubleRunCase | None:
    """The case of a Temporal history file; None when ``head`` is not the start of one."""
    if not sniff_temporal_json(head):
        return None
    try:
        document = parse_json(read_regular(path), path)
    except HistoryError as error:
        raise DoubleRunInputError(str(error)) from None
    except OSError as error:
        raise DoubleRunInputError(f"{path}: cannot read: {error.strerror or error}") from None
    events = document.get("events") if isinstance(document, dict) else None
    if not isinstance(events, list) or not events or not all(isinstance(event, dict) for event in events):
        raise DoubleRunInputError(f"{path}: $.events: not a Temporal history (expected an array of event objects)")
    started = attributes(events[0])
    workflow_type = (started.get("workflowType") or {}).get("name")
    if event_type(events[0]) != "WorkflowExecutionStarted" or not isinstance(workflow_type, str) or not workflow_type:
        raise DoubleRunInputError(f"{path}: $.events[0]: not a WorkflowExecutionStarted event with a workflow type")
    payloads = (started.get("input") or {}).get("payloads") or []
    if len(payloads) > 1:
        raise DoubleRunInputError(f"{path}: $.events[0]: the workflow was started with {len(payloads)} arguments; the "
                                  "double run passes one (declare the case in an inputs file)")
    value: Any = None
    if payloads:
        decoded, value = decode_json_payload(payloads[0]) if isinstance(payloads[0], Mapping) else (False, None)
        if not decoded:
            raise DoubleRunInputError(f"{path}: $.events[0]: the input payload is not json/plain (a custom converter "
                                      "or codec): declare the case in an inputs file")
    results = _activity_results(events)
    recorded: dict[int, tuple[str, str, Any]] = {}
    position = 0
    for view in command_views(events):
        if view.kind not in _COMMAND_KINDS:
            continue
        position += 1
        if view.kind == "activity" and view.position in results:
            recorded[position] = ("activity", view.name, results[view.position])
    return DoubleRunCase(engine="temporal", workflow=workflow_type, input=value, origin=path,
                         workflow_id=str(started.get("workflowId") or "") or path.stem, recorded=recorded,
                         run_status=run_status([str(event.get("eventType", "")) for event in events]))


def _activity_results(events: list[Any]) -> dict[int | None, Any]:
    """Each completed activity's decoded result, by the event id of its scheduled event."""
    results: dict[int | None, Any] = {}
    for event in events:
        if event_type(event) != "ActivityTaskCompleted":
            continue
        attrs = attributes(event)
        payloads = (attrs.get("result") or {}).get("payloads") or []
        decoded, value = decode_json_payload(payloads[0]) if payloads and isinstance(payloads[0], Mapping) else (not payloads, None)
        if decoded:
            try:
                results[int(attrs.get("scheduledEventId", ""))] = value
            except (TypeError, ValueError):
                continue
    return results

