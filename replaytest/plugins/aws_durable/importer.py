"""``replaytest import aws-durable``: AWS Lambda durable executions into neutral histories.

The source is what the Lambda API returns for each execution: the ``GetDurableExecution`` response and every
page of its ``GetDurableExecutionHistory`` with ``IncludeExecutionData=true``. Either saved as JSON (no
credentials needed: ``aws lambda get-durable-execution`` and ``aws lambda get-durable-execution-history
--include-execution-data``, ``{"Events": [...], "NextMarker": ...}``), read in the order given, as are the
documents of a file that holds a JSON list of them: each execution document starts an execution and the
history pages after it are its events (a history page before any execution, or a file that is neither, stops
the import, exit 2); or, with ``--arn``, straight from the API with boto3 and the environment's credentials,
read only (those two calls, every page followed by ``Marker``).

One neutral history per execution, engine ``aws_durable``, file named after the execution's name and id:

* every durable operation (``Id``) is one event, in the order its first event was recorded: ``Step*`` →
  ``step``, ``Wait*`` → ``timer`` (its ``Duration``), ``Callback*`` → ``signal``, ``ChainedInvoke*`` →
  ``child-workflow``, ``Context*`` (``run_in_child_context``, ``map``, ``parallel`` and their branches) →
  ``step``; the event's name is the operation's name (its subtype when it has none), its result the
  checkpointed payload with the SDK's typed envelope unwrapped (``values``), its error the ``ErrorType``
  and ``ErrorMessage``; the operation's id, type, subtype, parent and last status are kept under
  ``aws`` for the replay, which rebuilds the checkpoint operations from them (a step whose failed attempt
  scheduled another is ``PENDING``, as its checkpoint is; a chained invoke's result is the invoked function's
  plain JSON output, not the SDK's envelope);
* the execution's ``Status``: ``SUCCEEDED`` → completed (its ``Result``), ``FAILED``, ``TIMED_OUT`` and
  ``STOPPED`` → failed (its ``Error``), ``RUNNING``, ``PAUSING`` and ``PAUSED`` → in flight: ``parked``
  with ``waiting`` set when the last operation still pending is a wait or a callback, else ``running``;
* the workflow type is the Lambda function's name (from ``FunctionArn``; ``--workflow-type`` sets
  another), its id the execution ARN, and ``code_version`` the function version the execution runs on
  (``Version``: AWS replays an execution invoked by a qualified ARN on the version it started on).

A run that cannot be imported faithfully is refused (exit 2), naming the execution and the event: a
result the service truncated (replay would hand the code part of a value), pages of another execution,
event ids out of order, an execution being deleted. Payloads are parsed as JSON only; nothing is unpickled.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest.plugins.importing import ImportNotes, ImportRefused

if TYPE_CHECKING:
    from replaytest.history import History
    from replaytest.plugins.import_files import RunKey

ENGINE = "aws_durable"
COMPLETED_STATUSES = {"SUCCEEDED": "completed", "FAILED": "failed", "TIMED_OUT": "failed", "STOPPED": "failed"}
IN_FLIGHT_STATUSES = ("RUNNING", "PAUSING", "PAUSED")
# The operation types of the history's event names (``StepSucceeded``: type STEP, outcome Succeeded).
OPERATION_PREFIXES = (("ChainedInvoke", "CHAINED_INVOKE"), ("Execution", "EXECUTION"), ("Context", "CONTEXT"),
                      ("Callback", "CALLBACK"), ("Step", "STEP"), ("Wait", "WAIT"))
NEUTRAL_KINDS = {"STEP": "step", "CONTEXT": "step", "WAIT": "timer", "CALLBACK": "signal", "CHAINED_INVOKE": "child-workflow"}
# Event outcome -> the operation status the SDK's checkpoint carries.
OUTCOME_STATUSES = {"Started": "STARTED", "Succeeded": "SUCCEEDED", "Failed": "FAILED", "TimedOut": "TIMED_OUT",
                    "Stopped": "STOPPED", "Cancelled": "CANCELLED"}
TERMINAL_OPERATION_STATUSES = {"SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED", "CANCELLED"}
# Outcomes of the execution itself that are not operations' (a pause is the execution's state, not a command).
_EXECUTION_ONLY = {"Paused", "Resumed"}


@dataclass
class _Operation:
    """What the history's events say of one durable operation."""

    id: str
    type: str
    sub_type: str | None
    name: str | None
    parent_id: str | None
    status: str = "STARTED"
    result: Any = None
    result_tag: str | None = None
    lossy: tuple[str, ...] = ()
    error: tuple[str, str] | None = None
    duration_s: float | None = None
    callback_id: str | None = None
    event_ids: list[int] = field(default_factory=list)


@dataclass
class Execution:
    """One execution as read: its ``GetDurableExecution`` document and its history pages' events."""

    document: dict[str, Any]
    where: str
    events: list[dict[str, Any]] = field(default_factory=list)
    pages: int = 0


def _label(document: dict[str, Any]) -> str:
    return str(document.get("DurableExecutionArn") or document.get("DurableExecutionName") or "?")


def read_documents(paths: Sequence[Path], max_bytes: int | None = None) -> Iterator[tuple[Any, str]]:
    """Each JSON document of the files in order (a file holding a list gives its items), with its place."""
    from replaytest.plugins.aws_durable.values import PayloadError, parse_json

    for path in paths:
        try:
            size = path.stat().st_size
            if max_bytes is not None and size > max_bytes:
                raise click.ClickException(
                    f"{path}: {size:,} bytes, more than the history limit of {max_bytes:,} (max-history-bytes in [tool.replaytest.replay])"
                )
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise click.ClickException(f"{path}: cannot read: {error}") from None
        try:
            document = parse_json(text, str(path))
        except PayloadError as error:
            raise click.ClickException(str(error).replace("the payload", "the file")) from None
        if isinstance(document, list):
            for index, item in enumerate(document):
                yield item, f"{path}[{index}]"
        else:
            yield document, str(path)


def group_executions(documents: Iterable[tuple[Any, str]]) -> Iterator[Execution]:
    """Executions with the history pages that follow each; a document of neither kind stops the import."""
    current: Execution | None = None
    for document, where in documents:
        if isinstance(document, dict) and "DurableExecutionArn" in document and "Status" in document:
            if current is not None:
                yield current
            current = Execution(document, where)
        elif isinstance(document, dict) and isinstance(document.get("Events"), list):
            if current is None:
                raise click.ClickException(
                    f"{where}: a history page before any execution; give each execution's get-durable-execution "
                    "output before the pages of its get-durable-execution-history"
                )
            current.events.extend(document["Events"])
            current.pages += 1
        else:
            raise click.ClickException(
                f"{where}: neither a GetDurableExecution response (DurableExecutionArn, Status) nor a "
                "GetDurableExecutionHistory page (Events)"
            )
    if current is not None:
        yield current


def lambda_client(region: str | None) -> Any:
    """A boto3 Lambda client with the environment's credentials (exit 2 when boto3 is not installed)."""
    try:
        import boto3
    except ImportError:
        raise click.ClickException("--arn reads the Lambda API with boto3, which is not installed (pip install boto3)") from None
    return boto3.client("lambda", region_name=region)


def _as_json(value: Any) -> Any:
    """A boto3 response as the JSON the CLI prints (timestamps as ISO-8601 text, no response metadata)."""
    import datetime

    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items() if key != "ResponseMetadata"}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return value


def api_executions(client: Any, arns: Sequence[str]) -> Iterator[Execution]:
    """Each execution read from the API: ``GetDurableExecution``, then every ``GetDurableExecutionHistory``
    page (read only; an API error stops the import with the call and the service's message)."""
    for arn in arns:
        where = f"the Lambda API, execution {arn}"
        try:
            document = _as_json(client.get_durable_execution(DurableExecutionArn=arn, IncludeExecutionData=True))
            execution = Execution(document, where)
            marker: str | None = None
            while True:
                request: dict[str, Any] = {"DurableExecutionArn": arn, "IncludeExecutionData": True}
                if marker:
                    request["Marker"] = marker
                page = _as_json(client.get_durable_execution_history(**request))
                execution.events.extend(page.get("Events") or [])
                execution.pages += 1
                marker = page.get("NextMarker")
                if not marker:
                    break
        except click.ClickException:
            raise
        except Exception as error:  # botocore's ClientError, NoCredentialsError, an endpoint that cannot be reached
            raise click.ClickException(f"reading {where} failed: {type(error).__name__}: {error}") from None
        yield execution


def _text(value: Any, where: str, key: str, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise ImportRefused(f"{where}: {key} must be text, found {type(value).__name__}")
    return value


def _split_event_type(event_type: str) -> tuple[str, str] | None:
    for prefix, operation_type in OPERATION_PREFIXES:
        if event_type.startswith(prefix) and event_type[len(prefix):] in OUTCOME_STATUSES.keys() | _EXECUTION_ONLY:
            return operation_type, event_type[len(prefix):]
    return None


def _payload(details: Any, key: str, where: str) -> tuple[Any, bool] | None:
    """``details[key]``'s ``Payload`` and whether the service truncated it (None when absent)."""
    if not isinstance(details, dict) or key not in details:
        return None
    wrapper = details[key]
    if not isinstance(wrapper, dict):
        raise ImportRefused(f"{where}: {key} is {type(wrapper).__name__}, not an object with Payload")
    return wrapper.get("Payload"), bool(wrapper.get("Truncated"))


def _error(details: Any, where: str) -> tuple[str, str] | None:
    found = _payload(details, "Error", where)
    if found is None or not isinstance(found[0], dict):
        return None
    error = found[0]
    return str(error.get("ErrorType") or "Error"), str(error.get("ErrorMessage") or "")


def _operations(execution: Execution, where: str) -> tuple[list[_Operation], dict[str, Any]]:
    """The history's operations in first-event order, and the execution's own events' details."""
    from replaytest.plugins.aws_durable.values import PLAIN_JSON_TAG, Decoded, PayloadError, decode_payload, parse_json

    operations: dict[str, _Operation] = {}
    execution_details: dict[str, Any] = {}
    last_id = 0
    for index, event in enumerate(execution.events):
        at = f"{where}: event {index + 1}"
        if not isinstance(event, dict):
            raise ImportRefused(f"{at} is {type(event).__name__}, not an object")
        event_type = _text(event.get("EventType"), at, "EventType", required=True)
        event_id = event.get("EventId")
        if isinstance(event_id, int) and not isinstance(event_id, bool):
            if event_id <= last_id:
                raise ImportRefused(f"{at}: EventId {event_id} after {last_id}: pages out of order or given twice")
            last_id = event_id
            at = f"{where}: event {event_id} ({event_type})"
        split = _split_event_type(str(event_type))
        if split is None:
            continue  # InvocationCompleted and any event that is not an operation's
        operation_type, outcome = split
        details = event.get(f"{event_type}Details")
        if operation_type == "EXECUTION":
            execution_details[str(event_type)] = details if isinstance(details, dict) else {}
            if outcome == "Started":
                execution_details["Id"] = event.get("Id")
            continue
        operation_id = _text(event.get("Id"), at, "Id", required=True)
        assert operation_id is not None
        operation = operations.get(operation_id)
        if operation is None:
            operation = _Operation(
                operation_id, operation_type, _text(event.get("SubType"), at, "SubType"),
                _text(event.get("Name"), at, "Name"), _text(event.get("ParentId"), at, "ParentId"),
            )
            operations[operation_id] = operation
        elif operation.type != operation_type:
            raise ImportRefused(f"{at}: operation {operation_id} was a {operation.type} and is now a {operation_type}")
        if isinstance(event_id, int):
            operation.event_ids.append(event_id)
        operation.status = OUTCOME_STATUSES[outcome]
        if isinstance(details, dict):
            if operation_type == "WAIT" and isinstance(details.get("Duration"), (int, float)):
                operation.duration_s = float(details["Duration"])
            if operation_type == "CALLBACK" and isinstance(details.get("CallbackId"), str):
                operation.callback_id = details["CallbackId"]
        found = _payload(details, "Result", at)
        if found is not None:
            payload, truncated = found
            if truncated:
                raise ImportRefused(
                    f"{at}: the service truncated the result of {operation_type.lower()} {operation.name or operation.sub_type!r}; "
                    "replay would hand the code part of a value"
                )
            try:
                if operation_type == "CHAINED_INVOKE":
                    # The invoked function's output as it returned it: plain JSON, never the SDK's envelope.
                    decoded = Decoded(parse_json(payload, f"{at}: Result"), PLAIN_JSON_TAG)
                else:
                    decoded = decode_payload(payload, f"{at}: Result")
            except PayloadError as error:
                raise ImportRefused(str(error)) from None
            operation.result, operation.result_tag, operation.lossy = decoded.value, decoded.tag, decoded.lossy
        operation.error = _error(details, at) or operation.error
        retry = details.get("RetryDetails") if isinstance(details, dict) else None
        delay = retry.get("NextAttemptDelaySeconds") if isinstance(retry, dict) else None
        if operation_type == "STEP" and outcome == "Failed" and isinstance(delay, (int, float)) and delay > 0:
            # The attempt failed and the SDK scheduled another: the step's checkpoint is PENDING (the SDK waits
            # out the delay and runs its body again), not FAILED, until its next event.
            operation.status = "PENDING"
    return list(operations.values()), execution_details


def neutral_history(execution: Execution, workflow_type: str | None = None) -> History:
    """The neutral history of one execution (``ImportRefused`` when it cannot be imported faithfully)."""
    from replaytest.history import ErrorInfo, Event, History, WorkflowInfo
    from replaytest.history.model import Waiting
    from replaytest.plugins.aws_durable.values import PayloadError, parse_json

    document = execution.document
    arn = _text(document.get("DurableExecutionArn"), execution.where, "DurableExecutionArn", required=True)
    assert arn is not None
    where = f"execution {arn} ({execution.where})"
    status = _text(document.get("Status"), where, "Status", required=True)
    if status not in COMPLETED_STATUSES and status not in IN_FLIGHT_STATUSES:
        raise ImportRefused(f"{where}: Status {status!r} is not an execution to replay (one of {', '.join([*COMPLETED_STATUSES, *IN_FLIGHT_STATUSES])})")
    if not execution.pages:
        raise ImportRefused(f"{where}: no history page follows it (save get-durable-execution-history --include-execution-data after it)")
    operations, execution_details = _operations(execution, where)
    started_id = execution_details.get("Id")
    if isinstance(started_id, str) and started_id != arn.rsplit("/", 1)[-1]:
        raise ImportRefused(f"{where}: the history pages are of execution {started_id!r}, not this one")
    if "ExecutionStarted" not in execution_details:
        raise ImportRefused(f"{where}: the history has no ExecutionStarted event (the first page is missing)")
    try:
        input_text = document.get("InputPayload")
        if input_text is None:
            input_payload = _payload(execution_details["ExecutionStarted"], "Input", where)
            input_text = input_payload[0] if input_payload is not None else None
        run_input = parse_json(input_text, f"{where}: InputPayload")
        result = parse_json(document.get("Result"), f"{where}: Result") if status == "SUCCEEDED" else None
    except PayloadError as error:
        raise ImportRefused(str(error)) from None
    events = []
    for seq, operation in enumerate(operations, 1):
        aws: dict[str, Any] = {"id": operation.id, "type": operation.type, "status": operation.status}
        for key, value in (("sub_type", operation.sub_type), ("parent_id", operation.parent_id),
                           ("tag", operation.result_tag), ("callback_id", operation.callback_id)):
            if value is not None:
                aws[key] = value
        if operation.lossy:
            aws["lossy"] = list(operation.lossy)
        if operation.name is None:
            aws["unnamed"] = True  # the event's name is its subtype; the SDK compares the name it has (none)
        failure = ErrorInfo(*operation.error) if operation.error is not None and operation.status != "SUCCEEDED" else None
        events.append(Event(
            seq=seq, kind=NEUTRAL_KINDS[operation.type], name=operation.name or operation.sub_type or operation.type.lower(),
            result=operation.result, error=failure, duration_s=operation.duration_s, extra={"aws": aws},
        ))
    neutral_status = COMPLETED_STATUSES.get(status, "running")
    waiting = None
    if neutral_status == "running":
        pending = [e for e in events if e.extra["aws"]["status"] not in TERMINAL_OPERATION_STATUSES and e.kind in ("timer", "signal")]
        if pending:
            neutral_status, waiting = "parked", Waiting(pending[-1].kind, pending[-1].name)
    run_error = None
    if neutral_status == "failed":
        found = _error({"Error": {"Payload": document.get("Error")}}, where) if isinstance(document.get("Error"), dict) else None
        for key in ("ExecutionFailed", "ExecutionTimedOut", "ExecutionStopped"):
            found = found or _error(execution_details.get(key), where)
        kind = {"TIMED_OUT": "TimedOut", "STOPPED": "Stopped"}.get(status, "Error")
        run_error = ErrorInfo(*(found or (kind, f"the execution ended {status}")))
    function_arn = str(document.get("FunctionArn") or "")
    function_name = _function_name(function_arn) or str(document.get("DurableExecutionName") or "handler")
    version = document.get("Version")
    return History(
        workflow=WorkflowInfo(type=workflow_type or function_name, id=arn, engine=ENGINE),
        status=neutral_status, events=tuple(events), input=run_input, result=result, error=run_error,
        code_version=str(version) if isinstance(version, str) and version else None, waiting=waiting,
    )


def _function_name(function_arn: str) -> str | None:
    """``NAME`` of ``arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]``."""
    parts = function_arn.split(":")
    if len(parts) >= 7 and parts[5] == "function" and parts[6]:
        return parts[6]
    return None


def history_name(history: History) -> str:
    """The file name of an execution's history: its name and id (the ARN's last two segments)."""
    from replaytest.plugins.import_files import history_file_name

    segments = history.workflow.id.split("/")
    return history_file_name(*segments[-2:]) if len(segments) >= 2 else history_file_name(history.workflow.id)


def recorded_run(document: Any) -> RunKey | None:
    from replaytest.plugins.import_files import neutral_run

    return neutral_run(document, engine=ENGINE, label="execution")


@click.command("aws-durable")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--arn", "arns", multiple=True, metavar="ARN", help="Instead of FILES: read this execution from the Lambda API with boto3 (repeatable; read only).")
@click.option("--region", help="The AWS region of --arn (default: the environment's).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the history files.")
@click.option("--workflow-type", metavar="NAME", help="The workflow type to record (default: the Lambda function's name); replay looks the handler up by it.")
@click.option("--redact-key", "keys", multiple=True, metavar="NAME", help="Key name to scrub in payloads (repeatable; default: [tool.replaytest.redact] or common secret fields).")
@click.option("--redact-path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub (repeatable).")
@click.option("--no-redact", is_flag=True, help="Write payloads as recorded.")
def import_command(
    files: tuple[Path, ...], arns: tuple[str, ...], region: str | None, out_dir: Path, workflow_type: str | None,
    keys: tuple[str, ...], paths: tuple[str, ...], no_redact: bool,
) -> None:
    """Read AWS Lambda durable executions from FILES into OUT, one history per execution.

    FILES are saved `aws lambda get-durable-execution` output, each followed by every page of that
    execution's `aws lambda get-durable-execution-history --include-execution-data` (or one file holding a
    JSON list of those documents in that order); or, with --arn, the same read from the Lambda API. Payloads
    are JSON only, never unpickled."""
    from replaytest.history import save_history
    from replaytest.history.redact import redact_history
    from replaytest.plugins.import_files import ImportCollision, ImportFolder, neutral_key
    from replaytest.plugins.importing import (
        EXIT_ERROR,
        fail,
        import_byte_limit,
        import_redactor,
        redaction_said,
        report_import,
    )

    redactor = import_redactor(no_redact, keys, paths)
    notes = ImportNotes()
    written = 0
    if bool(files) == bool(arns):
        fail("give the saved JSON FILES or --arn ARN (reading the Lambda API), one of the two")
    try:
        if arns:
            executions = list(api_executions(lambda_client(region), arns))
        else:
            executions = list(group_executions(read_documents(files, import_byte_limit())))
    except click.ClickException as error:
        fail(error.message)
    if not executions:
        fail("no execution in the files (give each execution's get-durable-execution output, then its history pages)")
    out_dir.mkdir(parents=True, exist_ok=True)
    folder = ImportFolder(out_dir, recorded_run)
    lossy = 0
    for execution in executions:
        try:
            history = neutral_history(execution, workflow_type)
        except ImportRefused as refused:
            notes.refused.append(str(refused))
            click.echo(f"refused: {refused}", err=True)
            continue
        lossy += any("lossy" in event.extra.get("aws", {}) for event in history.events)
        if redactor is not None:
            history, replaced = redact_history(history, redactor)
            notes.redacted += replaced
        filename = history_name(history)
        try:
            target = folder.claim(filename, neutral_key(ENGINE, history.workflow.type, history.workflow.id, "execution"))
        except ImportCollision as collision:
            notes.refused.append(str(collision))
            click.echo(f"refused: {collision}", err=True)
            continue
        save_history(history, target)
        written += 1
        click.echo(f"[{written}] {filename} ({history.workflow.type}, {history.status}, {len(history.events)} events)", err=True)
    if lossy:
        click.echo(
            f"note: {lossy} execution(s) hold values JSON has no type for (bytes, UUID, Decimal, dates, tuples): "
            "stored as their JSON form, which replay hands back",
            err=True,
        )
    clauses = [f"{len(notes.refused)} run(s) refused"] if notes.refused else []
    report_import(written, out_dir, redaction=redaction_said(redactor, notes.redacted), extra=clauses)
    if notes.refused:
        sys.exit(EXIT_ERROR)
