"""The double-run tracer of AWS Lambda durable functions: one run of a ``@durable_execution`` handler with
every operation answered by a stub through the SDK's own replay path (``internals.invoke``, as replay
invokes a recorded execution), under the runtime guards, returning a ``Trace``.

The SDK answers an operation from a checkpoint, so the run is a series of invocations, as Lambda re-invokes
an execution: each invocation replays the operations found so far from stub checkpoints and is stopped at
the first operation that has none, before anything of it runs (``internals.watching``); that operation
then gets a ``SUCCEEDED`` checkpoint with the case's stub value for its name and position (a step's or
a chained invoke's result, a callback's answer; a wait has elapsed), and the handler is invoked again,
until an invocation issues nothing new. No step body, submitter or wait-condition check ever runs. A
child context (``run_in_child_context``, ``wait_for_callback``, ``map``, ``parallel`` and their branches)
is orchestration code: it is not stubbed but run, so the operations inside it are stubbed in their turn.

Every invocation after the first replays the earlier ones, so the SDK's own identity check
(``NonDeterministicExecutionError``) judges the run against itself: code that issues other operations on
a later invocation of the same run ends the trace as ``broke``. Operations run on the SDK's worker threads
in map/parallel branches, in no fixed order, so the trace lists every operation in the order of the tree of
contexts (each at its position in its context, as the SDK derives its id), not in the order they ran.
The handler thread runs under the runtime guards (branch threads do not, as in replay); the trace's hazards
are those of the last invocation, which ran the whole code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replaytest.plugins.aws_durable.replayer import _Stop, caller_position, current_handlers
from replaytest.plugins.aws_durable.values import PayloadError, encode_payload
from replaytest.replay.adapter import WorkflowSet
from replaytest.replay.divergence import value_text
from replaytest.replay.double_run import DoubleRunCase, RunConditions, Trace, TracedCommand
from replaytest.replay.guards import NondeterministicCall, guarded, orchestration_modules

# A handler that keeps issuing operations under the stubs is stopped after this many invocations.
MAX_INVOCATIONS = 2000
_NOT_INSTALLED = "aws-durable-execution-sdk-python is not installed (pip install 'replaytest[aws-durable]', Python 3.11+)"
# Where each operation type keeps its result in a checkpoint (the Lambda API's JSON shape).
_DETAILS = {"STEP": "StepDetails", "WAIT": "WaitDetails", "CALLBACK": "CallbackDetails",
            "CHAINED_INVOKE": "ChainedInvokeDetails"}


@dataclass
class _Operation:
    """One operation the run issued: its command and where it sits in the tree of contexts."""

    command: TracedCommand
    parent_id: str | None
    found: int  # the order in which the run first issued it


class _Invocation:
    """What one invocation saw: new operations (stopped before they ran) and the SDK's refusal, if any."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.new: list[tuple[Any, int]] = []  # (identity, position among every operation found) of new ones
        self.refusal: str | None = None
        self.refused: tuple[str, TracedCommand] | None = None  # (operation id, what the code issued there)


def trace_aws_durable(workflows: WorkflowSet, case: DoubleRunCase, conditions: RunConditions) -> Trace:
    """One stubbed run of the case's handler under ``conditions``."""
    try:
        from replaytest.plugins.aws_durable import internals

        handlers = current_handlers(workflows, internals)
    except ImportError as error:
        return Trace(error=f"{_NOT_INSTALLED}: {error}")
    function = handlers.get(case.workflow)
    if function is None:
        return Trace(error=f"no current @durable_execution handler named {case.workflow!r}; known: "
                           f"{', '.join(sorted(handlers)) or workflows.none_found('give --workflows')}")
    name = case.workflow
    arn = f"arn:aws:lambda:us-east-1:000000000000:function:{name}/durable-execution/{case.workflow_id or 'double-run'}"
    try:
        execution = {"Id": arn.rsplit("/", 1)[-1], "Type": "EXECUTION", "Status": "STARTED",
                     "ExecutionDetails": {"InputPayload": encode_payload(case.input, "json")}}
    except (PayloadError, TypeError, ValueError) as error:
        return Trace(error=f"the case's input is not JSON: {error}")
    stubs: list[dict[str, Any]] = []
    operations: dict[str, _Operation] = {}
    modules = orchestration_modules([function])
    trace = Trace()
    refused: tuple[str, TracedCommand] | None = None
    with conditions.applied():
        for _ in range(MAX_INVOCATIONS):
            invocation = _Invocation()
            guards: list[Any] = []
            output, stopped = _invoke(internals, function, modules, arn, [execution, *stubs], name, invocation,
                                      operations, guards)
            trace.hazards.clear()
            trace.stopped = None
            if guards:
                trace.add_guard_trips(guards[0].trips)
            if invocation.refusal is not None:
                trace.ending, trace.result = "broke", f"NonDeterministicExecutionError: {invocation.refusal}"
                refused = invocation.refused
                break
            if stopped:
                trace.ending, trace.result = "stopped", "an effect the runtime guards stopped"
                break
            if invocation.new:
                for identity, position in invocation.new:
                    stub = _stub_checkpoint(identity, _stub_value(case, internals, identity, position, operations))
                    if isinstance(stub, str):
                        trace.ending, trace.result = "failed", stub
                        break
                    stubs.append(stub)
                else:
                    continue
                break
            _ending(trace, output)
            break
        else:
            trace.ending, trace.result = "stopped", f"still issuing operations after {MAX_INVOCATIONS} invocations"
    order = _in_tree_order(internals, operations)
    trace.commands = [operations[key].command for key in order]
    if refused is not None and refused[0] in operations:
        trace.refused, trace.refused_position = refused[1], order.index(refused[0]) + 1
    return trace


def _invoke(
    internals: Any, function: Callable[..., Any], modules: Any, arn: str, checkpoints: list[dict[str, Any]], name: str,
    invocation: _Invocation, operations: dict[str, _Operation], guards: list[Any],
) -> tuple[dict[str, Any] | None, bool]:
    """One invocation over the stub checkpoints: the SDK's output (None when stopped at a new operation or a
    refusal) and whether the guards stopped an effect."""
    lock = threading.Lock()

    def observe(identity: Any, checkpoint: Any, validate: Callable[[], None]) -> None:
        with lock:
            if invocation.refusal is not None:
                raise _Stop()
            if identity.operation_id in invocation.seen:
                return  # checked twice (at the replay boundary, then as it runs): judged once
            invocation.seen.add(identity.operation_id)
            try:
                validate()
            except internals.NonDeterministic as error:
                invocation.refusal = str(error)
                invocation.refused = (identity.operation_id, _command(internals, identity))
                raise _Stop() from None
            if identity.operation_id not in operations:
                operations[identity.operation_id] = _Operation(_command(internals, identity), identity.parent_id,
                                                               len(operations) + 1)
            if checkpoint is None and identity.type != "CONTEXT":
                invocation.new.append((identity, operations[identity.operation_id].found))
                raise _Stop()  # its body, wait or callback must not run: it gets a stub checkpoint first

    def traced(event: Any, context: Any) -> Any:
        with guarded(modules, lambda: len(invocation.seen)) as guard:
            guards.append(guard)
            return function(event, context)

    with internals.watching(observe):
        try:
            return internals.invoke(traced, arn, checkpoints, name, None), False
        except _Stop:
            return None, False
        except NondeterministicCall:
            return None, True


def _command(internals: Any, identity: Any) -> TracedCommand:
    """The operation as a traced command, at the line of project code that issued it."""
    kind, label = _kind_and_name(internals, identity)
    source = caller_position()
    return TracedCommand(kind, label, None, source.path if source else None, source.line if source else None,
                         source.function if source else None)


def _kind_and_name(internals: Any, identity: Any) -> tuple[str, str]:
    return internals.KINDS.get(identity.type, "step"), identity.name or identity.sub_type or identity.type.lower()


def _stub_value(case: DoubleRunCase, internals: Any, identity: Any, position: int,
                operations: dict[str, _Operation]) -> Any:
    """The case's stub for the operation; a callback a ``wait_for_callback`` created is answered by the stub
    named as the ``wait_for_callback`` itself when it has none of its own name."""
    kind, name = _kind_and_name(internals, identity)
    value = case.stub_value(position, kind, name)
    parent = operations.get(identity.parent_id or "")
    if value is None and identity.type == "CALLBACK" and parent is not None and name not in case.steps:
        value = case.steps.get(parent.command.name)
    return value


def _stub_checkpoint(identity: Any, value: Any) -> dict[str, Any] | str:
    """A ``SUCCEEDED`` checkpoint of the operation holding ``value`` (the reason, when it cannot hold it)."""
    operation: dict[str, Any] = {"Id": identity.operation_id, "Type": identity.type, "Status": "SUCCEEDED",
                                 "SubType": identity.sub_type}
    if identity.name:
        operation["Name"] = identity.name
    if identity.parent_id:
        operation["ParentId"] = identity.parent_id
    details: dict[str, Any] = {}
    if identity.type == "CALLBACK":
        details["CallbackId"] = identity.operation_id
    if identity.type == "CALLBACK" and value is not None:
        # A callback's answer is the text its sender sent (the SDK passes it through): a stub string as it
        # is, any other value as its JSON text.
        details["Result"] = value if isinstance(value, str) else encode_payload(value, "json")
    elif identity.type == "CHAINED_INVOKE":
        details["Result"] = encode_payload(value, "json")  # the invoked function's output: plain JSON text
    elif identity.type != "WAIT":
        try:
            details["Result"] = encode_payload(value)
        except (PayloadError, TypeError, ValueError) as error:
            return f"the stub value of {identity.name or identity.sub_type!r} is not JSON: {error}"
    operation[_DETAILS[identity.type]] = details
    return operation


def _ending(trace: Trace, output: dict[str, Any] | None) -> None:
    status = (output or {}).get("Status")
    if status == "SUCCEEDED":
        trace.ending, trace.result = "completed", value_text((output or {}).get("Result"), repr)
    elif status == "FAILED":
        error = (output or {}).get("Error") or {}
        trace.ending = "failed"
        trace.result = f"{str(error.get('ErrorType', 'Error')).rsplit('.', 1)[-1]}: {error.get('ErrorMessage', '')}"
    else:
        trace.ending, trace.result = "waits", f"the invocation ended {status or 'without an output'}"


def _in_tree_order(internals: Any, operations: dict[str, _Operation]) -> list[str]:
    """Every operation's id, each context's before its own, siblings by their position in their context."""
    paths: dict[str, tuple[int, ...]] = {}

    def path(operation_id: str) -> tuple[int, ...]:
        if operation_id not in paths:
            operation = operations[operation_id]
            parent = path(operation.parent_id) if operation.parent_id in operations else ()
            position = internals.operation_position(operation_id, operation.parent_id)
            paths[operation_id] = (*parent, position if position is not None else 100_000 + operation.found)
        return paths[operation_id]

    return sorted(operations, key=path)
