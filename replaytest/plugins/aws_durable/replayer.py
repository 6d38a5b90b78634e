"""Replaying AWS durable executions (neutral histories of engine ``aws_durable``) through the SDK's own
replay path.

``AwsDurableReplayer`` rebuilds the execution's checkpoint operations from the history (each event's
``aws`` fields: id, type, subtype, parent, status; its result wrapped again in the SDK's envelope,
``values``) and invokes the current handler's function through the SDK's ``durable_execution`` wrapper
exactly as Lambda re-invokes an execution, with a stub service client (``internals.invoke``). The SDK
answers every operation the code issues from the recorded checkpoints; its own identity check
(``NonDeterministicExecutionError``: a changed type, subtype, name or parent at a position, the position
being the operation id the SDK derives) is the engine's verdict. Each operation passes through
``internals.watching`` before anything runs, where replay

* asks the SDK's check, and compares the operation with the next recorded one in neutral terms
  (``replay.engine.Matcher``: kind and name, at the line of the handler or child function that issued it),
  so a divergence is reported as every engine's is (recorded vs issued, line, in flight or finished) and
  carries the SDK's own message when the SDK refused the operation;
* stops the replay before an operation the history does not hold (its body, a new step, never runs) and
  before a step the run was executing or waiting to retry when the history ends (the SDK would run its body
  again, at least once): for an in-flight run that is where it resumes; for a finished one it is an
  ``extra-command``.

Operations inside a completed child context (``run_in_child_context``, ``wait_for_callback``) are not
issued again on replay (the SDK returns the context's result), and those in ``map`` / ``parallel`` branches
run on the SDK's worker threads in no fixed order: both are judged by the SDK's check alone, the
recorded ones not counted by the matcher. The handler runs under the runtime guards on the SDK's handler
thread (a clock, random or uuid read is a hazard and the replay goes on; a socket, process or file write
is stopped); branch threads run unguarded, which a note says.

A wait the in-flight execution already started (its checkpoint ``STARTED``) whose duration the code now asks
for differently keeps the recorded one: the SDK sends the service a wait's start, with its seconds, only when no
checkpoint holds the wait, and the service ends a started wait when it scheduled it. A note says so, naming the
wait, its line and both durations (``ALREADY_SLEEPING_NOTE``; ``impact`` names the executions); the recorded
duration is the ``WaitStarted`` event's ``Duration`` the import keeps (``duration_s``; without it, nothing is said).

The end: the SDK's invocation output. ``SUCCEEDED``: every compared recorded operation must have been
issued, and a completed run's result must be the recorded one. ``FAILED``: the SDK's own
``NonDeterministicExecutionError`` (raised where the hook does not see it) is a divergence, another error
is a ``result-mismatch`` unless the run failed too. ``PENDING`` (the code waits): a history that goes on
past that point is a ``missing-command``; an in-flight run passes.

With ``ReplayOptions.rehearse``, an in-flight execution that replays green is then resumed past the wait or
callback it is parked on by the same SDK path (``rehearsal``): ``ReplayResult.rehearsal``, or a note saying
why not.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from replaytest.history import Event, History
from replaytest.plugins.aws_durable import rehearsal
from replaytest.plugins.aws_durable.importer import ENGINE, TERMINAL_OPERATION_STATUSES
from replaytest.plugins.aws_durable.profile import PROFILE
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import (
    ALREADY_SLEEPING_NOTE,
    Divergence,
    ReplayResult,
    SourcePosition,
    short_value,
    value_text,
)
from replaytest.replay.engine import (
    NO_PROMPTS_NOTE,
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    RecordedEvents,
)
from replaytest.replay.guards import (
    NondeterministicCall,
    guarded,
    hazard_message,
    is_project_file,
    orchestration_modules,
    settle_hazards,
)
from replaytest.replay.report import display_path

# A step recorded in one of these is run again (after its retry delay, for PENDING) when the execution resumes.
RESUMING_STEP_STATUSES = frozenset({"STARTED", "READY", "PENDING"})
# A wait whose asked duration is this close to the recorded one is the same wait (the API gives whole seconds).
SAME_WAIT_S = 0.5
# Child contexts whose operations run on the SDK's worker threads, in no fixed order.
BATCH_SUBTYPES = frozenset({"Map", "MapIteration", "Parallel", "ParallelBranch"})
BATCH_NOTE = (
    "operations inside map/parallel branches were judged by the SDK's own operation-id check only (they run "
    "on worker threads in no fixed order), and ran without the runtime guards"
)
LOSSY_NOTE = (
    "some recorded results held {types} values, stored as their JSON form: the replay handed the code that "
    "form, so a branch on their type was not checked"
)
# Why the fix for a value read needs a version guard, and which one (see ``hazard_message``).
_VERSION_GUARD = (
    "executions started before the change must take the old path: the SDK has no patch API, so keep them on "
    "the function version they started on (invoke a qualified ARN: AWS replays an execution on the version it "
    "started on) or branch on an input set when the execution started"
)


class AwsHistoryError(ValueError):
    """A history whose ``aws`` fields cannot rebuild the checkpoint operations (names the JSON path)."""


class _Stop(BaseException):
    """Ends the replay in the handler thread: a new operation (its body must not run), where an in-flight
    run resumes, or the first divergence. A ``BaseException``, so handler code's ``except Exception``
    cannot swallow it."""


@dataclasses.dataclass
class _Verdict:
    """What the watch saw while the SDK replayed."""

    divergence: Divergence | None = None
    resumes: bool = False  # the code reached where an in-flight run resumes
    stopped_new: Issued | None = None  # a new operation outside the compared ones
    batch_seen: bool = False
    matcher: Matcher | None = None
    sleeping_notes: list[str] = dataclasses.field(default_factory=list)  # started waits the code changed


def _aws(event: Event, index: int) -> Mapping[str, Any]:
    aws = event.extra.get("aws")
    if not isinstance(aws, Mapping) or not all(isinstance(aws.get(key), str) for key in ("id", "type", "status")):
        raise AwsHistoryError(f"$.events[{index}].aws: needs the operation's id, type and status (import aws-durable writes them)")
    return aws


def checkpoint_operations(history: History, execution_id: str) -> list[dict[str, Any]]:
    """The recorded checkpoint operations in the Lambda API's JSON shape, the execution's own first."""
    from replaytest.plugins.aws_durable.values import PLAIN_JSON_TAG, PayloadError, encode_payload

    operations: list[dict[str, Any]] = [{
        "Id": execution_id, "Type": "EXECUTION", "Status": "STARTED",
        "ExecutionDetails": {"InputPayload": json.dumps(history.input)},
    }]
    details_key = {"STEP": "StepDetails", "CONTEXT": "ContextDetails", "WAIT": "WaitDetails",
                   "CALLBACK": "CallbackDetails", "CHAINED_INVOKE": "ChainedInvokeDetails"}
    for index, event in enumerate(history.events):
        aws = _aws(event, index)
        if aws["type"] not in details_key:
            raise AwsHistoryError(f"$.events[{index}].aws.type: {aws['type']!r} is not an operation type")
        operation: dict[str, Any] = {"Id": aws["id"], "Type": aws["type"], "Status": aws["status"]}
        if not aws.get("unnamed"):
            operation["Name"] = event.name
        if isinstance(aws.get("sub_type"), str):
            operation["SubType"] = aws["sub_type"]
        if isinstance(aws.get("parent_id"), str):
            operation["ParentId"] = aws["parent_id"]
        details: dict[str, Any] = {}
        if aws["type"] == "CALLBACK":
            details["CallbackId"] = aws.get("callback_id") or aws["id"]
        if aws["status"] == "SUCCEEDED" and aws["type"] != "WAIT":
            # A chained invoke's result is the invoked function's output, plain JSON text (the SDK reads it with
            # its JSON serdes, not the envelope).
            tag = PLAIN_JSON_TAG if aws["type"] == "CHAINED_INVOKE" else aws.get("tag")
            try:
                details["Result"] = encode_payload(history.event_result(event), tag)
            except PayloadError as error:
                raise AwsHistoryError(f"$.events[{index}].result: {error}") from None
        elif event.error is not None:
            details["Error"] = {"ErrorType": event.error.type, "ErrorMessage": event.error.message}
        operation[details_key[aws["type"]]] = details
        operations.append(operation)
    return operations


def current_handlers(workflows: WorkflowSet, internals: Any) -> dict[str, Callable[..., Any]]:
    """The ``@durable_execution`` handlers among the configured objects, by the names a history's type may
    have: a handler's own name and the attribute it was configured as, or the keys of a dict of handlers
    (``{"lambda-function-name": handler}``)."""
    found: dict[str, Callable[..., Any]] = {}
    for obj, origin in zip(workflows.objects, list(workflows.origins) + [""] * len(workflows.objects)):
        if isinstance(obj, Mapping):
            for key, value in obj.items():
                function = internals.handler_function(value)
                if function is not None:
                    found[str(key)] = function
            continue
        function = internals.handler_function(obj)
        if function is not None:
            found[getattr(obj, "__name__", function.__name__)] = function
            if ":" in origin:
                found[origin.rsplit(":", 1)[1].rsplit(".", 1)[-1]] = function
    return found


def caller_position() -> SourcePosition | None:
    """The line of project code that issued the operation being checked (the handler or a child function)."""
    frame = sys._getframe(2)
    while frame is not None:
        if is_project_file(frame.f_code.co_filename):
            return SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _recorded(event: Event) -> Recorded:
    return Recorded(seq=event.seq, kind=event.kind, name=event.name, payload=event)


class AwsDurableReplayer(NeutralReplayer):
    """The ``HistoryReplayer`` for neutral histories of engine ``aws_durable``."""

    engine = ENGINE

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> ReplayResult:
        """Replay an already loaded history (``path`` is only named in the result)."""
        result = self.new_result(history, path)
        result.run_status = history.status
        if result.status == "error":
            return result
        try:
            from replaytest.plugins.aws_durable import internals
        except ImportError as error:  # pragma: no cover - the SDK is in the test extra
            result.status, result.error = "error", f"aws-durable-execution-sdk-python is not installed (pip install 'replaytest[aws-durable]', Python 3.11+): {error}"
            return result
        try:
            handlers = current_handlers(workflows, internals)
        except ImportError as error:
            result.status, result.error = "error", f"aws-durable-execution-sdk-python is not installed (pip install 'replaytest[aws-durable]', Python 3.11+): {error}"
            return result
        function = handlers.get(history.workflow.type)
        if function is None:
            result.status = "stale"
            result.error = (
                f"no current @durable_execution handler named {history.workflow.type!r} (the Lambda function's name, "
                "or import --workflow-type); configure the handler under that name or a dict {name: handler}; "
                f"known: {', '.join(sorted(handlers)) or workflows.none_found('configure replay_workflows')}"
            )
            return result
        result.notes.append(NO_PROMPTS_NOTE)
        lossy = sorted({kind for e in history.events for kind in (e.extra.get("aws") or {}).get("lossy", ())})
        if lossy:
            result.notes.append(LOSSY_NOTE.format(types=", ".join(lossy)))
        try:
            operations = checkpoint_operations(history, history.workflow.id.rsplit("/", 1)[-1])
        except AwsHistoryError as error:
            result.status, result.error = "error", f"cannot replay: {error}"
            return result
        if options.rehearse:
            rehearsal.remember_callbacks(history)
        divergence, verdict, trips = self._run(history, function, operations, options, internals)
        result.notes.extend(verdict.sleeping_notes)
        if verdict.batch_seen:
            result.notes.append(BATCH_NOTE)
        matcher = verdict.matcher
        assert matcher is not None
        divergence = settle_hazards(result, divergence, trips, lambda trip: _hazard(matcher, trip), options.hazards)
        result.warnings = [*matcher.warnings, *result.warnings]
        if divergence is not None:
            result.status, result.divergence = "diverged", divergence
        elif options.rehearse and history.status in ("running", "parked"):
            self._rehearse(result, history, function, operations, internals)
        return result

    def _rehearse(
        self, result: ReplayResult, history: History, function: Callable[..., Any], operations: list[dict[str, Any]],
        internals: Any,
    ) -> None:
        """Resume the green in-flight execution past its history with the SDK (``rehearsal``): its verdict on
        ``result.rehearsal``, or a note saying why the resume was not rehearsed."""

        parked = rehearsal.pending_wait(history)
        if isinstance(parked, str):
            result.notes.append(rehearsal.NOT_REHEARSED + parked)
            return
        resumed, delivered = rehearsal.resumed_operations(history, operations, *parked)
        outcome = rehearsal.rehearse(history, function, resumed, delivered, internals, caller_position)
        if isinstance(outcome, str):
            result.notes.append(outcome)
        else:
            result.rehearsal = outcome

    def _run(
        self, history: History, function: Callable[..., Any], operations: list[dict[str, Any]], options: ReplayOptions,
        internals: Any,
    ) -> tuple[Divergence | None, _Verdict, list[NondeterministicCall]]:
        events = list(history.events)
        by_id = {str((e.extra.get("aws") or {}).get("id")): e for e in events}
        issued_types: dict[str, tuple[str | None, str | None]] = {}  # id -> (sub_type, parent_id) of new operations

        def compared(parent_id: str | None) -> bool:
            """Whether operations under ``parent_id`` are issued in order on the handler thread on replay."""
            while parent_id:
                recorded = by_id.get(parent_id)
                if recorded is not None:
                    aws = recorded.extra["aws"]
                    if aws.get("sub_type") in BATCH_SUBTYPES or aws["status"] in TERMINAL_OPERATION_STATUSES:
                        return False
                    parent_id = aws.get("parent_id")
                else:
                    sub_type, parent_id = issued_types.get(parent_id, (None, None))
                    if sub_type in BATCH_SUBTYPES:
                        return False
            return True

        def in_batch(parent_id: str | None) -> bool:
            while parent_id:
                recorded = by_id.get(parent_id)
                sub_type, parent_id = (recorded.extra["aws"].get("sub_type"), recorded.extra["aws"].get("parent_id")) if recorded else issued_types.get(parent_id, (None, None))
                if sub_type in BATCH_SUBTYPES:
                    return True
            return False

        matched = [e for e in events if compared((e.extra.get("aws") or {}).get("parent_id"))]
        matcher = Matcher(RecordedEvents(matched, _recorded), history.status, options)
        if history.waiting is not None:
            matcher.waiting = (history.waiting.kind, history.waiting.name)
        verdict = _Verdict(matcher=matcher)
        handler_thread: list[int] = []
        lock = threading.Lock()

        def observe(identity: Any, checkpoint: Any, validate: Callable[[], None]) -> None:
            with lock:
                if verdict.divergence is not None or verdict.resumes or verdict.stopped_new is not None:
                    raise _Stop()  # the replay already ended; nothing further runs
                if identity.operation_id in issued_types:
                    return  # the SDK checks an operation twice (at the replay boundary, then as it runs): judged once
                issued_types[identity.operation_id] = (identity.sub_type, identity.parent_id)
                kind = internals.KINDS.get(identity.type, "step")
                command = Issued(kind, identity.name or identity.sub_type or identity.type.lower(), source=caller_position())
                sdk_refusal = None
                try:
                    validate()
                except internals.NonDeterministic as error:
                    sdk_refusal = str(error)
                on_handler_thread = bool(handler_thread) and threading.get_ident() == handler_thread[0]
                if in_batch(identity.parent_id):
                    verdict.batch_seen = True
                if on_handler_thread and compared(identity.parent_id):
                    try:
                        matcher.issue(command)
                    except DivergenceFound as found:
                        verdict.divergence = _with_sdk_verdict(found.divergence, sdk_refusal)
                        raise _Stop() from None
                    except ReachedEnd:
                        verdict.resumes = True
                        raise _Stop() from None
                if sdk_refusal is not None:
                    # Outside the compared operations (a map/parallel branch): the recorded operation at that id, if
                    # any, is what the code no longer issues.
                    message = f"the SDK refuses the operation on replay: NonDeterministicExecutionError: {sdk_refusal}"
                    at = by_id.get(identity.operation_id)
                    recorded = _recorded(at) if at is not None else None
                    verdict.divergence = matcher.divergence("command-mismatch", message, command, recorded, source=command.source)
                    raise _Stop()
                note = _changed_started_wait(history, by_id.get(identity.operation_id), identity, command.source)
                if note is not None:
                    verdict.sleeping_notes.append(note)
                status = internals.checkpoint_status(checkpoint)
                if status is None:
                    verdict.stopped_new = command  # no recorded checkpoint: its body must not run
                    raise _Stop()
                if identity.type == "STEP" and status in RESUMING_STEP_STATUSES:
                    verdict.resumes = True  # the SDK would run the step's body again: where the run resumes
                    raise _Stop()

        modules = orchestration_modules([function])
        guard_state: list[Any] = []

        def traced(event: Any, context: Any) -> Any:
            handler_thread.append(threading.get_ident())
            with guarded(modules, matcher.next_position) as guard:
                guard_state.append(guard)
                return function(event, context)

        output: dict[str, Any] | None = None
        stopped = False
        with internals.watching(observe):
            try:
                output = internals.invoke(traced, history.workflow.id, operations, history.workflow.type, history.code_version)
            except _Stop:
                pass
            except NondeterministicCall:
                stopped = True  # an effect stopped by the guards: the run ended there, reported as a hazard
        trips = list(guard_state[0].trips) if guard_state else []
        if verdict.divergence is not None:
            return verdict.divergence, verdict, trips
        if verdict.resumes or stopped or output is None:
            return None, verdict, trips
        if verdict.stopped_new is not None:
            return self._new_operation(history, matcher, verdict.stopped_new), verdict, trips
        return self._outcome(history, matcher, output), verdict, trips

    def _new_operation(self, history: History, matcher: Matcher, command: Issued) -> Divergence | None:
        """An operation no checkpoint records, outside the compared ones (in a map/parallel branch)."""
        if history.status in ("running", "parked"):
            return None
        message = (
            f"the code issued {command.kind} {command.name!r}, which this {history.status} execution never "
            "recorded (inside a map/parallel branch or a completed child context)"
        )
        return matcher.divergence("extra-command", message, command, None, source=command.source)

    def _outcome(self, history: History, matcher: Matcher, output: Mapping[str, Any]) -> Divergence | None:
        status = output.get("Status")
        where = matcher.last_source
        if status == "PENDING":
            if matcher.index < len(matcher.events):
                upcoming = matcher.events[matcher.index]
                message = (
                    f"the code waits on an operation the history never completes but the history continues with "
                    f"{upcoming.kind} {upcoming.name!r} ({len(matcher.events) - matcher.index} recorded operation(s) not issued)"
                )
                return matcher.divergence("missing-command", message, None, upcoming, source=where)
            if history.status in ("running", "parked"):
                return None
            return matcher.divergence("missing-command", f"the code waits on an operation where the {history.status} execution ends", source=where)
        error = output.get("Error") if status == "FAILED" else None
        error = error if isinstance(error, Mapping) else {}
        error_type, error_message = str(error.get("ErrorType", "Error")), str(error.get("ErrorMessage", ""))
        if error_type.endswith("NonDeterministicExecutionError"):
            # Raised where the identity hook does not see it (a virtual child context, a batch's branches).
            return matcher.divergence("command-mismatch", f"the SDK refuses the replay: NonDeterministicExecutionError: {error_message}", source=where)
        try:
            matcher.finish()
        except DivergenceFound as found:
            return found.divergence
        if status == "FAILED":
            if history.status != "failed":
                return matcher.divergence(
                    "result-mismatch",
                    f"the handler now fails with {error_type.rsplit('.', 1)[-1]}: {error_message}; the history {_ended(history)}",
                    source=where,
                )
            return None
        if history.status == "completed":
            text = output.get("Result")
            returned = json.loads(text) if isinstance(text, str) and text else None
            if value_text(returned) != value_text(history.result):
                return matcher.divergence(
                    "result-mismatch",
                    f"the handler now returns {short_value(returned)}; the history recorded {short_value(history.result)}",
                    source=where,
                )
        elif history.status == "failed":
            recorded = f"{history.error.type}: {history.error.message}" if history.error else "an error"
            return matcher.divergence("result-mismatch", f"the handler now returns where the history failed with {recorded}", source=where)
        return None


def _changed_started_wait(history: History, recorded: Event | None, identity: Any, source: SourcePosition | None) -> str | None:
    """The note for a wait the in-flight execution already started (``recorded``, its checkpoint ``STARTED``) that
    the code now asks to last another duration (``identity.wait_seconds``); None otherwise."""
    if history.status not in ("running", "parked") or recorded is None or identity.wait_seconds is None:
        return None
    aws = recorded.extra.get("aws") or {}
    if aws.get("type") != "WAIT" or aws.get("status") != "STARTED" or recorded.duration_s is None:
        return None
    if abs(identity.wait_seconds - recorded.duration_s) < SAME_WAIT_S:
        return None
    where = f" at {display_path(source.path)}:{source.line}" if source is not None else ""
    return (f"wait {recorded.name!r}{where} now sleeps {identity.wait_seconds:g} s, recorded {recorded.duration_s:g} s: "
            f"{ALREADY_SLEEPING_NOTE}")


def _ended(history: History) -> str:
    return "completed" if history.status == "completed" else f"is {history.status} (it had not failed)"


def _with_sdk_verdict(divergence: Divergence, refusal: str | None) -> Divergence:
    if refusal is None:
        return divergence
    return dataclasses.replace(divergence, message=f"{divergence.message} (the SDK's own check: NonDeterministicExecutionError: {refusal})")


def _hazard(matcher: Matcher, trip: NondeterministicCall) -> Divergence:
    if trip.kind == "step-body":
        instead = "context.step()"
    else:
        instead = PROFILE.replacements.get(trip.category, "a step (context.step)")
    return matcher.divergence(
        "nondeterministic-call", hazard_message(trip, instead, _VERSION_GUARD), source=trip.source, position=trip.position
    )
