"""The one module that touches aws-durable-execution-sdk-python beyond its documented API.

Replay calls the SDK's own ``durable_execution`` wrapper with a ``DurableExecutionInvocationInputWithClient``
(public: the SDK's way to inject a service client, meant for tests), so the SDK replays the recorded
checkpoint operations exactly as on a Lambda re-invocation. What it relies on besides is here, so an SDK
upgrade that moves it breaks one module (and ``tests/aws_durable/test_aws_internals.py``), and the version
range in pyproject stays bounded to the versions tested:

* a ``@durable_execution`` handler keeps the decorated function as ``__wrapped__`` (``functools.wraps``),
  and every such wrapper shares one code object: how a handler is recognised and unwrapped, so replay can
  run the function under the runtime guards on the SDK's handler thread;
* ``identifier.OperationIdentifier.validate_checkpoint``: every operation the code issues (step, wait,
  callback, child context, map, parallel, invoke) passes its identity (type, subtype, name, parent, the
  id the SDK derives from the position) and its recorded checkpoint through it before anything runs, and
  it raises the SDK's ``NonDeterministicExecutionError`` on a mismatch. Replay wraps it, for the whole
  process while a replay runs, to see each operation in order, where it was issued, and the SDK's verdict;
* ``DurableContext.wait(duration, name)`` checks its wait's identity (above) inside the call: replay wraps it
  too while it watches, to hand that check the seconds the code asks for. The SDK sends them to the service
  only when it starts a wait no checkpoint holds; a wait already started is answered from its checkpoint, so
  the new seconds of a changed wait reach no checkpoint call;
* ``state._STOP_SIGNAL_POLL_SECONDS``: how often the SDK's checkpoint thread looks for the end of an
  invocation (0.1 s). Every invocation ends by waiting for that thread, which a replay's stub client keeps
  idle, so the wait was 0.1 s of every replay's ~0.105 s; a replay polls every 2 ms instead;
* ``identifier.OperationIdNamespace``: an operation's id is derived from its context's id and its position
  in that context, so the double run orders operations issued on the SDK's worker threads (map and
  parallel branches) by their position in the tree of contexts, not by which thread ran first.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

TESTED_VERSIONS = ">=3.0,<3.1"
_REPLAY_STOP_POLL_SECONDS = 0.002

# The neutral kind of each operation type (as the importer names them).
KINDS = {"STEP": "step", "CONTEXT": "step", "WAIT": "timer", "CALLBACK": "signal", "CHAINED_INVOKE": "child-workflow"}


def sdk_version() -> str:
    from importlib.metadata import version

    return version("aws-durable-execution-sdk-python")


_WRAPPER_CODE: Any = None


def _wrapper_code() -> Any:
    global _WRAPPER_CODE
    if _WRAPPER_CODE is None:
        from aws_durable_execution_sdk_python import durable_execution

        def probe(event: Any, context: Any) -> None:  # never called: only its wrapper's code is read
            return None

        _WRAPPER_CODE = durable_execution(probe).__code__
    return _WRAPPER_CODE


def handler_function(obj: Any) -> Callable[..., Any] | None:
    """The function a ``@durable_execution`` handler decorates (None when ``obj`` is not such a handler)."""
    if getattr(obj, "__code__", None) is not _wrapper_code():
        return None
    inner = getattr(obj, "__wrapped__", None)
    return inner if callable(inner) else None


@dataclass(frozen=True)
class Identity:
    """One operation the code issued, as the SDK identifies it."""

    operation_id: str
    type: str  # OperationType value: STEP, CONTEXT, WAIT, CALLBACK, CHAINED_INVOKE
    sub_type: str | None
    name: str | None
    parent_id: str | None
    wait_seconds: int | None = None  # a WAIT's: the seconds the code now asks for (``DurableContext.wait``)


class NonDeterministic(Exception):
    """The SDK's ``NonDeterministicExecutionError`` as replay reports it (its message)."""


# (observer, owner thread) while a replay watches; one replay at a time per process.
_watch_lock = threading.Lock()
# The seconds of the ``DurableContext.wait`` call under way on this thread (branches run on worker threads).
_wait_call = threading.local()


@contextmanager
def watching(observe: Callable[[Identity, Any, Callable[[], None]], None]) -> Iterator[None]:
    """While the block runs, every identity check of the SDK calls ``observe(identity, checkpoint,
    validate)`` instead: ``checkpoint`` is the recorded operation (None when none is recorded at that id)
    and ``validate()`` runs the SDK's own check, raising ``NonDeterministic`` with its message. A wait's
    identity carries the seconds the code asks for."""
    from aws_durable_execution_sdk_python import DurableContext
    from aws_durable_execution_sdk_python.exceptions import NonDeterministicExecutionError
    from aws_durable_execution_sdk_python.identifier import OperationIdentifier

    original = OperationIdentifier.validate_checkpoint
    original_wait = DurableContext.wait

    def wait(self: Any, duration: Any, *args: Any, **kwargs: Any) -> Any:
        outer = getattr(_wait_call, "seconds", None)
        _wait_call.seconds = duration.to_seconds()
        try:
            return original_wait(self, duration, *args, **kwargs)
        finally:
            _wait_call.seconds = outer

    def validate_checkpoint(self: Any, checkpoint: Any) -> None:
        seconds = getattr(_wait_call, "seconds", None) if self.operation_type.value == "WAIT" else None
        identity = Identity(self.operation_id, self.operation_type.value, self.sub_type, self.name, self.parent_id, seconds)

        def validate() -> None:
            try:
                original(self, checkpoint)
            except NonDeterministicExecutionError as error:
                raise NonDeterministic(str(error)) from None

        observe(identity, checkpoint, validate)

    with _watch_lock:
        OperationIdentifier.validate_checkpoint = validate_checkpoint  # type: ignore[method-assign]
        DurableContext.wait = wait  # type: ignore[method-assign]
        try:
            yield
        finally:
            OperationIdentifier.validate_checkpoint = original  # type: ignore[method-assign]
            DurableContext.wait = original_wait  # type: ignore[method-assign]


def operation_position(operation_id: str, parent_id: str | None, limit: int = 10_000) -> int | None:
    """The position at which the context ``parent_id`` (None: the handler) issued the operation
    ``operation_id``, as the SDK derives the id from it (1, 2, ... for operations; 0, 1, ... for the
    branches of a map or parallel); None when it is not among the first ``limit``."""
    from aws_durable_execution_sdk_python.identifier import OperationIdNamespace

    namespace = OperationIdNamespace(parent_id)
    return next((step for step in range(limit + 1) if namespace.create_id_for_step(step) == operation_id), None)


def checkpoint_status(checkpoint: Any) -> str | None:
    """The recorded operation's status (``SUCCEEDED``, ``STARTED``, …), None when none is recorded."""
    status = getattr(checkpoint, "status", None)
    return getattr(status, "value", None)


class _StubServiceClient:
    """The service the SDK checkpoints to: replay records nothing, so every checkpoint is accepted and
    answered with no new state, and there is never a further page of operations to fetch."""

    def checkpoint(self, durable_execution_arn: str, checkpoint_token: str, updates: list[Any], client_token: str | None) -> Any:
        from aws_durable_execution_sdk_python.lambda_service import CheckpointOutput, CheckpointUpdatedExecutionState

        return CheckpointOutput(checkpoint_token=checkpoint_token, new_execution_state=CheckpointUpdatedExecutionState())

    def get_execution_state(self, durable_execution_arn: str, checkpoint_token: str, next_marker: str, max_items: int = 1000) -> Any:
        from aws_durable_execution_sdk_python.lambda_service import StateOutput

        return StateOutput()


@dataclass
class _LambdaContext:
    """The Lambda context object the handler receives (what the SDK and a handler may read of it)."""

    function_name: str | None
    invoked_function_arn: str | None
    aws_request_id: str = "replaytest-replay"
    function_version: str | None = "$LATEST"
    log_group_name: str | None = None
    log_stream_name: str | None = None
    memory_limit_in_mb: str | None = None
    tenant_id: str | None = None
    client_context: Any = None
    identity: Any = None

    def get_remaining_time_in_millis(self) -> int:
        return 900_000

    def log(self, msg: Any) -> None:
        return None


def invoke(
    function: Callable[..., Any], arn: str, operations: list[dict[str, Any]], function_name: str, version: str | None,
) -> dict[str, Any]:
    """Invoke ``function`` (the handler's own function, wrapped afresh by the SDK's ``durable_execution``)
    as Lambda re-invokes a durable execution: ``operations`` are the recorded checkpoint operations (the
    API's JSON shape). Returns the SDK's invocation output (``Status`` SUCCEEDED/FAILED/PENDING, ``Result``,
    ``Error``). A ``BaseException`` raised in the handler thread (a replay stop) propagates."""
    from aws_durable_execution_sdk_python import durable_execution
    from aws_durable_execution_sdk_python import state as sdk_state
    from aws_durable_execution_sdk_python.execution import (
        DurableExecutionInvocationInputWithClient,
        InitialExecutionState,
    )
    from aws_durable_execution_sdk_python.lambda_service import Operation

    state = InitialExecutionState(operations=[Operation.from_dict(op) for op in operations], next_marker="")
    event = DurableExecutionInvocationInputWithClient(
        durable_execution_arn=arn, checkpoint_token="replay", initial_execution_state=state,
        service_client=_StubServiceClient(),
    )
    context = _LambdaContext(function_name, f"arn:aws:lambda:::function:{function_name}", function_version=version or "$LATEST")
    poll = sdk_state._STOP_SIGNAL_POLL_SECONDS
    sdk_state._STOP_SIGNAL_POLL_SECONDS = _REPLAY_STOP_POLL_SECONDS
    try:
        output = durable_execution(function)(event, context)
    finally:
        sdk_state._STOP_SIGNAL_POLL_SECONDS = poll
    return dict(json.loads(json.dumps(output, default=str)))
