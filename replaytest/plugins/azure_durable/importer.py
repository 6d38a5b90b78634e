"""``replaytest import azure-durable``: Azure Durable Functions runs into neutral histories.

Two sources, both read only:

* the task hub's Azure Storage tables (``azure-data-tables``; a connection string or an account URL):
  ``<TaskHub>Instances`` (one row per instance: ``RuntimeStatus``, ``CreatedTime``, ``ExecutionId``, …)
  selects the runs (``--instance``, ``--status``, ``--created-after``), and ``<TaskHub>History``
  (PartitionKey = instance id, RowKey = the event's sequence number, one row per Durable Task event:
  ``EventType``, ``EventId``, ``Name``, ``Input``/``Result``, ``TaskScheduledId``, ``TimerId``,
  ``_Timestamp``, ``ExecutionId``, …) gives each run's events, rows of the instance's current execution
  only, in RowKey order;
* a file of the durable HTTP API's instance status with ``showHistory=true&showHistoryOutput=true``
  (``--http-json``; one status object or a list of them; an instance listed twice is refused, neither
  status written). That history is condensed: scheduling events, event ids and episodes are dropped (an
  activity's input survives as text on its completion, not read here) and tasks still pending are not
  listed, so the import rebuilds the scheduling order from ``ScheduledTime`` and says what is missing in a note. An entity
  operation's ``EventSent`` stays in place with its request message (``Input`` text), so it takes its place in
  that order by its own ``Timestamp``; the ``EventRaised`` under a call's request id is its response. Without
  those messages (a status fetched with ``showInput=false``) the instance is refused.

Which fields of that file are JSON text and which are JSON values, as the extension writes them
(Azure/azure-functions-durable-extension, ``src/WebJobs.Extensions.DurableTask/ContextImplementations/
DurableClient.cs``: ``GetDurableOrchestrationStatusAsync`` edits the history array the task hub returns, in
which every payload is a string; ``ConvertOrchestrationStateToStatus`` and ``ParseToJToken`` make the top-level
fields; ``HttpApiHandler.ConvertFrom`` writes them out; the same code from v2.9.0 (#2267) to v2.13.7 and
v3.0.0-rc.2):

* ``input``, ``output``, ``customStatus`` (top level): values (``ParseToJToken``: the text parsed, or the raw
  text when it is not JSON); ``input`` is null with ``showInput=false``;
* ``Result`` of ``TaskCompleted``, ``SubOrchestrationInstanceCompleted`` and ``ExecutionCompleted``: values
  (``ConvertOutputToJToken``, with ``showHistoryOutput=true``; left out without it);
* ``Input`` of ``ExecutionStarted`` and of ``EventRaised`` (an external event or an entity call's response),
  of ``EventSent``, and the scheduled task's input copied onto its ``TaskCompleted``/``TaskFailed``/
  ``SubOrchestrationInstance…`` completion (``AddScheduledEventDataAndAggregate``; the ``TaskScheduled`` and
  ``SubOrchestrationInstanceCreated`` events themselves are removed): text, never converted; every ``Input`` is
  removed with ``showInput=false``. Before v2.9.0 the code removed the ``Input`` of ``ExecutionStarted``,
  ``EventRaised``, ``TaskScheduled``, ``SubOrchestrationInstanceCreated`` and ``ExecutionTerminated`` outright.

So an ``Input`` that is a string is read as the JSON text it is (parsed strictly; text that is not JSON refuses
the instance, naming it and the event), one that is another JSON value (a file written by other tools) is taken
as that value, and a ``Result`` is always a value (a string result is the string). An ``ExecutionStarted``
without ``Input`` takes the top-level ``input``, and refuses the instance when that is null too (as with
``showInput=false``: a null input cannot be told from one left out); an external event without ``Input`` refuses
the instance (the replay would hand the orchestrator nothing where data was raised). The activity inputs on the completions are
not read: arguments of the condensed history are not compared.

Payloads are JSON text, parsed strictly (``values``; never unpickled). A payload Azure Storage moved to a
blob (a ``*BlobName`` column beside an empty value) is not fetched: a result the replay would feed back
refuses that run with a message naming the row and column; an activity input (only compared, never fed
back) is dropped and the history says so. Files are named after the instance id
(``import_files.history_file_name``), engine ``azure_durable``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest.plugins.importing import ImportNotes as BaseImportNotes
from replaytest.plugins.importing import ImportRefused

if TYPE_CHECKING:
    from replaytest.history import History
    from replaytest.history.redact import Redactor
    from replaytest.plugins.azure_durable.dtfx_history import AzureEvent
    from replaytest.plugins.import_files import RunKey

ENGINE = "azure_durable"
RUNTIME_STATUS_CHOICES = ("Running", "Pending", "Completed", "Failed", "Terminated", "Canceled", "Suspended", "ContinuedAsNew")
_PAYLOAD_COLUMNS = ("Input", "Result")
_SENTINEL = "sentinel"

HTTP_NOTE = (
    "the HTTP API's history is condensed: no event ids or episodes, and no task still pending; scheduling "
    "order was rebuilt from ScheduledTime and activity arguments are not compared"
)


@dataclass
class ImportNotes(BaseImportNotes):
    """What the import noticed; Azure adds notes (said once each) on what the source lacks."""

    notes: list[str] = field(default_factory=list)

    def note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)


# -- Azure Storage tables --------------------------------------------------------------------------


def _event_type(value: Any, where: str) -> str:
    from replaytest.plugins.azure_durable.dtfx_history import EVENT_NAMES, EVENT_TYPES

    if isinstance(value, int) and value in EVENT_NAMES:
        return EVENT_NAMES[value]
    if isinstance(value, str) and value in EVENT_TYPES:
        return value
    if isinstance(value, str) and value.isdigit() and int(value) in EVENT_NAMES:
        return EVENT_NAMES[int(value)]
    raise ImportRefused(f"{where}: EventType {value!r} is not a Durable Task event type")


def _int(value: Any, where: str, column: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ImportRefused(f"{where}: column {column} is {value!r}, not an integer") from None


def event_from_row(row: dict[str, Any], where: str, notes: ImportNotes) -> AzureEvent:
    """One History table row as an ``AzureEvent`` (payloads decoded from JSON text)."""
    from replaytest.plugins.azure_durable.dtfx_history import AzureEvent, iso
    from replaytest.plugins.azure_durable.values import PayloadError, decode_payload

    event_type = _event_type(row.get("EventType"), where)
    payloads: dict[str, Any] = {}
    for column in _PAYLOAD_COLUMNS:
        blob = next((row[key] for key in (f"{column}BlobName", f"{column}_BlobName") if row.get(key)), None)
        if blob and not row.get(column):
            if event_type in ("TaskScheduled", "SubOrchestrationInstanceCreated", "EventSent"):
                notes.note("some activity inputs are stored in blobs, which this import does not fetch: those arguments are not compared")
                payloads["input_not_stored"] = True
                continue
            raise ImportRefused(
                f"{where}: column {column} is stored in blob {blob!r} (a large payload), which this import does "
                "not fetch; the replay would need it"
            )
        try:
            payloads[column] = decode_payload(row.get(column), f"{where}, column {column}")
        except PayloadError as error:
            raise ImportRefused(str(error)) from None
    event = AzureEvent(
        type=event_type,
        where=where,
        event_id=_or_minus_one(_int(row.get("EventId"), where, "EventId")),
        timestamp=iso(row.get("_Timestamp") or row.get("Timestamp")),
        name=row.get("Name"),
        input=payloads.get("Input"),
        result=payloads.get("Result"),
        scheduled_id=_int(row.get("TaskScheduledId"), where, "TaskScheduledId"),
        timer_id=_int(row.get("TimerId"), where, "TimerId"),
        fire_at=iso(row.get("FireAt")),
        reason=row.get("Reason"),
        details=row.get("Details"),
        instance_id=row.get("InstanceId") if event_type in ("SubOrchestrationInstanceCreated", "EventSent") else None,
        status=row.get("OrchestrationStatus"),
        input_not_stored=bool(payloads.get("input_not_stored")),
    )
    return event


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else value


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def instance_filter(statuses: Sequence[str], created_after: str | None) -> str | None:
    """The OData filter of the Instances table for the selection."""
    parts = []
    if statuses:
        parts.append("(" + " or ".join(f"RuntimeStatus eq {_quote(status)}" for status in statuses) + ")")
    if created_after:
        parts.append(f"CreatedTime ge datetime{_quote(created_after)}")
    return " and ".join(parts) or None


def table_runs(
    service: Any, task_hub: str, instances: Sequence[str], statuses: Sequence[str], created_after: str | None,
    notes: ImportNotes,
) -> Iterable[tuple[str, History | None]]:
    """(instance id, neutral history, or None when refused: the reason is in ``notes``) per selected run."""
    from replaytest.plugins.azure_durable.dtfx_history import AzureHistoryError, neutral_history

    instances_table = service.get_table_client(f"{task_hub}Instances")
    history_table = service.get_table_client(f"{task_hub}History")
    if instances:
        rows = []
        for instance in instances:
            found = list(instances_table.query_entities(f"PartitionKey eq {_quote(instance)}"))
            rows.extend(found or [{"PartitionKey": instance}])
    else:
        query = instance_filter(statuses, created_after)
        rows = list(instances_table.query_entities(query) if query else instances_table.list_entities())
    rows.sort(key=lambda row: (str(row.get("CreatedTime") or ""), row["PartitionKey"]))
    for status_row in rows:
        instance_id = status_row["PartitionKey"]
        execution_id = status_row.get("ExecutionId")
        events = []
        try:
            history_rows = list(history_table.query_entities(f"PartitionKey eq {_quote(instance_id)}"))
            history_rows = [r for r in history_rows if r.get("RowKey") != _SENTINEL and r.get("EventType") is not None]
            if execution_id:
                history_rows = [r for r in history_rows if r.get("ExecutionId") in (None, execution_id)]
            history_rows.sort(key=lambda r: str(r["RowKey"]))
            if not history_rows:
                raise ImportRefused(f"instance {instance_id!r}: no rows in {task_hub}History")
            for row in history_rows:
                events.append(event_from_row(row, f"{task_hub}History row {instance_id}/{row['RowKey']}", notes))
            history = neutral_history(
                events, instance_id, status_row.get("RuntimeStatus"), where=f"instance {instance_id!r}",
                execution_id=execution_id or history_rows[0].get("ExecutionId"), orchestration_name=status_row.get("Name"),
            )
        except (ImportRefused, AzureHistoryError) as refused:
            notes.refused.append(str(refused))
            yield instance_id, None
            continue
        yield instance_id, _mark_unstored_inputs(history, events)


def _mark_unstored_inputs(history: History, events: Sequence[AzureEvent]) -> History:
    if not any(e.input_not_stored for e in events):
        return history
    import dataclasses

    marked = []
    for event in history.events:
        azure = dict(event.extra.get("azure") or {})
        source = events[azure["index"]] if isinstance(azure.get("index"), int) and azure["index"] < len(events) else None
        if source is not None and source.input_not_stored:
            azure["input_not_stored"] = True
            event = dataclasses.replace(event, extra={**event.extra, "azure": azure})
        marked.append(event)
    return dataclasses.replace(history, events=tuple(marked))


def table_service(connection_string: str | None, account_url: str | None, sas_token: str | None) -> Any:
    try:
        from azure.data.tables import TableServiceClient
    except ImportError as error:
        raise click.ClickException(f"azure-data-tables is not installed (pip install 'replaytest[azure-durable]'): {error}") from None
    if connection_string:
        return TableServiceClient.from_connection_string(connection_string)
    endpoint = str(account_url)
    if sas_token:
        from azure.core.credentials import AzureSasCredential

        return TableServiceClient(endpoint=endpoint, credential=AzureSasCredential(sas_token))
    return TableServiceClient(endpoint=endpoint)


# -- HTTP API output -------------------------------------------------------------------------------


def http_runs(path: Path, notes: ImportNotes, max_bytes: int | None = None) -> Iterable[tuple[str, History | None]]:
    """The runs in a file of the HTTP API's status output (one object or a list of them). The file is read
    and parsed here, before the first run is handed on (so a file that cannot be read writes nothing): at
    most ``max_bytes`` (default: the history size limit), as strict JSON."""
    return _http_statuses(read_http_json(path, max_bytes), path, notes)


def read_http_json(path: Path, max_bytes: int | None = None) -> Any:
    """The parsed document of an ``--http-json`` file; ``click.ClickException`` (one line naming the file) for
    a file over ``max_bytes`` (refused before it is read), not a regular file, not UTF-8 or not strict JSON
    (nesting deeper than the history format allows included)."""
    from replaytest.config import DEFAULT_MAX_HISTORY_BYTES
    from replaytest.fileio import FileTooLargeError, read_regular
    from replaytest.history.errors import HistoryError
    from replaytest.history.io import decode_history, parse_text

    limit = DEFAULT_MAX_HISTORY_BYTES if max_bytes is None else max_bytes
    try:
        return parse_text(decode_history(read_regular(path, max_size=limit), path), path)
    except HistoryError as error:
        raise click.ClickException(str(error)) from None
    except FileTooLargeError as error:
        raise click.ClickException(
            f"{path}: is {error.size:,} bytes, more than the limit of {error.max_size:,} bytes; not read. If it is "
            "genuine, split it or raise [tool.replaytest.replay] max-history-bytes"
        ) from None
    except OSError as error:
        raise click.ClickException(f"{path}: cannot be read: {error.strerror or error}") from None


def _http_statuses(document: Any, path: Path, notes: ImportNotes) -> Iterable[tuple[str, History | None]]:
    from replaytest.plugins.azure_durable.dtfx_history import AzureHistoryError, neutral_history

    statuses = document if isinstance(document, list) else [document]
    listed: dict[str, list[str]] = {}  # instance id -> where its statuses are ($[n])
    for number, status in enumerate(statuses):
        if isinstance(status, dict) and isinstance(status.get("instanceId"), str):
            listed.setdefault(status["instanceId"], []).append(f"$[{number}]")
    for number, status in enumerate(statuses):
        at = f"$[{number}]" if isinstance(document, list) else "$"
        if not isinstance(status, dict) or not isinstance(status.get("instanceId"), str):
            notes.refused.append(f"{path}: {at} is not an instance status (no instanceId string)")
            yield f"{at}", None
            continue
        instance_id = status["instanceId"]
        if len(listed[instance_id]) > 1:
            # Two statuses of one instance would write one file, the second replacing the first: neither is
            # written (which one is current is not for the import to guess); refused once, at the first.
            if at == listed[instance_id][0]:
                notes.refused.append(
                    f"{path}: instance {instance_id!r} was not written: the file lists it {len(listed[instance_id])} "
                    f"times ({', '.join(listed[instance_id])}), which would write one history file over the other; "
                    "keep one status per instance in the file"
                )
                yield instance_id, None
            continue
        try:
            events = condensed_events(status, path, at)
            history = neutral_history(
                events, instance_id, _text(status, "runtimeStatus", f"{path}: {at}"), where=f"{path}: {at}",
                orchestration_name=_text(status, "name", f"{path}: {at}"),
            )
        except (ImportRefused, AzureHistoryError) as refused:
            notes.refused.append(str(refused))
            yield instance_id, None
            continue
        notes.note(HTTP_NOTE)
        yield instance_id, _condensed(history)


def condensed_events(status: dict[str, Any], path: Path, at: str) -> list[AzureEvent]:
    """The Durable Task events of one HTTP status, scheduling events rebuilt before their completions."""
    from replaytest.plugins.azure_durable.dtfx_history import AzureEvent

    events = status.get("historyEvents")
    if not isinstance(events, list):
        raise ImportRefused(f"{path}: {at}.historyEvents is missing: fetch the status with showHistory=true&showHistoryOutput=true")
    started: AzureEvent | None = None
    ending: AzureEvent | None = None
    timed: list[tuple[str, int, int, AzureEvent]] = []  # (time, order at that time, position, event)
    scheduling: list[tuple[AzureEvent, AzureEvent | None]] = []  # an EventSent has no completion of its own
    entity_calls: set[str] = set()  # request ids of the entity calls sent so far (their responses are raised under them)
    previous_time = ""
    for position, raw in enumerate(events):
        where = f"{path}: {at}.historyEvents[{position}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("EventType"), str):
            raise ImportRefused(f"{where}: not a history event (no EventType string)")
        kind = raw["EventType"]
        if kind.startswith("Entity"):
            raise ImportRefused(
                f"{where}: instance {status.get('instanceId')!r}: event type {kind} is not read: replay knows entity "
                "operations as EventSent (the request) and EventRaised (a call's response) only"
            )
        time = str(raw.get("Timestamp") or previous_time)
        name = _text(raw, "FunctionName", where) or _text(raw, "Name", where)
        if kind == "ExecutionStarted":
            given = _orchestration_input(raw, where, status)
            started = AzureEvent(kind, where, timestamp=time, name=name or _text(status, "name", f"{path}: {at}"), input=given)
        elif kind in ("TaskCompleted", "TaskFailed", "SubOrchestrationInstanceCompleted", "SubOrchestrationInstanceFailed"):
            created = "TaskScheduled" if kind.startswith("Task") else "SubOrchestrationInstanceCreated"
            failure = _failure_details(raw, where)
            completion = AzureEvent(kind, where, timestamp=time, result=raw.get("Result"),
                                    reason=_text(raw, "Reason", where) or _text(failure, "ErrorMessage", f"{where}.FailureDetails"),
                                    details=_text(raw, "Details", where))
            schedule = AzureEvent(created, where, timestamp=str(raw.get("ScheduledTime") or previous_time), name=name)
            scheduling.append((schedule, completion))
            timed.append((completion.timestamp or "", 0, position, completion))
        elif kind == "TimerFired":
            fired = AzureEvent(kind, where, timestamp=time, fire_at=raw.get("FireAt"))
            scheduling.append((AzureEvent("TimerCreated", where, timestamp=previous_time, fire_at=raw.get("FireAt")), fired))
            timed.append((time, 0, position, fired))
        elif kind == "EventSent":
            # Kept in place by the HTTP API (only EventId and IsPlayed dropped): an entity operation's request.
            sent = _entity_request(raw, where, status, name, time)
            if isinstance(sent.input, dict) and not sent.input.get("signal") and isinstance(sent.input.get("id"), str):
                entity_calls.add(sent.input["id"])
            scheduling.append((sent, None))
        elif kind == "EventRaised" and name in entity_calls:
            entity_calls.discard(name)
            response = _entity_response(raw, where, status)
            timed.append((time, 0, position, AzureEvent(kind, where, timestamp=time, name=name, input=response)))
        elif kind == "EventRaised":
            data = _external_event_data(raw, where, status, name)
            timed.append((time, 0, position, AzureEvent(kind, where, timestamp=time, name=name, input=data)))
        elif kind in ("ExecutionCompleted", "ExecutionFailed", "ExecutionTerminated"):
            failure = _failure_details(raw, where)
            ending = AzureEvent(kind, where, timestamp=time, result=raw.get("Result", status.get("output")),
                                status=_text(raw, "OrchestrationStatus", where),
                                reason=_text(failure, "ErrorMessage", f"{where}.FailureDetails"))
        previous_time = time
    scheduling.sort(key=lambda pair: _time_order(pair[0].timestamp))  # stable: equal times keep the listed order
    for event_id, (schedule, finished) in enumerate(scheduling):
        schedule.event_id = event_id
        if finished is None:
            pass
        elif finished.type == "TimerFired":
            finished.timer_id = event_id
        else:
            finished.scheduled_id = event_id
        timed.append((schedule.timestamp or "", 1, event_id, schedule))
    timed.sort(key=lambda item: (_time_order(item[0]), item[1], item[2]))
    out: list[AzureEvent] = []
    if started is None:
        raise ImportRefused(f"{path}: {at}.historyEvents has no ExecutionStarted event")
    out.append(AzureEvent("OrchestratorStarted", started.where, timestamp=started.timestamp))
    out.append(started)
    for _, order, _, event in timed:
        if order == 0:  # a completion or an event arrived: a new episode starts with it
            out.append(AzureEvent("OrchestratorStarted", event.where, timestamp=event.timestamp))
        out.append(event)
    if ending is not None:
        out.append(ending)
    return out


_UTC_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(?:Z|\+00:00)")


def _time_order(text: str | None) -> tuple[str, str]:
    """A sort key for the API's UTC timestamps. .NET writes the fraction of a second without its trailing
    zeros (``…:49.443Z``, ``…:51.3939873Z``, ``…:52Z``), so the text alone misorders them (``52.5Z`` before
    ``52Z``): the fraction is padded. A timestamp of another form sorts by its text."""
    match = _UTC_STAMP.fullmatch(text or "")
    if match is None:
        return (text or "", "")
    return (match.group(1), (match.group(2) or "").ljust(9, "0"))


def _entity_request(raw: dict[str, Any], where: str, status: dict[str, Any], name: str | None, time: str) -> AzureEvent:
    """An ``EventSent`` of the HTTP API's history as the table import reads it: ``InstanceId`` (the entity's
    ``@name@key``), ``Name`` and ``Input``, the request message as JSON text. The request is what replay needs
    (the operation names the step, the request id pairs a call with its response): without it the run is
    refused, never replayed as if nothing were sent."""
    from replaytest.plugins.azure_durable.dtfx_history import AzureEvent
    from replaytest.plugins.azure_durable.values import PayloadError, decode_payload

    instance = status.get("instanceId")
    target = _text(raw, "InstanceId", where)
    text = raw.get("Input")
    if text is None or text == "":
        raise ImportRefused(
            f"{where}: instance {instance!r}: the EventSent to {target!r} has no Input: the HTTP API leaves out the "
            "request message (operation and request id) with showInput=false, and replay needs it; fetch the status "
            "with showInput=true (the default), or import from the task hub's tables"
        )
    if not isinstance(text, str):
        raise ImportRefused(f"{where}.Input is {_json_type(text)}, not JSON text (the HTTP API keeps a sent message as text)")
    try:
        request = decode_payload(text, f"{where}.Input")
    except PayloadError as error:
        raise ImportRefused(f"instance {instance!r}: {error}") from None
    return AzureEvent("EventSent", where, timestamp=time, name=name, instance_id=target, input=request)


def _history_input(raw: dict[str, Any], where: str, status: dict[str, Any], what: str) -> Any:
    """The value of a history event's ``Input``: a string is the JSON text the HTTP API writes there and is
    parsed (strictly); text that is not JSON refuses the instance (a replay of it as a string could pass on a
    value that was never sent). Another JSON value (null included) is taken as it is."""
    from replaytest.plugins.azure_durable.values import PayloadError, decode_payload

    value = raw.get("Input")
    if not isinstance(value, str):
        return value
    try:
        return decode_payload(value, f"{where}.Input")
    except PayloadError as error:
        raise ImportRefused(
            f"instance {status.get('instanceId')!r}: {raw.get('EventType')} ({what}): {error}; the HTTP API writes a "
            "history event's Input as JSON text"
        ) from None


def _orchestration_input(raw: dict[str, Any], where: str, status: dict[str, Any]) -> Any:
    """The orchestration input: the ``ExecutionStarted``'s ``Input`` text (extension v2.9.0 on, which always
    writes the key), or else the top-level ``input`` value (older extensions removed it from the history). With
    ``showInput=false`` both are gone (the top level null): a null input cannot be told from one left out, and
    replay would hand the orchestrator None, so the run is refused."""
    if "Input" in raw:
        return _history_input(raw, where, status, "the orchestration input")
    if status.get("input") is None:
        raise ImportRefused(
            f"{where}: instance {status.get('instanceId')!r}: the orchestration input is left out (ExecutionStarted has "
            "no Input, the status's input is null): the HTTP API leaves it out with showInput=false, and replay hands it "
            "to the orchestrator; fetch the status with showInput=true (the default), or import from the task hub's tables"
        )
    return status["input"]


def _external_event_data(raw: dict[str, Any], where: str, status: dict[str, Any], name: str | None) -> Any:
    """The data of an external event. The HTTP API leaves it out with ``showInput=false`` (and extensions before
    v2.9.0 always did): replay would hand the orchestrator nothing where data was raised, so the run is refused."""
    if "Input" not in raw:
        raise ImportRefused(
            f"{where}: instance {status.get('instanceId')!r}: the external event {name!r} has no Input: the HTTP API "
            "leaves out the event's data with showInput=false (and before extension v2.9.0), and replay hands it to "
            "the orchestrator; fetch the status with showInput=true (the default), or import from the task hub's tables"
        )
    return _history_input(raw, where, status, f"external event {name!r}")


def _entity_response(raw: dict[str, Any], where: str, status: dict[str, Any]) -> Any:
    """The response message of an entity call (raised under the call's request id): JSON text, as the HTTP
    API keeps it, or the JSON object itself. Without it replay has no result to hand the call: refused."""
    from replaytest.plugins.azure_durable.values import PayloadError, decode_payload

    instance = status.get("instanceId")
    value = raw.get("Input")
    if value is None or value == "":
        raise ImportRefused(
            f"{where}: instance {instance!r}: the response to entity call {raw.get('Name')!r} has no Input: the HTTP "
            "API leaves it out with showInput=false, and replay needs it to hand the call its result; fetch the "
            "status with showInput=true (the default), or import from the task hub's tables"
        )
    if isinstance(value, str):
        try:
            value = decode_payload(value, f"{where}.Input")
        except PayloadError as error:
            raise ImportRefused(f"instance {instance!r}: {error}") from None
    if not isinstance(value, dict):
        raise ImportRefused(f"{where}: instance {instance!r}: the response to entity call {raw.get('Name')!r} is {_json_type(value)}, not a response message")
    return value


def _failure_details(raw: dict[str, Any], where: str) -> dict[str, Any]:
    details = raw.get("FailureDetails")
    if details is not None and not isinstance(details, dict):
        raise ImportRefused(f"{where}.FailureDetails is {_json_type(details)}, not an object")
    return details or {}


def _text(raw: dict[str, Any], key: str, where: str) -> str | None:
    """``raw[key]``, a string (or absent, null); another type refuses the run: names, statuses and messages
    become parts of the history that must be text."""
    value = raw.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ImportRefused(f"{where}.{key} is {_json_type(value)}, not a string")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    return "an array" if isinstance(value, list) else type(value).__name__


def _condensed(history: History) -> History:
    import dataclasses

    events = tuple(
        dataclasses.replace(event, args_digest=None, extra={**event.extra, "azure": {**event.extra["azure"], "condensed": True}})
        for event in history.events
    )
    return dataclasses.replace(history, events=events)


# -- writing ---------------------------------------------------------------------------------------


def recorded_run(document: Any) -> RunKey | None:
    from replaytest.plugins.import_files import neutral_run

    return neutral_run(document, engine=ENGINE, label="instance")


def write_runs(
    runs: Iterable[tuple[str, History | None]], out: Path, notes: ImportNotes, redactor: Redactor | None,
    progress: Callable[[str], None],
) -> int:
    from replaytest.history import save_history
    from replaytest.history.redact import redact_history
    from replaytest.plugins.import_files import ImportCollision, ImportFolder, history_file_name, neutral_key

    out.mkdir(parents=True, exist_ok=True)
    folder = ImportFolder(out, recorded_run)
    written = 0
    for _, history in runs:
        if history is None:
            progress(f"refused: {notes.refused[-1]}")
            continue
        replaced = 0
        if redactor is not None:
            history, replaced = redact_history(history, redactor)
        filename = history_file_name(history.workflow.id)
        try:
            target = folder.claim(filename, neutral_key(ENGINE, history.workflow.type, history.workflow.id, "instance"))
        except ImportCollision as collision:
            notes.refused.append(str(collision))
            progress(f"refused: {collision}")
            continue
        save_history(history, target)
        notes.redacted += replaced
        written += 1
        progress(f"[{written}] {filename} ({history.workflow.type}, {history.status}, {len(history.events)} events)")
    return written


@click.command("azure-durable")
@click.option("--connection-string", help="Azure Storage connection string of the task hub's account (read only).")
@click.option("--account-url", help="Table endpoint of the account, e.g. https://ACCOUNT.table.core.windows.net (with --sas-token).")
@click.option("--sas-token", help="Shared access signature for --account-url.")
@click.option("--task-hub", help="The task hub name (tables <TaskHub>Instances and <TaskHub>History).")
@click.option("--instance", "instances", multiple=True, help="Import this instance id (repeatable).")
@click.option("--status", "statuses", multiple=True, type=click.Choice(RUNTIME_STATUS_CHOICES, case_sensitive=False), help="Only instances in this runtime status (repeatable).")
@click.option("--created-after", metavar="ISO-8601", help="Only instances created at or after this time (UTC), e.g. 2026-01-01T00:00:00Z.")
@click.option("--http-json", "http_json", type=click.Path(dir_okay=False, path_type=Path), help="Instead of the tables: a file of the HTTP API's status with showHistory=true&showHistoryOutput=true (and showInput not false: replay needs the inputs).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the history files.")
@click.option("--redact-key", "keys", multiple=True, metavar="NAME", help="Key name to scrub in payloads (repeatable; default: [tool.replaytest.redact] or common secret fields).")
@click.option("--redact-path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub (repeatable).")
@click.option("--no-redact", is_flag=True, help="Write payloads as recorded.")
def import_command(
    connection_string: str | None, account_url: str | None, sas_token: str | None, task_hub: str | None,
    instances: tuple[str, ...], statuses: tuple[str, ...], created_after: str | None, http_json: Path | None,
    out_dir: Path, keys: tuple[str, ...], paths: tuple[str, ...], no_redact: bool,
) -> None:
    """Read Azure Durable Functions runs into OUT as <instance id>.json (JSON payloads only, never pickle)."""
    from replaytest.plugins.importing import (
        EXIT_ERROR,
        fail,
        import_byte_limit,
        import_redactor,
        redaction_said,
        report_import,
    )

    canonical = {choice.lower(): choice for choice in RUNTIME_STATUS_CHOICES}
    statuses = tuple(canonical[status.lower()] for status in statuses)
    if http_json is None and not (connection_string or account_url):
        fail("give --connection-string or --account-url (with --task-hub), or --http-json FILE")
    if http_json is None and not task_hub:
        fail("--task-hub is required to read the tables")
    if http_json is not None and (connection_string or account_url or instances or statuses or created_after):
        fail("--http-json reads one file; it does not combine with the table options")
    redactor = import_redactor(no_redact, keys, paths)
    notes = ImportNotes()
    source = str(http_json) if http_json is not None else f"task hub {task_hub}"
    try:
        if http_json is not None:
            runs = http_runs(http_json, notes, import_byte_limit())
        else:
            service = table_service(connection_string, account_url, sas_token)
            runs = table_runs(service, str(task_hub), instances, statuses, created_after, notes)
        written = write_runs(runs, out_dir, notes, redactor, lambda line: click.echo(line, err=True))
    except click.ClickException as error:
        fail(error.message)
    except Exception as error:  # an unreachable account, a missing table, refused credentials
        fail(f"reading {source} failed: {type(error).__name__}: {error}")
    for line in notes.notes:
        click.echo(f"note: {line}", err=True)
    # The refusals were reported as they happened (``write_runs``' progress); the summary counts them.
    clauses = [f"{len(notes.refused)} run(s) refused"] if notes.refused else []
    report_import(written, out_dir, redaction=redaction_said(redactor, notes.redacted), extra=clauses)
    if notes.refused:
        sys.exit(EXIT_ERROR)
    if instances and written == 0:
        fail(f"no instance {', '.join(instances)} in {source}")

