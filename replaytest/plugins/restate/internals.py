"""Every restate-sdk name replay relies on that the SDK does not document as its API, in one place.

Replay runs a handler the way the SDK's ASGI endpoint does (``restate.server.process_invocation_to_completion``),
without HTTP: the SDK's state machine (``restate.vm.VMWrapper`` over the shared core ``restate._internal.PyVM``)
is given the recorded journal as the service-protocol bytes the server would send, its input closed, and the
SDK's own invocation context (``restate.server_context.ServerInvocationContext``) runs the handler against it.
The state machine answers recorded commands from the journal (a replayed ``ctx.run`` returns its recorded
result and its body is not scheduled) and raises its journal-mismatch error (code 570) when the code takes
another path. ``ObservedVM`` reports every command the handler issues to a ``CommandObserver`` before the
handler goes on, which is where replay stops at the first command past the recording, so nothing new runs.

The restate-sdk versions this was tested with are ``TESTED_SDK`` (the range in pyproject.toml).
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any, NoReturn, Protocol, cast

TESTED_SDK = (">=1.0", "<1.4")
_OLDEST, _NEWEST_EXCLUDED = (1, 0), (1, 4)
JOURNAL_MISMATCH = 570
# The state machine's code for a feature the negotiated protocol version lacks (a call within a scope under 6).
UNSUPPORTED_FEATURE = 573


class JournalRefused(Exception):
    """The state machine refused the recorded journal itself (before the handler ran); the message says why."""


class CommandObserver(Protocol):
    """What replay is told while the handler runs; its methods may raise (a ``BaseException``) to stop it."""

    def command(self, entry_type: str, text: dict[int, str], result_recorded: bool = True) -> None:
        """The state machine accepted a command (``entry_type`` as ``sys_journal`` names it; ``text`` its text
        fields by protobuf field number, as the journal's message has them). ``result_recorded`` is False for
        a ``ctx.run`` whose result the journal does not hold: the SDK would run its body now."""

    def rejected(self, entry_type: str | None, text: dict[int, str], code: int | None, message: str) -> NoReturn:
        """The state machine refused the command (or, ``entry_type`` None, the progress it was asked for)."""

    def output(self, value: bytes | None, failure: tuple[int, str] | None) -> None:
        """The handler returned ``value`` or ended with a terminal failure ``(code, message)``."""

    def suspended(self) -> NoReturn:
        """The handler waits for a completion the journal does not hold."""

    def step_body(self, name: str) -> None:
        """A ``ctx.run`` body was about to run (never expected: the observer stops at unrecorded runs); it
        does not run, and the handler's wait for it ends the run."""

    def random_drawn(self) -> None:
        """The handler asked for the invocation's seeded random (``ctx.random()`` or ``ctx.uuid()``)."""

    def waits_for_signal(self, name: str) -> None:
        """The handler waits for the named signal (``ctx.signal``), which writes no command: a mismatch the
        state machine finds next is at this wait."""


def check_version() -> str | None:
    """Why this restate-sdk cannot be used for replay, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("restate-sdk")
    except PackageNotFoundError:
        return "replaying Restate histories needs the Restate SDK (pip install 'replaytest[restate]')"
    parts = tuple(int(part) for part in installed.split(".")[:2] if part.isdigit())
    if not (_OLDEST <= parts < _NEWEST_EXCLUDED):
        return (
            f"restate-sdk {installed} is not a version replay was tested with ({','.join(TESTED_SDK)}); "
            "replay drives the SDK's state machine through names it does not document"
        )
    return None


def _service_classes() -> tuple[type, ...]:
    import restate

    return (restate.Service, restate.VirtualObject, restate.Workflow)


def _endpoint_class() -> type:
    from restate.endpoint import Endpoint

    return cast(type, Endpoint)


# How deep a served app's closures are searched for its endpoint: the ASGI app holds it directly, the AWS
# Lambda adapter the SDK wraps it in on Lambda holds the app.
_CLOSURE_DEPTH = 3


def _endpoint_of_app(app: Any, depth: int = 0) -> Any:
    """The ``Endpoint`` an ASGI app made by ``restate.app(...)`` / ``Endpoint.app()`` serves, or None.

    Private: the SDK keeps no reference from the app to its endpoint but the closure of the ``app``
    coroutine function ``restate.server.asgi_app`` returns (a free variable ``endpoint``)."""
    cells = getattr(app, "__closure__", None)
    if not cells or depth > _CLOSURE_DEPTH:
        return None
    endpoint_class = _endpoint_class()
    inner = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # a free variable not bound yet
            continue
        if isinstance(value, endpoint_class):
            return value
        if callable(value) and getattr(value, "__closure__", None):
            inner.append(value)
    for value in inner:
        found = _endpoint_of_app(value, depth + 1)
        if found is not None:
            return found
    return None


def served_services(obj: Any) -> list[Any] | None:
    """The services, virtual objects and workflows ``obj`` serves, as a user names them: one of them, an
    ``Endpoint``, the ASGI app ``restate.app(services=[...])`` returns, a module (every one of them among
    its attributes) or a list or tuple of those; None when ``obj`` (or an item of its list) is none of these."""
    services = _service_classes()
    if isinstance(obj, services):
        return [obj]
    if isinstance(obj, _endpoint_class()):
        return list(cast(Any, obj).services.values())
    if isinstance(obj, types.ModuleType):
        # Its services, and those of an endpoint or app it holds (services bound in another module).
        found: list[Any] = []
        for value in list(vars(obj).values()):
            if isinstance(value, (types.ModuleType, list, tuple)):
                continue  # a module it imported is not what it serves, nor is any list it keeps
            served = served_services(value)
            found.extend(item for item in served or () if all(item is not seen for seen in found))
        return found or None
    if isinstance(obj, (list, tuple)):
        collected: list[Any] = []
        for item in obj:
            served = served_services(item)
            if served is None:
                return None
            collected.extend(served)
        return collected
    if callable(obj):
        endpoint = _endpoint_of_app(obj)
        if endpoint is not None:
            return list(endpoint.services.values())
    return None


def find_handler(services: Any, service_name: str, handler_name: str) -> tuple[Any, list[str]]:
    """The SDK handler ``service_name/handler_name`` among ``services`` (``served_services``), and every
    ``service/handler`` seen, for a stale history's message."""
    seen: list[str] = []
    found = None
    for service in services:
        for name, handler in service.handlers.items():
            seen.append(f"{service.name}/{name}")
            if service.name == service_name and name == handler_name and found is None:
                found = handler
    return found, seen


def handler_function(handler: Any) -> Any:
    """The user function the SDK handler wraps."""
    return getattr(handler, "fn", None)


def _observed_vm_class() -> type:
    from restate._internal import VMException
    from restate.vm import SUSPENDED, VMWrapper

    def code_of(error: Exception) -> int | None:
        text = str(error)
        if text.startswith("(") and ")" in text:
            head = text[1 : text.index(")")]
            return int(head) if head.isdigit() else None
        return None

    class ObservedVM(VMWrapper):  # type: ignore[misc]
        def __init__(self, headers: list[tuple[str, str]], observer: CommandObserver) -> None:
            super().__init__(headers)
            self.observer = observer

        def _command(self, entry_type: str, text: dict[int, str], call: Callable[[], Any]) -> Any:
            try:
                outcome = call()
            except VMException as error:
                self.observer.rejected(entry_type, text, code_of(error), str(error))
            self.observer.command(entry_type, text)
            return outcome

        def sys_run(self, name: str) -> Any:
            try:
                run = VMWrapper.sys_run(self, name)
            except VMException as error:
                self.observer.rejected("Command: Run", {12: name}, code_of(error), str(error))
            self.observer.command("Command: Run", {12: name}, bool(run.replayed))
            return run

        def sys_call(self, service: str, handler: str, parameter: bytes, *args: Any, **kwargs: Any) -> Any:
            text = {1: service, 2: handler}
            return self._command("Command: Call", text, lambda: VMWrapper.sys_call(self, service, handler, parameter, *args, **kwargs))

        def sys_send(self, service: str, handler: str, parameter: bytes, *args: Any, **kwargs: Any) -> Any:
            text = {1: service, 2: handler}
            return self._command("Command: OneWayCall", text, lambda: VMWrapper.sys_send(self, service, handler, parameter, *args, **kwargs))

        def sys_sleep(self, millis: int, name: str | None = None) -> Any:
            return self._command("Command: Sleep", {12: name or ""}, lambda: VMWrapper.sys_sleep(self, millis, name))

        # State calls forward what they are given: before 1.3 they take no entry name.
        def sys_get_state(self, name: str, *args: Any) -> Any:
            return self._command("Command: GetEagerState", {1: name}, lambda: VMWrapper.sys_get_state(self, name, *args))

        def sys_get_state_keys(self, *args: Any) -> Any:
            return self._command("Command: GetEagerStateKeys", {}, lambda: VMWrapper.sys_get_state_keys(self, *args))

        def sys_set_state(self, name: str, value: bytes, *args: Any) -> Any:
            return self._command("Command: SetState", {1: name}, lambda: VMWrapper.sys_set_state(self, name, value, *args))

        def sys_clear_state(self, name: str, *args: Any) -> Any:
            return self._command("Command: ClearState", {1: name}, lambda: VMWrapper.sys_clear_state(self, name, *args))

        def sys_clear_all_state(self, *args: Any) -> Any:
            return self._command("Command: ClearAllState", {}, lambda: VMWrapper.sys_clear_all_state(self, *args))

        def sys_get_promise(self, name: str) -> Any:
            return self._command("Command: GetPromise", {1: name}, lambda: VMWrapper.sys_get_promise(self, name))

        def sys_peek_promise(self, name: str) -> Any:
            return self._command("Command: PeekPromise", {1: name}, lambda: VMWrapper.sys_peek_promise(self, name))

        def sys_complete_promise_success(self, name: str, value: bytes) -> Any:
            return self._command("Command: CompletePromise", {1: name}, lambda: VMWrapper.sys_complete_promise_success(self, name, value))

        def sys_complete_promise_failure(self, name: str, failure: Any) -> Any:
            return self._command("Command: CompletePromise", {1: name}, lambda: VMWrapper.sys_complete_promise_failure(self, name, failure))

        def sys_resolve_awakeable(self, name: str, value: bytes) -> Any:
            return self._command("Command: CompleteAwakeable", {}, lambda: VMWrapper.sys_resolve_awakeable(self, name, value))

        def sys_reject_awakeable(self, name: str, failure: Any) -> Any:
            return self._command("Command: CompleteAwakeable", {}, lambda: VMWrapper.sys_reject_awakeable(self, name, failure))

        # Waiting for a named signal journals no command, only the signal's
        # notification when it arrives: the observer is told where the code waits.
        def sys_signal(self, name: str, *args: Any) -> Any:
            self.observer.waits_for_signal(name)
            try:
                return VMWrapper.sys_signal(self, name, *args)
            except VMException as error:
                self.observer.rejected(None, {}, code_of(error), str(error))

        # Cancelling an invocation and resolving or rejecting a named signal write a SendSignal command;
        # without these the command would go unseen and the recorded entry look missing.
        def sys_cancel(self, invocation_id: str, *args: Any) -> Any:
            return self._command("Command: SendSignal", {}, lambda: VMWrapper.sys_cancel(self, invocation_id, *args))

        def sys_resolve_signal(self, invocation_id: str, signal_name: str, value: bytes, *args: Any) -> Any:
            call = lambda: VMWrapper.sys_resolve_signal(self, invocation_id, signal_name, value, *args)  # noqa: E731
            return self._command("Command: SendSignal", {}, call)

        def sys_reject_signal(self, invocation_id: str, signal_name: str, failure: Any, *args: Any) -> Any:
            call = lambda: VMWrapper.sys_reject_signal(self, invocation_id, signal_name, failure, *args)  # noqa: E731
            return self._command("Command: SendSignal", {}, call)

        def attach_invocation(self, invocation_id: str) -> Any:
            return self._command("Command: AttachInvocation", {}, lambda: VMWrapper.attach_invocation(self, invocation_id))

        def sys_write_output_success(self, output: bytes) -> None:
            self.observer.output(bytes(output), None)

        def sys_write_output_failure(self, output: Any) -> None:
            self.observer.output(None, (int(output.code), str(output.message)))

        def sys_end(self) -> None:
            pass  # nothing is sent anywhere

        def notify_error(self, *args: Any, **kwargs: Any) -> None:
            pass  # the handler's error reaches the replay as the exception itself

        def do_progress(self, unresolved_future: Any) -> Any:
            outcome = VMWrapper.do_progress(self, unresolved_future)
            if outcome is SUSPENDED:
                self.observer.suspended()
            if isinstance(outcome, BaseException):
                self.observer.rejected(None, {}, code_of(outcome), str(outcome))
            return outcome

        def take_notification(self, handle: int) -> Any:
            outcome = VMWrapper.take_notification(self, handle)
            if outcome is SUSPENDED:
                self.observer.suspended()
            if isinstance(outcome, VMException):
                self.observer.rejected(None, {}, code_of(outcome), str(outcome))
            return outcome

    return ObservedVM


class _ClosedInput:
    """The request body the SDK's context reads while it waits: closed, as the whole journal came at once."""

    async def __call__(self) -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def enqueue_restate_event(self, event: Any) -> None:
        pass

    async def block_until_http_input_closed(self) -> None:
        pass


async def _discard(message: Any) -> None:
    pass


def run_handler(handler: Any, journal: bytes, protocol_version: int, observer: CommandObserver) -> None:
    """Run the SDK handler over ``journal`` (start message and entries, framed); returns when it ends.

    The observer's ``BaseException`` stops the run and comes out of here; an ``Exception`` the handler
    raised (not a terminal error, which reaches ``observer.output``) comes out as itself."""
    from restate.server_context import ServerInvocationContext

    class ReplayContext(ServerInvocationContext):  # type: ignore[misc]
        async def create_run_coroutine(self, handle: int, action: Any, *args: Any, **kwargs: Any) -> None:
            observer.step_body(getattr(action, "__name__", repr(action)))
            # Runs in a task of its own, whose exception nobody would see: cancelled, it simply never
            # completes, and the handler waiting for it ends with the closed input.
            raise asyncio.CancelledError()

        def random(self) -> Any:
            observer.random_drawn()
            return ServerInvocationContext.random(self)

        def uuid(self) -> Any:
            observer.random_drawn()
            return ServerInvocationContext.uuid(self)

    headers = [("content-type", f"application/vnd.restate.invocation.v{protocol_version}")]
    from restate._internal import VMException

    vm = _observed_vm_class()(headers, observer)
    try:
        vm.notify_input(journal)
        vm.notify_input_closed()
        if not vm.is_ready_to_execute():
            raise JournalRefused("the state machine did not take the recorded journal as a whole")
        invocation = vm.sys_input()
    except VMException as error:
        raise JournalRefused(f"the state machine refused the recorded journal: {str(error).splitlines()[0]}") from None
    context = ReplayContext(
        vm=vm, handler=handler, invocation=invocation, attempt_headers={}, send=_discard, receive=cast(Any, _ClosedInput()),
    )
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(context.enter())
    finally:
        context.on_attempt_finished()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
