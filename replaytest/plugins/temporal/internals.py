"""Every temporalio private name replaytest relies on, in one module, for the versions it is tested with.

temporalio offers no public way to ask which workflow type a class registers (``@workflow.defn(name=…)``)
or whether it is the dynamic workflow: both are read from ``temporalio.workflow._Definition``, the
object ``@workflow.defn`` attaches to the class. Replay sorts user classes by that name and the prompt
interceptor maps workflow types to classes with it; a divergence names the signal and update handlers
the definition holds (``_Definition.signals`` / ``.updates``).

Nor does it offer a hook for the commands that pass no outbound interceptor (timers, patch markers) or
for ``workflow.wait_condition``. ``watch_workflow`` puts wrappers on the one running workflow instance
(``temporalio.workflow._Runtime.current()``, a ``_WorkflowInstanceImpl``) — never on its class, so
workers outside replay stay untouched: ``_add_command`` (every command, added synchronously while
the workflow code that issued it is on the stack), ``workflow_patch``, ``workflow_wait_condition``,
``workflow_set_signal_handler``/``workflow_set_update_handler`` (handlers set at run time) and
``activate`` (the end of an activation, when the commands are filled in).

Nor which activity type a function registers (``@activity.defn(name=…)``): ``activity_name`` reads
``temporalio.activity._Definition``, for the note on an activity that calls a model and recorded no
prompt version.

(The replay cache, which may not import plugins, also reads the attribute ``__temporal_workflow_definition``
by name, and only its ``name``; it degrades to the class name when the attribute is missing.)

pyproject's ``temporal`` extra bounds temporalio to the versions the tests run (the oldest in
``.ci/compat-matrix``, the newest in the main suite); tests/temporal/test_temporal_internals.py pins this
module to what the public decorator declares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


def workflow_definition(cls: Any) -> Any | None:
    """The definition ``@workflow.defn`` attached to ``cls`` (``.name`` — ``None`` for the dynamic
    workflow —, ``.cls``), or ``None`` when ``cls`` is not a Temporal workflow class."""
    from temporalio.workflow import _Definition

    return _Definition.from_class(cls)


def activity_name(obj: Any) -> str | None:
    """The activity type ``@activity.defn`` registers ``obj`` under, or None (not an activity, or the
    dynamic activity)."""
    from temporalio.activity import _Definition

    if not callable(obj):
        return None
    try:
        defn = _Definition.from_callable(obj)
    except (TypeError, ValueError):
        return None
    return defn.name if defn is not None and isinstance(defn.name, str) else None


def handler_function(defn: Any, kind: str, name: str | None) -> Callable[..., Any] | None:
    """The function of ``defn``'s handler for signal or update (``kind``) ``name`` (``None``: the
    dynamic handler), or ``None`` when the definition declares none."""
    handlers = defn.signals if kind == "signal" else defn.updates
    handler = handlers.get(name)
    return handler.fn if handler is not None else None


class WorkflowWatcher(Protocol):
    """What ``watch_workflow`` reports to, on the workflow's activation thread."""

    def command_added(self, command: Any) -> None:
        """``command`` (a ``WorkflowCommand`` protobuf, filled in only after this returns) was added."""

    def activation_done(self, replaying: bool | None, failure: str | None) -> None:
        """The activation ended: the commands reported since the last one are complete. ``replaying``: the
        activation's own ``is_replaying`` (False past the recorded workflow tasks; None if it has none).
        ``failure``: the failure it completed with (the workflow task fails), as "Type: message"; else None."""

    def patch_called(self, patch_id: str, deprecated: bool, used: bool) -> None:
        """``workflow.patched`` (``deprecated=False``) or ``deprecate_patch`` was called."""

    def wait_started(self) -> object:
        """``workflow.wait_condition`` starts waiting; the token returned is given to ``wait_ended``."""

    def wait_ended(self, token: object) -> None:
        """That wait returned (or raised an ``Exception``, e.g. its timeout); not called when it was
        cancelled, e.g. by the eviction that ends a failed replay."""

    def handler_set(self, kind: str, name: str | None, handler: Callable[..., Any] | None) -> None:
        """``workflow.set_signal_handler``/``set_update_handler`` (``kind`` signal or update) set the
        handler of ``name`` (``None``: the dynamic one) at run time, or removed it (``handler`` None)."""

    def tracing_failed(self, error: Exception) -> None:
        """One of the calls above raised: the trace is incomplete (the replay itself goes on)."""


def signal_names(defn: Any) -> list[str | None]:
    """The names of the signal handlers ``defn`` declares, in declaration order (``None``: the dynamic one)."""
    return list(defn.signals)


def _activation_failure(completion: Any) -> str | None:
    """The failure a ``WorkflowActivationCompletion`` carries, as "Type: message", or None."""
    try:
        if completion is None or not completion.HasField("failed"):
            return None
        failure = completion.failed.failure
    except (AttributeError, ValueError):
        return None
    kind = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
    return f"{kind}: {failure.message}" if kind else str(failure.message)


def current_workflow_instance() -> Any:
    """The workflow instance being built or run (an inbound interceptor's ``init`` runs inside it)."""
    from temporalio.workflow import _Runtime

    return _Runtime.current()


def workflow_instance_class() -> type:
    """The class of the instances ``watch_workflow`` wraps (for the test pinning their methods)."""
    from temporalio.worker._workflow_instance import _WorkflowInstanceImpl

    return _WorkflowInstanceImpl


def watch_workflow(instance: Any, watcher: WorkflowWatcher) -> None:
    """Report ``instance``'s commands, patch calls and condition waits to ``watcher`` (see the module
    docstring); the wrappers are attributes of this instance only."""
    add_command = instance._add_command
    patch = instance.workflow_patch
    wait_condition = instance.workflow_wait_condition
    activate = instance.activate
    set_signal_handler = instance.workflow_set_signal_handler
    set_update_handler = instance.workflow_set_update_handler

    def report(call: Callable[..., Any], *args: Any) -> Any:
        # A watcher that raises must not fail the SDK's own call: raised inside ``activate`` it ends the
        # activation thread and sdk-core waits for a completion that never comes (the replay stalls until
        # its timeout); raised inside workflow code it would read as the code's own failure.
        try:
            return call(*args)
        except Exception as error:
            watcher.tracing_failed(error)
            return None

    def traced_add_command() -> Any:
        command = add_command()
        report(watcher.command_added, command)
        return command

    def traced_patch(id: str, *, deprecated: bool, **options: Any) -> bool:
        used = patch(id, deprecated=deprecated, **options)
        report(watcher.patch_called, id, deprecated, used)
        return bool(used)

    async def traced_wait_condition(*args: Any, **options: Any) -> None:
        token = report(watcher.wait_started)
        try:
            await wait_condition(*args, **options)
        except Exception:  # its timeout: the wait is over (a cancellation or eviction is no Exception)
            report(watcher.wait_ended, token)
            raise
        report(watcher.wait_ended, token)

    def traced_activate(*args: Any, **options: Any) -> Any:
        replaying = getattr(args[0], "is_replaying", None) if args else None
        completion = None
        try:
            completion = activate(*args, **options)
            return completion
        finally:
            report(watcher.activation_done, None if replaying is None else bool(replaying), _activation_failure(completion))

    def traced_set_signal_handler(name: str | None, handler: Callable[..., Any] | None, *args: Any) -> None:
        set_signal_handler(name, handler, *args)
        report(watcher.handler_set, "signal", name, handler)

    def traced_set_update_handler(name: str | None, handler: Callable[..., Any] | None, *args: Any) -> None:
        set_update_handler(name, handler, *args)
        report(watcher.handler_set, "update", name, handler)

    instance.workflow_set_signal_handler = traced_set_signal_handler
    instance.workflow_set_update_handler = traced_set_update_handler
    instance._add_command = traced_add_command
    instance.workflow_patch = traced_patch
    instance.workflow_wait_condition = traced_wait_condition
    instance.activate = traced_activate
