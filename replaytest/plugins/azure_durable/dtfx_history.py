"""Durable Task Framework histories in neutral terms, and back: ``AzureEvent``, ``neutral_history``,
``sdk_history``.

An orchestration's history (the ``<TaskHub>History`` table, the HTTP API's ``historyEvents``) is a list
of episodes, each ``OrchestratorStarted`` … ``OrchestratorCompleted``, holding what the orchestrator
scheduled (``TaskScheduled``, ``SubOrchestrationInstanceCreated``, ``TimerCreated``, ``EventSent``) and
what came back (``TaskCompleted``/``TaskFailed``, ``SubOrchestrationInstance{Completed,Failed}``,
``TimerFired``, ``EventRaised``). A neutral history keeps one event per command in history order: a
scheduling event with its completion's result or error folded in (step, child-workflow, timer), an
``EventRaised`` as a signal. An entity operation (``call_entity``/``signal_entity``: an ``EventSent`` named ``op``
to the entity's ``@name@key`` holding the request message) is a step named ``<operation> on @name@key``
(``entity_operation``), its input digested; a call's response, the ``EventRaised`` named by the request id,
is folded into it as its result (or its error, when the response has an ``exceptionType``), not kept as
a signal. What replay needs to rebuild the exact list for the SDK (event ids, row
positions, episodes and their timestamps) is kept in each event's ``extra["azure"]``; ``sdk_history``
rebuilds it, and a round trip gives back the recorded list (``IsPlayed`` aside, and an entity request's
operation input, of which only the digest is kept: the SDK reads the request id alone).

Run status (``RuntimeStatus`` of the Instances table or the HTTP API): Completed → completed;
Failed, Canceled and Terminated → failed (a terminated run records error type ``Terminated``: it
stopped where the history ends); Running, Pending, Suspended and ContinuedAsNew → running.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from replaytest.history import ErrorInfo, Event, History, WorkflowInfo
from replaytest.history.digest import args_digest

ENGINE = "azure_durable"

# DurableTask.Core's EventType numbers, which the SDK's history JSON uses.
EVENT_TYPES: dict[str, int] = {
    "ExecutionStarted": 0, "ExecutionCompleted": 1, "ExecutionFailed": 2, "ExecutionTerminated": 3,
    "TaskScheduled": 4, "TaskCompleted": 5, "TaskFailed": 6, "SubOrchestrationInstanceCreated": 7,
    "SubOrchestrationInstanceCompleted": 8, "SubOrchestrationInstanceFailed": 9, "TimerCreated": 10,
    "TimerFired": 11, "OrchestratorStarted": 12, "OrchestratorCompleted": 13, "EventSent": 14,
    "EventRaised": 15, "ContinueAsNew": 16, "GenericEvent": 17, "HistoryState": 18,
    "ExecutionSuspended": 19, "ExecutionResumed": 20,
}
EVENT_NAMES: dict[int, str] = {number: name for name, number in EVENT_TYPES.items()}

SCHEDULED_KINDS: dict[str, str] = {
    "TaskScheduled": "step", "SubOrchestrationInstanceCreated": "child-workflow", "TimerCreated": "timer",
    "EventSent": "step",
}
COMPLETIONS: dict[str, tuple[str, bool]] = {  # completion type -> (id field, succeeded)
    "TaskCompleted": ("TaskScheduledId", True), "TaskFailed": ("TaskScheduledId", False),
    "SubOrchestrationInstanceCompleted": ("TaskScheduledId", True),
    "SubOrchestrationInstanceFailed": ("TaskScheduledId", False), "TimerFired": ("TimerId", True),
}
TIMER = "timer"  # the name of a neutral timer event (Durable timers have no name)


def entity_operation(operation: str, scheduler_id: str) -> str:
    """The neutral name of an entity operation: ``deposit on @account@acct-1`` (the scheduler id is how
    Durable Task addresses an entity, ``@<lowercased name>@<key>``)."""
    return f"{operation} on {scheduler_id}"


RUNTIME_STATUSES: dict[str, str] = {
    "Completed": "completed", "Failed": "failed", "Canceled": "failed", "Terminated": "failed",
    "Running": "running", "Pending": "running", "Suspended": "running", "ContinuedAsNew": "running",
}
TERMINATED = "Terminated"

_EPOCH = "1970-01-01T00:00:00Z"


class AzureHistoryError(ValueError):
    """A history that cannot be read as a Durable Task one; the message names the row or JSON path."""


@dataclass
class AzureEvent:
    """One Durable Task history event, payloads decoded to JSON values; ``where`` names its source
    (``History row <instance>/<RowKey>`` or ``$.historyEvents[3]``)."""

    type: str
    where: str
    event_id: int = -1
    timestamp: str | None = None
    name: str | None = None
    input: Any = None
    result: Any = None
    scheduled_id: int | None = None
    timer_id: int | None = None
    fire_at: str | None = None
    reason: str | None = None
    details: str | None = None
    instance_id: str | None = None
    status: str | None = None
    # HTTP API output only: when the completed task was scheduled.
    scheduled_time: str | None = None
    # The input was moved to a blob the import did not fetch (arguments cannot be compared).
    input_not_stored: bool = False


def iso(value: Any) -> str | None:
    """A timestamp (datetime or text) as ISO 8601 UTC text ending in ``Z``."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        text = value.astimezone(timezone.utc).isoformat()
        return text.replace("+00:00", "Z")
    return str(value)


def neutral_history(
    events: Sequence[AzureEvent], instance_id: str, runtime_status: str | None, *, where: str,
    execution_id: str | None = None, orchestration_name: str | None = None,
) -> History:
    """The neutral history of one orchestration instance from its Durable Task events in order."""
    started = next((e for e in events if e.type == "ExecutionStarted"), None)
    name = orchestration_name or (started.name if started is not None else None)
    if not name:
        raise AzureHistoryError(f"{where}: no ExecutionStarted event names the orchestration")
    commands: list[dict[str, Any]] = []
    scheduled: dict[tuple[str, int], dict[str, Any]] = {}
    entity_calls: dict[str, dict[str, Any]] = {}  # request id -> the entity call awaiting its response
    episode: list[Any] = [0, started.timestamp if started is not None else None]
    ending: AzureEvent | None = None
    for index, event in enumerate(events):
        if event.type == "OrchestratorStarted":
            episode = [index, event.timestamp]
            continue
        kind = SCHEDULED_KINDS.get(event.type)
        if kind is not None:
            command: dict[str, Any] = {
                "kind": kind, "name": event.name or (TIMER if kind == "timer" else ""), "event": event,
                "azure": {"event_type": event.type, "event_id": event.event_id, "index": index, "episode": list(episode),
                          "timestamp": event.timestamp},
            }
            if kind == "timer":
                command["azure"]["fire_at"] = event.fire_at
            if event.instance_id is not None:
                command["azure"]["instance_id"] = event.instance_id
            family = "timer" if kind == "timer" else "task"
            scheduled[(family, event.event_id)] = command
            commands.append(command)
            request = event.input if event.type == "EventSent" else None
            if isinstance(request, dict) and isinstance(request.get("op"), str) and event.instance_id:
                command["name"] = entity_operation(request["op"], event.instance_id)
                command["operation_input"] = _entity_input(request.get("input"), event.where)
                command["azure"]["event_name"] = event.name
                command["azure"]["request"] = {key: value for key, value in request.items() if key != "input"}
                if not request.get("signal") and isinstance(request.get("id"), str):
                    entity_calls[request["id"]] = command
        elif event.type in COMPLETIONS:
            field_name, succeeded = COMPLETIONS[event.type]
            target = event.timer_id if field_name == "TimerId" else event.scheduled_id
            family = "timer" if event.type == "TimerFired" else "task"
            owner = scheduled.get((family, target if target is not None else -2))
            if owner is None:
                raise AzureHistoryError(
                    f"{event.where}: {event.type} for {field_name} {target} but no scheduling event has that id"
                )
            owner["completion"] = event
            owner["azure"]["completion"] = {
                "event_type": event.type, "index": index, "episode": list(episode), "timestamp": event.timestamp,
            }
        elif event.type == "EventRaised" and event.name in entity_calls:
            owner = entity_calls.pop(event.name)
            response = event.input if isinstance(event.input, dict) else {}
            owner["completion"] = event
            owner["azure"]["completion"] = {
                "event_type": event.type, "index": index, "episode": list(episode), "timestamp": event.timestamp,
                "response": {key: value for key, value in response.items() if key != "result"},
            }
        elif event.type == "EventRaised":
            commands.append({
                "kind": "signal", "name": event.name or "", "event": event, "result": event.input,
                "azure": {"event_type": event.type, "event_id": event.event_id, "index": index, "episode": list(episode),
                          "timestamp": event.timestamp},
            })
        elif event.type == "ContinueAsNew":
            commands.append({"kind": "continue-as-new", "name": "continue_as_new", "event": event, "result": event.result,
                             "azure": {"event_type": event.type, "index": index, "episode": list(episode)}})
        elif event.type in ("ExecutionCompleted", "ExecutionFailed", "ExecutionTerminated"):
            ending = event
    neutral_events = tuple(_neutral_event(seq, command) for seq, command in enumerate(commands, start=1))
    status, error, result = _status(runtime_status, ending)
    return History(
        workflow=WorkflowInfo(type=name, id=instance_id, run_id=execution_id, engine=ENGINE),
        status=status,
        events=neutral_events,
        input=started.input if started is not None else None,
        result=result,
        error=error,
    )


def _neutral_event(seq: int, command: dict[str, Any]) -> Event:
    event: AzureEvent = command["event"]
    completion: AzureEvent | None = command.get("completion")
    result = command.get("result")
    error = None
    if completion is not None and completion.type == "EventRaised":  # an entity call's response
        response = completion.input if isinstance(completion.input, dict) else {}
        value = _entity_input(response.get("result"), completion.where)
        if "exceptionType" in response:
            error = ErrorInfo(str(response.get("exceptionType") or "Exception"), _text(value))
        else:
            result = value
    elif completion is not None:
        if completion.type.endswith("Failed"):
            error = ErrorInfo(completion.type, completion.reason or completion.details or "")
            command["azure"]["completion"]["details"] = completion.details
        else:
            result = completion.result
    digest = None
    if "operation_input" in command:
        digest = args_digest((command["operation_input"],)) if command["operation_input"] is not None else None
    elif command["kind"] in ("step", "child-workflow") and event.input is not None:
        digest = args_digest((event.input,))
    return Event(seq=seq, kind=command["kind"], name=command["name"], args_digest=digest, result=result, error=error,
                 extra={"azure": command["azure"]})


def _status(runtime_status: str | None, ending: AzureEvent | None) -> tuple[str, ErrorInfo | None, Any]:
    recorded = runtime_status
    if recorded is None and ending is not None:
        recorded = ending.status or {"ExecutionTerminated": TERMINATED, "ExecutionFailed": "Failed"}.get(ending.type, "Completed")
    if recorded is None:
        recorded = "Running"
    status = RUNTIME_STATUSES.get(recorded) if isinstance(recorded, str) else None
    if status is None:
        raise AzureHistoryError(f"unknown runtime status {recorded!r} (known: {', '.join(RUNTIME_STATUSES)})")
    if status == "completed":
        return status, None, ending.result if ending is not None else None
    if status == "failed":
        if recorded == TERMINATED:
            message = _text(ending.result) if ending is not None else ""
            return status, ErrorInfo(TERMINATED, message or "terminated"), None
        message = ""
        if ending is not None:
            message = ending.reason or ending.details or _text(ending.result)
        return status, ErrorInfo(recorded, message), None
    return status, None, None


def _entity_input(text: Any, where: str) -> Any:
    """An entity request's input or a response's result: JSON text inside the message."""
    from replaytest.plugins.azure_durable.values import PayloadError, decode_payload

    try:
        return decode_payload(text, f"{where}, the entity message") if isinstance(text, str) else text
    except PayloadError as error:
        raise AzureHistoryError(str(error)) from None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def sdk_history(history: History) -> list[dict[str, Any]]:
    """The Durable Task history the SDK replays, rebuilt from a neutral history (JSON payloads as text).

    Every episode start is kept; one more ``OrchestratorStarted`` (at the last episode's time) ends the
    list, so the SDK treats every recorded event as replayed (``context.is_replaying`` stays True)."""
    from replaytest.plugins.azure_durable.values import encode_payload

    rows: list[tuple[int, list[Any], dict[str, Any]]] = []
    first = _EPOCH
    for event in history.events:
        azure = event.extra.get("azure")
        if not isinstance(azure, dict):
            raise AzureHistoryError(f"event {event.seq} ({event.kind} {event.name!r}) has no azure fields: not an imported Durable history")
        episode = azure.get("episode") or [0, None]
        if episode[0] == 0 and episode[1]:
            first = episode[1]
        rows.append((azure["index"], episode, _scheduling_row(event, azure, history, encode_payload)))
        completion = azure.get("completion")
        if isinstance(completion, dict):
            rows.append((completion["index"], completion.get("episode") or episode, _completion_row(event, azure, completion, history, encode_payload)))
    rows.sort(key=lambda row: row[0])
    timestamp = first if first != _EPOCH else next((r[1][1] for r in rows if r[1][1]), _EPOCH)
    out: list[dict[str, Any]] = [
        _row("OrchestratorStarted", -1, timestamp),
        _row("ExecutionStarted", -1, timestamp, Name=history.workflow.type, Version="", Input=encode_payload(history.input)),
    ]
    current_episode = 0
    for _, episode, row in rows:
        if episode[0] != current_episode:
            current_episode = episode[0]
            timestamp = episode[1] or timestamp
            out.append(_row("OrchestratorStarted", -1, timestamp))
        out.append(row)
    out.append(_row("OrchestratorStarted", -1, timestamp))
    return out


def _row(event_type: str, event_id: int, timestamp: str | None, **fields: Any) -> dict[str, Any]:
    row = {"EventType": EVENT_TYPES[event_type], "EventId": event_id, "IsPlayed": True, "Timestamp": timestamp or _EPOCH}
    row.update({key: value for key, value in fields.items() if value is not None})
    return row


def _scheduling_row(event: Event, azure: dict[str, Any], history: History, encode: Any) -> dict[str, Any]:
    event_type = azure["event_type"]
    if event_type == "EventRaised":
        return _row(event_type, -1, azure.get("timestamp"), Name=event.name, Input=encode(history.event_result(event)))
    if event_type == "ContinueAsNew":
        return _row(event_type, -1, azure.get("timestamp"), Result=encode(history.event_result(event)))
    fields: dict[str, Any] = {}
    if event_type == "TimerCreated":
        fields["FireAt"] = azure.get("fire_at")
    elif isinstance(azure.get("request"), dict):
        # An entity operation: the SDK reads the request id (a call's response is raised under it); the
        # operation's input is not kept (its digest is).
        fields["Name"] = azure.get("event_name")
        fields["Input"] = encode(azure["request"])
    else:
        fields["Name"] = event.name
    if azure.get("instance_id") is not None:
        fields["InstanceId"] = azure["instance_id"]
    return _row(event_type, int(azure["event_id"]), azure.get("timestamp"), **fields)


def _completion_row(event: Event, azure: dict[str, Any], completion: dict[str, Any], history: History, encode: Any) -> dict[str, Any]:
    event_type = completion["event_type"]
    event_id = int(azure["event_id"])
    if event_type == "TimerFired":
        return _row(event_type, -1, completion.get("timestamp"), TimerId=event_id, FireAt=azure.get("fire_at"))
    if event_type == "EventRaised":  # an entity call's response, raised under the request id
        value = event.error.message if event.error is not None else history.event_result(event)
        response = {**(completion.get("response") or {}), "result": encode(value) if value is not None else "null"}
        return _row(event_type, -1, completion.get("timestamp"), Name=(azure.get("request") or {}).get("id"), Input=encode(response))
    if event_type.endswith("Failed"):
        reason = event.error.message if event.error is not None else ""
        return _row(event_type, -1, completion.get("timestamp"), TaskScheduledId=event_id, Reason=reason,
                    Details=completion.get("details") or "")
    return _row(event_type, -1, completion.get("timestamp"), TaskScheduledId=event_id, Result=encode(history.event_result(event)))
