"""Reading Temporal history JSON without temporalio: detection, the started event, command views and the run status.

Temporal writes histories as ``{"events": [...]}`` in protobuf JSON, with two spellings of event types:
``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`` (``temporal workflow show --output json``, ``WorkflowHistory.to_json()``)
and ``ActivityTaskScheduled`` (older tools and the web UI). Everything here normalises to the short
CamelCase spelling, which is also what sdk-core prints in its non-determinism messages.

The views built here describe what the *history* recorded (scheduled activities, timers, markers, child
workflows, signals, the close event) so a divergence report can show it without protobuf.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from replaytest.replay.divergence import CommandView

# The started event is always first and protobuf JSON writes ``eventType`` before the attributes, so the
# first 64 KiB decide, whatever the size of the input payload.
_STARTED_RE = re.compile(rb'"eventType"\s*:\s*"(?:EVENT_TYPE_WORKFLOW_EXECUTION_STARTED|WorkflowExecutionStarted)"')
_EVENTS_RE = re.compile(rb'"events"\s*:\s*\[')

# Kinds whose command ends the run: matching one against a non-terminal event means the code finished
# early (or the other way round).
TERMINAL_KINDS: frozenset[str] = frozenset({"complete", "fail", "cancel", "continue-as-new"})

_EVENT_KINDS: Mapping[str, str] = {
    "ActivityTaskScheduled": "activity",
    "ActivityTaskCancelRequested": "activity-cancel",
    "TimerStarted": "timer",
    "TimerCanceled": "timer-cancel",
    "MarkerRecorded": "marker",
    "StartChildWorkflowExecutionInitiated": "child-workflow",
    "SignalExternalWorkflowExecutionInitiated": "signal-external",
    "RequestCancelExternalWorkflowExecutionInitiated": "cancel-external",
    "UpsertWorkflowSearchAttributes": "search-attributes",
    "WorkflowPropertiesModified": "memo",  # what workflow.upsert_memo records (the only property it modifies)
    "NexusOperationScheduled": "nexus-operation",
    "WorkflowExecutionUpdateAccepted": "update",
    "WorkflowExecutionSignaled": "signal",
    "WorkflowExecutionCompleted": "complete",
    "WorkflowExecutionFailed": "fail",
    "WorkflowExecutionCanceled": "cancel",
    "WorkflowExecutionContinuedAsNew": "continue-as-new",
    "WorkflowExecutionTerminated": "terminated",
    "WorkflowExecutionTimedOut": "timed-out",
}


# The search attribute sdk-core upserts itself beside a patch marker (the patch ids a run took): its event
# has no command of the workflow code behind it.
CHANGE_VERSION_ATTRIBUTE = "TemporalChangeVersion"


def issued_by_code(view: CommandView) -> bool:
    """Whether the workflow code's own command recorded this event (not sdk-core's change-version upsert)."""
    return not (view.kind == "search-attributes" and view.name == CHANGE_VERSION_ATTRIBUTE)


def sniff_temporal_json(head: bytes) -> bool:
    """True if ``head`` (the first bytes of a file) looks like a Temporal history in JSON."""
    return bool(_EVENTS_RE.search(head)) and bool(_STARTED_RE.search(head))


def event_type(event: Mapping[str, Any]) -> str:
    """``EVENT_TYPE_TIMER_STARTED`` and ``TimerStarted`` both become ``TimerStarted``."""
    return short_type_name(str(event.get("eventType", "")))


def event_id(event: Mapping[str, Any]) -> int | None:
    try:
        return int(event.get("eventId", ""))
    except (TypeError, ValueError):
        return None


def attributes(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one ``…EventAttributes`` object of an event (empty if it has none)."""
    for key, value in event.items():
        if key.endswith("EventAttributes") and isinstance(value, Mapping):
            return value
    return {}


def decode_json_payload(payload: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(True, value)`` for a ``json/plain`` payload in protobuf JSON (base64 metadata and data), else
    ``(False, None)`` — binary, protobuf or encrypted payloads are left alone."""
    metadata = payload.get("metadata")
    if not isinstance(metadata, Mapping):
        return False, None
    try:
        encoding = base64.b64decode(str(metadata.get("encoding", "")), validate=True)
        if encoding != b"json/plain":
            return False, None
        return True, json.loads(base64.b64decode(str(payload.get("data", "")), validate=True) or b"null")
    except (binascii.Error, ValueError):
        return False, None


def _payload_value(container: Any) -> Any:
    payloads = container.get("payloads") if isinstance(container, Mapping) else None
    if not payloads:
        return None
    ok, value = decode_json_payload(payloads[0])
    return value if ok else None


def _marker_view(attrs: Mapping[str, Any], position: int | None, detail: dict[str, Any]) -> CommandView:
    marker = str(attrs.get("markerName", ""))
    details = attrs.get("details") or {}
    if marker == "core_patch":
        data = _payload_value(details.get("patch-data")) or {}
        patch_id = str(data.get("id", "")) if isinstance(data, Mapping) else ""
        detail.update(patch_id=patch_id, deprecated=bool(isinstance(data, Mapping) and data.get("deprecated")))
        # The patch id lives in ``detail`` (the report prints it), the name stays empty: "patch 'v2'".
        return CommandView("patch", "", position=position, detail=detail)
    if marker == "core_local_activity":
        data = _payload_value(details.get("data")) or {}
        name = str(data.get("activity_type", "")) if isinstance(data, Mapping) else ""
        detail.update(activity_type=name)
        return CommandView("local-activity", name, position=position, detail=detail)
    return CommandView("marker", marker, position=position, detail=detail)


def event_view(event: Mapping[str, Any]) -> CommandView | None:
    """What a command-created (or signal/close) event recorded, or None for bookkeeping events
    (workflow tasks, activity started/completed, timer fired …)."""
    kind_name = event_type(event)
    kind = _EVENT_KINDS.get(kind_name)
    if kind is None:
        return None
    attrs = attributes(event)
    position = event_id(event)
    detail: dict[str, Any] = {"event_id": position, "event_type": kind_name}
    if kind == "marker":
        return _marker_view(attrs, position, detail)
    name = ""
    if kind == "activity":
        name = attrs.get("activityType", {}).get("name", "")
        detail.update(activity_type=name, activity_id=attrs.get("activityId"))
    elif kind == "timer":
        name = str(attrs.get("timerId", ""))
        detail.update(timer_id=name, duration=attrs.get("startToFireTimeout"))
    elif kind in ("child-workflow", "continue-as-new"):
        name = attrs.get("workflowType", {}).get("name", "")
        detail.update(workflow_type=name)
        if attrs.get("workflowId"):
            detail.update(workflow_id=attrs.get("workflowId"))
    elif kind in ("signal-external", "signal"):
        name = str(attrs.get("signalName", ""))
        detail.update(signal_name=name)
    elif kind == "cancel-external":
        name = str(attrs.get("workflowExecution", {}).get("workflowId", ""))
    elif kind == "nexus-operation":
        name = f"{attrs.get('service', '')}.{attrs.get('operation', '')}"
        detail.update(service=attrs.get("service", ""), operation=attrs.get("operation", ""), endpoint=attrs.get("endpoint"))
    elif kind == "search-attributes":
        name = ", ".join(sorted((attrs.get("searchAttributes") or {}).get("indexedFields") or {}))
    elif kind == "memo":
        name = ", ".join(sorted((attrs.get("upsertedMemo") or {}).get("fields") or {}))
    elif kind == "update":
        name = str(attrs.get("acceptedRequest", {}).get("input", {}).get("name", ""))
    elif kind == "fail":
        failure = attrs.get("failure") or {}
        name = str(failure.get("message", ""))
        detail.update(failure_type=failure.get("applicationFailureInfo", {}).get("type"))
    elif kind in ("activity-cancel", "timer-cancel"):
        name = str(attrs.get("timerId", attrs.get("scheduledEventId", "")))
    return CommandView(kind, name, position=position, detail=detail)


def command_views(events: Sequence[Mapping[str, Any]]) -> list[CommandView]:
    """Every event of the history that a command created, plus received signals and the close event,
    in history order."""
    views = []
    for event in events:
        view = event_view(event)
        if view is not None:
            views.append(view)
    return views


def find_event(events: Sequence[Mapping[str, Any]], position: int) -> Mapping[str, Any] | None:
    # Event ids are 1-based and dense in a complete history; fall back to a scan if a file was edited.
    if 0 < position <= len(events) and event_id(events[position - 1]) == position:
        return events[position - 1]
    return next((event for event in events if event_id(event) == position), None)


# --- validation before the Replayer sees a history ----------------------------------------------------

# After a workflow task starts, the server buffers everything else until the task ends: the next event
# closes the task (or the run). sdk-core panics on anything else and the replay never returns.
_AFTER_TASK_STARTED = frozenset(
    {"WorkflowTaskCompleted", "WorkflowTaskFailed", "WorkflowTaskTimedOut", "WorkflowExecutionTerminated"}
)


def short_type_name(raw: str) -> str:
    """``EVENT_TYPE_TIMER_STARTED`` and ``TimerStarted`` both become ``TimerStarted``."""
    if raw.startswith("EVENT_TYPE_"):
        return "".join(part.capitalize() for part in raw[len("EVENT_TYPE_") :].split("_"))
    return raw


# How a run ended, by its close event: continued-as-new counts as completed (this run finished; a new one
# carries on), timed out, terminated and canceled as failed (the run did not complete its work).
CLOSE_STATUS: Mapping[str, str] = {
    "WorkflowExecutionCompleted": "completed",
    "WorkflowExecutionContinuedAsNew": "completed",
    "WorkflowExecutionFailed": "failed",
    "WorkflowExecutionTimedOut": "failed",
    "WorkflowExecutionTerminated": "failed",
    "WorkflowExecutionCanceled": "failed",
}
# Work a run started that a worker or the server carries out (its event type -> the event types that end
# it). While any is outstanding the run is making progress, not waiting. Timers are left out on purpose:
# a run whose only outstanding work is a timer waits for it.
_OUTSTANDING_WORK: Mapping[str, frozenset[str]] = {
    "ActivityTaskScheduled": frozenset(
        {"ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut", "ActivityTaskCanceled"}
    ),
    "StartChildWorkflowExecutionInitiated": frozenset({
        "StartChildWorkflowExecutionFailed", "ChildWorkflowExecutionCompleted", "ChildWorkflowExecutionFailed",
        "ChildWorkflowExecutionCanceled", "ChildWorkflowExecutionTimedOut", "ChildWorkflowExecutionTerminated",
    }),
    "NexusOperationScheduled": frozenset(
        {"NexusOperationCompleted", "NexusOperationFailed", "NexusOperationCanceled", "NexusOperationTimedOut"}
    ),
    "SignalExternalWorkflowExecutionInitiated": frozenset(
        {"ExternalWorkflowExecutionSignaled", "SignalExternalWorkflowExecutionFailed"}
    ),
    "RequestCancelExternalWorkflowExecutionInitiated": frozenset(
        {"ExternalWorkflowExecutionCancelRequested", "RequestCancelExternalWorkflowExecutionFailed"}
    ),
}
_WORK_ENDED_BY = {end: start for start, ends in _OUTSTANDING_WORK.items() for end in ends}


def run_status(event_types: Sequence[str]) -> str:
    """The run's recorded status (the neutral vocabulary) from its event types, in file order, either spelling.

    * ``completed`` / ``failed``: the history holds a close event (see ``CLOSE_STATUS``).
    * ``parked``: not closed, a workflow task has completed and no later one is scheduled, and no
      activity, child workflow, Nexus operation or external signal/cancel request is outstanding —
      the run waits for a timer, a signal, an update or a condition (a human, another system).
    * ``running``: any other open run — work outstanding, a workflow task pending or failing, or no
      workflow task completed yet.
    """
    outstanding = dict.fromkeys(_OUTSTANDING_WORK, 0)
    task_pending = True  # until a workflow task completes, the run has not run any code
    for raw in event_types:
        kind = short_type_name(raw)
        closed = CLOSE_STATUS.get(kind)
        if closed is not None:
            return closed
        if kind in outstanding:
            outstanding[kind] += 1
        elif kind in _WORK_ENDED_BY:
            outstanding[_WORK_ENDED_BY[kind]] -= 1
        elif kind == "WorkflowTaskCompleted":
            task_pending = False
        elif kind == "WorkflowTaskScheduled":
            task_pending = True
    if task_pending or any(count > 0 for count in outstanding.values()):
        return "running"
    return "parked"


def sequence_problem(events: Sequence[tuple[Any, str]]) -> tuple[int, str] | None:
    """The first reason sdk-core would reject (or choke on) this event sequence, as ``(event number,
    message)`` with 1-based numbers; None for a well-formed sequence. ``events`` are ``(eventId, event
    type)`` pairs in file order, the type in either spelling.

    Checked: the first event starts the workflow; event ids are 1, 2, 3, … without gaps or reordering;
    every event has a type; a started workflow task is followed by its end (completed, failed, timed
    out) or the run's termination; a completed workflow task follows a started one.
    """
    if not events:
        return 1, "the history has no events"
    previous = ""
    for index, (raw_id, raw_type) in enumerate(events):
        number = index + 1
        kind = short_type_name(str(raw_type or ""))
        try:
            event_number = int(raw_id)
        except (TypeError, ValueError):
            return number, f"event #{number} has no valid eventId ({_shown(raw_id)})"
        if event_number != number:
            return number, f"event #{number} has eventId {event_number}; ids must run 1, 2, 3, … in order"
        if not kind or kind in ("Unspecified", "EventTypeUnspecified"):
            return number, f"event #{number} has no event type"
        if index == 0 and kind != "WorkflowExecutionStarted":
            return number, f"the first event is {kind}, not WorkflowExecutionStarted"
        if previous == "WorkflowTaskStarted" and kind not in _AFTER_TASK_STARTED:
            return number, (f"event #{number} is {kind}, but a started workflow task must be followed by "
                            "its completion, failure or time-out")
        if kind == "WorkflowTaskCompleted" and previous != "WorkflowTaskStarted":
            return number, f"event #{number} completes a workflow task that was not started (previous: {previous})"
        previous = kind
    return None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"
