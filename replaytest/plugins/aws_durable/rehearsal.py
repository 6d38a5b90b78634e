"""Resume rehearsal for AWS durable executions: the SDK's own ``durable_execution`` wrapper resumes an
execution parked on a wait or a callback on the current code, one operation past its history.

Lambda resumes a parked execution by invoking the function again with every checkpoint operation, the wait
or callback it stood at now ``SUCCEEDED`` (a callback's with the answer sent to it). The rehearsal does
the same with the recorded operations (``replayer.checkpoint_operations``): the pending ``WAIT`` is marked
succeeded, the pending ``CALLBACK`` succeeded with the answer a finished execution of the same function
recorded for that callback in this replay batch (``replay.rehearsal``), else ``null``. The handler's function
then runs through ``internals.invoke`` (a stub service client that accepts every checkpoint) under the
runtime guards, and every operation passes ``internals.watching``, where

* the SDK's own identity check runs first: its ``NonDeterministicExecutionError`` is ``breaks``, at the line
  that issued the operation;
* an operation no checkpoint records is the engine's next command past the history: it stops the
  invocation before anything of it runs (a step body never runs), and the rehearsal ``continues`` with it;
* a recorded operation is answered by the SDK from its checkpoint, as on Lambda.

A wait or callback inside a ``map``/``parallel`` branch is resumed the same way: its branch goes on, on the
SDK's worker thread, to its first operation past the history. The other branches run too, to their own first
new operation (each stopped there); when more than one branch goes on, which runs next depends on the threads,
and the resume is not rehearsed. A refusal in any branch is ``breaks``, as the SDK fails the execution.

Otherwise the SDK's invocation output decides: ``PENDING`` waits, ``SUCCEEDED`` completes, ``FAILED`` with the
SDK's non-determinism error breaks and with another error completes ("the run fails on resume").

Not rehearsed, with a ``resume not rehearsed: …`` note: an execution not waiting on exactly one wait or
callback, one with a step the history leaves started or waiting to be retried (its body would run again) or a
chained invoke in flight (its result cannot be delivered), one whose resume goes on in several branches at
once, or where the guards stopped an effect of the handler past the resume point.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from replaytest.history import History
from replaytest.plugins.aws_durable.importer import TERMINAL_OPERATION_STATUSES
from replaytest.replay.divergence import CommandView, Rehearsal, SourcePosition
from replaytest.replay.guards import NondeterministicCall, guarded, orchestration_modules
from replaytest.replay.rehearsal import recorded_signal, remember_signal

NOT_REHEARSED = "resume not rehearsed: "
# The child contexts of map items and parallel branches: each runs on an SDK worker thread.
BRANCH_SUBTYPES = frozenset({"MapIteration", "ParallelBranch"})


class _Stop(BaseException):
    """Ends the rehearsal's invocation on the handler thread before an operation past the history runs, or at
    the SDK's refusal. A ``BaseException``, so that handler code's ``except Exception`` cannot swallow it."""


def _aws(event: Any) -> dict[str, Any]:
    aws = event.extra.get("aws")
    return aws if isinstance(aws, dict) else {}


def remember_callbacks(history: History) -> None:
    """Offer the answers this history's callbacks received to the rehearsals of its batch."""
    for event in history.events:
        aws = _aws(event)
        if aws.get("type") == "CALLBACK" and aws.get("status") == "SUCCEEDED":
            remember_signal("aws_durable", history.workflow.type, event.name, history.event_result(event))


def pending_wait(history: History) -> tuple[int, str] | str:
    """The index of the one wait or callback the execution is parked on and its kind (``WAIT``/``CALLBACK``),
    or why the resume cannot be rehearsed."""
    waits: list[tuple[int, str]] = []
    for index, event in enumerate(history.events):
        aws = _aws(event)
        if aws.get("status") in TERMINAL_OPERATION_STATUSES:
            continue
        if aws.get("type") == "STEP" and aws.get("status") == "PENDING":
            return f"step {event.name!r} waits to be retried when the history ends (the SDK would run its body again)"
        if aws.get("type") == "STEP" and aws.get("status") == "PENDING":
            return f"step {event.name!r} waits to be retried when the history ends (the SDK would run its body again)"
        if aws.get("type") == "STEP":
            return f"step {event.name!r} was running when the history ends (the SDK would run its body again)"
        if aws.get("type") == "CHAINED_INVOKE":
            return f"the execution waits on the chained invoke {event.name!r}, whose result the rehearsal cannot deliver"
        if aws.get("type") in ("WAIT", "CALLBACK"):
            waits.append((index, str(aws["type"])))
    if not waits:
        return "the execution is not parked on a wait or a callback"
    if len(waits) > 1:
        return f"the execution waits on {len(waits)} waits/callbacks at once"
    return waits[0]


def resumed_operations(
    history: History, operations: list[dict[str, Any]], index: int, kind: str,
) -> tuple[list[dict[str, Any]], str]:
    """``operations`` (the execution's own first) with the pending wait or callback at event ``index``
    completed as Lambda completes it before re-invoking; and what was delivered."""
    from replaytest.plugins.aws_durable.values import encode_payload

    resumed = copy.deepcopy(operations)
    operation = resumed[index + 1]
    event = history.events[index]
    operation["Status"] = "SUCCEEDED"
    if kind == "WAIT":
        return resumed, f"wait {event.name!r} completed"
    found, answer = recorded_signal("aws_durable", history.workflow.type, event.name)
    operation.setdefault("CallbackDetails", {})["Result"] = encode_payload(answer)
    how = "the answer another execution of the function recorded" if found else "null (no answer recorded in the batch)"
    return resumed, f"callback {event.name!r} answered with {how}"


def rehearse(
    history: History, function: Callable[..., Any], operations: list[dict[str, Any]], delivered: str, internals: Any,
    caller: Callable[[], SourcePosition | None],
) -> Rehearsal | str:
    """Resume the parked execution of ``history`` on ``function`` (the current handler's own function) with
    the SDK, ``operations`` being its recorded checkpoint operations with the wait or callback completed
    (``delivered`` says how); the ``Rehearsal``, or why there is none. ``caller()`` is the project line
    issuing the operation."""
    # ("new", view, line, branch) or ("refused", message, line, branch); branch: the map/parallel branch context
    # the operation runs in (None: the handler thread's own contexts)
    stopped: list[tuple[str, Any, SourcePosition | None, str | None]] = []
    seen: set[str] = set()
    contexts = {str(_aws(event).get("id")): (_aws(event).get("sub_type"), _aws(event).get("parent_id")) for event in history.events}
    lock = threading.Lock()

    def branch_of(operation_id: str | None) -> str | None:
        while operation_id:
            sub_type, parent_id = contexts.get(operation_id, (None, None))
            if sub_type in BRANCH_SUBTYPES:
                return operation_id
            operation_id = parent_id
        return None

    def observe(identity: Any, checkpoint: Any, validate: Callable[[], None]) -> None:
        with lock:
            contexts.setdefault(identity.operation_id, (identity.sub_type, identity.parent_id))
            branch = branch_of(identity.operation_id)
            if stopped and branch is None:
                raise _Stop()  # the handler's own code goes no further; other branches run to their own stop
            if identity.operation_id in seen:
                return  # the SDK checks an operation twice (at the replay boundary, then as it runs)
            seen.add(identity.operation_id)
            source = caller()
            try:
                validate()
            except internals.NonDeterministic as refusal:
                stopped.append(("refused", f"NonDeterministicExecutionError: {refusal}", source, branch))
                raise _Stop() from None
            if internals.checkpoint_status(checkpoint) is None:
                detail = {"source": _short(source)} if source is not None else {}
                view = CommandView(internals.KINDS.get(identity.type, "step"),
                                   identity.name or identity.sub_type or identity.type.lower(), detail=detail)
                stopped.append(("new", view, source, branch))
                raise _Stop()

    modules = orchestration_modules([function])
    trips: list[NondeterministicCall] = []

    def traced(event: Any, context: Any) -> Any:
        with guarded(modules) as guard:
            try:
                return function(event, context)
            finally:
                trips.extend(guard.trips)

    output: dict[str, Any] | None = None
    with internals.watching(observe):
        try:
            output = internals.invoke(traced, history.workflow.id, operations, history.workflow.type, history.code_version)
        except _Stop:
            pass
        except NondeterministicCall as effect:
            return f"{NOT_REHEARSED}the runtime guards stopped {effect.call}() in the handler past the resume point ({effect.source})"
    driver = f"aws-durable-execution-sdk-python {internals.sdk_version()} durable_execution (recorded checkpoints, stub service client)"
    note = _hazard_note(trips)
    refused = [stop for stop in stopped if stop[0] == "refused"]
    if refused:  # the SDK fails the execution on a refusal in any branch
        _, found, source, _ = refused[0]
        return Rehearsal("breaks", delivered, error=found, source=source, driver=driver, note=note)
    if stopped:
        branches = {branch for _, _, _, branch in stopped}
        if len(branches) > 1:
            return (f"{NOT_REHEARSED}the resume goes on in {len(branches)} map/parallel branches at once (worker "
                    "threads, in no fixed order): no one operation runs next")
        _, found, source, _ = stopped[0]
        return Rehearsal("continues", delivered, commands=(found,), source=source, driver=driver, note=note)
    status = (output or {}).get("Status")
    if status == "PENDING":
        return Rehearsal("waits", delivered, driver=driver, note=note)
    error = (output or {}).get("Error") if status == "FAILED" else None
    error = error if isinstance(error, dict) else {}
    error_type, message = str(error.get("ErrorType", "Error")), str(error.get("ErrorMessage", ""))
    if error_type.endswith("NonDeterministicExecutionError"):
        return Rehearsal("breaks", delivered, error=f"NonDeterministicExecutionError: {message}", driver=driver, note=note)
    if status == "FAILED":
        failure = f"the run fails on resume: {error_type.rsplit('.', 1)[-1]}: {message}"
        return Rehearsal("completes", delivered, driver=driver, note="; ".join(filter(None, (failure, note))))
    return Rehearsal("completes", delivered, driver=driver, note=note)


def _short(source: SourcePosition) -> str:
    return f"{source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{source.line}"


def _hazard_note(trips: list[NondeterministicCall]) -> str:
    """The nondeterministic reads the guards saw past the resume point (they do not change the verdict)."""
    calls = sorted({f"{trip.call}() at {trip.source}" for trip in trips if not trip.stopped})
    return f"the handler read {', '.join(calls)} while it resumed (nondeterministic)" if calls else ""
