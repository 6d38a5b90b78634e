"""Recording which commands the current code issues, with their inputs, prompts and lines.

sdk-core's message says what kind of command the code issued where the history differs ("Activity
machine does not handle this event …") but not its name or the line that issued it, and it never
compares inputs. Every replay runs with ``CommandRecorder`` among the interceptors: its outbound
interceptor notes every activity, local activity, child workflow, external signal and continue-as-new
with the first stack frame outside temporalio; activities and child workflows also with the digest of
their arguments (encoded and decoded by the configured payload converter, as the history holds them)
and the prompt of the enclosing ``use_prompt``. Timers and patch markers pass no outbound interceptor:
``WorkflowTrace`` (fed by ``temporal.internals.watch_workflow`` on each replayed workflow instance)
notes every command as the instance adds it, every ``workflow.patched``/``deprecate_patch`` call,
every ``workflow.wait_condition`` still waiting and the signal and update handlers set at run time, each with the line of workflow code that issued it —
what ``temporal.failure`` names a timer, patch, signal or update divergence by. Imported when
temporalio is known to be installed.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any, NoReturn

from temporalio import worker
from temporalio.converter import DataConverter

from replaytest.plugins.temporal import internals as temporal_internals
from replaytest.plugins.temporal.inputs import values_digest
from replaytest.plugins.temporal.prompts import current_prompt, current_prompt_params
from replaytest.replay.divergence import SourcePosition

_SKIPPED_PARTS = (f"{os.sep}temporalio{os.sep}", f"{os.sep}asyncio{os.sep}")
_OWN_FILES = (__file__, temporal_internals.__file__)
# WorkflowCommand variants → (command kind as temporal.failure names them, the field holding its name).
_VARIANTS: dict[str, tuple[str, str | None]] = {
    "start_timer": ("timer", "seq"),
    "cancel_timer": ("timer-cancel", "seq"),
    "schedule_activity": ("activity", "activity_type"),
    "schedule_local_activity": ("local-activity", "activity_type"),
    "set_patch_marker": ("patch", "patch_id"),
    "start_child_workflow_execution": ("child-workflow", "workflow_type"),
    "signal_external_workflow_execution": ("signal-external", "signal_name"),
    "request_cancel_external_workflow_execution": ("cancel-external", None),
    "complete_workflow_execution": ("complete", None),
    "fail_workflow_execution": ("fail", None),
    "cancel_workflow_execution": ("cancel", None),
    "continue_as_new_workflow_execution": ("continue-as-new", "workflow_type"),
    "schedule_nexus_operation": ("nexus-operation", None),
    "update_response": ("update-response", "protocol_instance_id"),
    "upsert_workflow_search_attributes": ("search-attributes", None),
    "modify_workflow_properties": ("memo", None),
    "request_cancel_activity": ("activity-cancel", None),
}
# Every other variant (query answers, cancelling a local activity, a signal or a child …) keeps its own
# name as its kind; temporal.failure counts only the kinds the history records events for.


@dataclass(frozen=True)
class IssuedCommand:
    kind: str
    name: str
    source: SourcePosition | None
    digest: str | None = None  # of the decoded arguments; None if they could not be encoded
    prompt: tuple[str, str] | None = None  # (name, version) of the enclosing use_prompt
    prompt_params: Mapping[str, Any] | None = field(default=None, compare=False)  # its prompt's model parameters
    # Whether the activation that issued it replayed a recorded workflow task (False: a task past the
    # history, as a resumed run's); None where unknown (the outbound interceptor's commands).
    replaying: bool | None = None
    duration_s: float | None = None  # a timer's start-to-fire timeout, as the code asks for it now
    # An activity's id as the command carries it (temporalio's default or the code's own): what the server
    # records on the scheduled event and sdk-core checks on replay (``double_run`` writes it there).
    activity_id: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PatchCall:
    patch_id: str
    deprecated: bool  # deprecate_patch rather than patched
    used: bool  # what the call returned: False where the history has no marker for it
    source: SourcePosition | None
    replaying: bool | None = None  # answered in a recorded workflow task (see IssuedCommand.replaying)


@dataclass
class ConditionWait:
    source: SourcePosition | None
    waiting: bool = True  # still waiting when the replay stopped


class WorkflowTrace:
    """Every command the workflow code issued (in order, ``IssuedCommand`` without digests), its
    patch calls and its ``wait_condition`` calls, each with its line; a ``WorkflowWatcher``."""

    def __init__(self) -> None:
        self.commands: list[IssuedCommand] = []
        self.patch_calls: list[PatchCall] = []
        self.waits: list[ConditionWait] = []
        # Signal and update handlers set (function) or removed (None) at run time, by (kind, name).
        self.handlers_set: dict[tuple[str, str | None], Any] = {}
        self._unread: list[tuple[Any, SourcePosition | None]] = []
        self._untagged_patches = 0  # patch calls of the activation under way (the last ones)
        # Activations that failed (the workflow task fails): (their is_replaying, "Type: message").
        self.failed_activations: list[tuple[bool | None, str]] = []
        # Errors of this trace's own bookkeeping ("Type: message"): the trace, and so the report, is incomplete.
        self.tracing_errors: list[str] = []

    def clear(self) -> None:
        self.commands.clear()
        self.patch_calls.clear()
        self.waits.clear()
        self.handlers_set.clear()
        self._unread.clear()
        self._untagged_patches = 0
        self.failed_activations.clear()
        self.tracing_errors.clear()

    def snapshot(self) -> WorkflowTrace:
        """A copy that later replays (of history prefixes, say) do not add to."""
        copy = WorkflowTrace()
        copy.commands, copy.patch_calls, copy.waits = list(self.commands), list(self.patch_calls), list(self.waits)
        copy.handlers_set = dict(self.handlers_set)
        copy.failed_activations = list(self.failed_activations)
        copy.tracing_errors = list(self.tracing_errors)
        return copy

    def command_added(self, command: Any) -> None:
        self._unread.append((command, _caller()))

    def activation_done(self, replaying: bool | None = None, failure: str | None = None) -> None:
        if failure is not None:
            self.failed_activations.append((replaying, failure))
        for command, source in self._unread:
            variant = command.WhichOneof("variant")
            kind, field = _VARIANTS.get(variant, (variant or "unknown", None))
            name = str(getattr(getattr(command, variant), field)) if variant and field else _keys_or_service(command)
            duration = command.start_timer.start_to_fire_timeout.ToNanoseconds() / 1e9 if variant == "start_timer" else None
            activity_id = command.schedule_activity.activity_id if variant == "schedule_activity" else None
            self.commands.append(IssuedCommand(kind, name, source, replaying=replaying, duration_s=duration,
                                               activity_id=activity_id))
        self._unread.clear()
        if self._untagged_patches:
            start = len(self.patch_calls) - self._untagged_patches
            self.patch_calls[start:] = [replace(call, replaying=replaying) for call in self.patch_calls[start:]]
            self._untagged_patches = 0

    def patch_called(self, patch_id: str, deprecated: bool, used: bool) -> None:
        self.patch_calls.append(PatchCall(patch_id, deprecated, used, _caller()))
        self._untagged_patches += 1

    def wait_started(self) -> object:
        wait = ConditionWait(_caller())
        self.waits.append(wait)
        return wait

    def wait_ended(self, token: object) -> None:
        if isinstance(token, ConditionWait):
            token.waiting = False

    def handler_set(self, kind: str, name: str | None, handler: Any) -> None:
        self.handlers_set[(kind, name)] = handler

    def tracing_failed(self, error: Exception) -> None:
        self.tracing_errors.append(f"{type(error).__name__}: {error}")


def _keys_or_service(command: Any) -> str:
    """The name a command without a name field goes by, as ``temporal.history`` names its event: the keys a
    search-attribute or memo upsert sets, a Nexus operation's ``service.operation``."""
    variant = command.WhichOneof("variant")
    if variant == "upsert_workflow_search_attributes":
        attributes = command.upsert_workflow_search_attributes.search_attributes
        # A SearchAttributes message in newer temporalio, the map of indexed fields itself before.
        return ", ".join(sorted(getattr(attributes, "indexed_fields", attributes)))
    if variant == "modify_workflow_properties":
        return ", ".join(sorted(command.modify_workflow_properties.upserted_memo.fields))
    if variant == "schedule_nexus_operation":
        operation = command.schedule_nexus_operation
        return f"{operation.service}.{operation.operation}"
    return ""


class CommandRecorder(worker.Interceptor):
    """Interceptor that appends each intercepted command to ``commands`` (cleared by the caller).
    ``payload_converter``: the workers' (temporalio's default if None)."""

    def __init__(self, payload_converter: Any = None) -> None:
        self.commands: list[IssuedCommand] = []
        self.trace = WorkflowTrace()
        if payload_converter is None:  # imported here, not in workflow code: the sandbox forbids file reads
            payload_converter = DataConverter.default.payload_converter
        self.payload_converter = payload_converter
        # Whether plain JSON values round-trip unchanged: true for temporalio's default converter.
        self.json_native = payload_converter is DataConverter.default.payload_converter

    def workflow_interceptor_class(
        self, input: worker.WorkflowInterceptorClassInput
    ) -> type[worker.WorkflowInboundInterceptor] | None:
        recorder = self

        class _Inbound(worker.WorkflowInboundInterceptor):
            def init(self, outbound: worker.WorkflowOutboundInterceptor) -> None:
                temporal_internals.watch_workflow(temporal_internals.current_workflow_instance(), recorder.trace)
                super().init(_Outbound(outbound, recorder))

        return _Inbound

    def clear(self) -> None:
        """Forget the previous replay's commands and trace."""
        self.commands.clear()
        self.trace.clear()

    def add(self, kind: str, name: str) -> None:
        self.commands.append(IssuedCommand(kind, name, _caller()))

    def add_call(self, kind: str, name: str, args: Sequence[Any]) -> None:
        """An activity or child workflow: also the digest of its arguments, taken now (workflow code
        may change the objects after the call), and its prompt."""
        if self.json_native and all(map(_json_native, args)):
            # Plain JSON values come back from a JSON payload as they are (tuples as lists, which the
            # digest does not tell apart): digest them directly, without encoding twice per call.
            digest = values_digest(args, ())
        else:
            try:
                payloads = self.payload_converter.to_payloads(list(args)) if args else []
                digest = values_digest(self.payload_converter.from_payloads(payloads, None) if payloads else [], payloads)
            except Exception:  # the converter cannot encode them: the real worker would fail the same way
                digest = None
        self.commands.append(IssuedCommand(kind, name, _caller(), digest, current_prompt(), prompt_params=current_prompt_params()))


class _Outbound(worker.WorkflowOutboundInterceptor):
    def __init__(self, next: worker.WorkflowOutboundInterceptor, recorder: CommandRecorder) -> None:
        super().__init__(next)
        self._recorder = recorder

    def start_activity(self, input: worker.StartActivityInput) -> Any:
        self._recorder.add_call("activity", input.activity, input.args)
        return super().start_activity(input)

    def start_local_activity(self, input: worker.StartLocalActivityInput) -> Any:
        self._recorder.add("local-activity", input.activity)
        return super().start_local_activity(input)

    async def start_child_workflow(self, input: worker.StartChildWorkflowInput) -> Any:
        self._recorder.add_call("child-workflow", input.workflow, input.args)
        return await super().start_child_workflow(input)

    async def signal_external_workflow(self, input: worker.SignalExternalWorkflowInput) -> None:
        self._recorder.add("signal-external", input.signal)
        await super().signal_external_workflow(input)

    def continue_as_new(self, input: worker.ContinueAsNewInput) -> NoReturn:
        self._recorder.add("continue-as-new", input.workflow or "")
        super().continue_as_new(input)


def _json_native(value: Any, depth: int = 0) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth > 20:
        return False
    if kind is list or kind is tuple:
        return all(_json_native(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(key) is str and _json_native(item, depth + 1) for key, item in value.items())
    return False


def _caller() -> SourcePosition | None:
    """The innermost frame that is the workflow's own code (not temporalio, asyncio or this module)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if path not in _OWN_FILES and not any(part in path for part in _SKIPPED_PARTS) and not path.startswith("<"):
            return SourcePosition(path, frame.f_lineno, _qualified_name(frame))
        frame = frame.f_back
    return None


def _qualified_name(frame: Any) -> str:
    name = getattr(frame.f_code, "co_qualname", None)  # Python 3.11+
    if name is not None:
        return str(name)
    owner = frame.f_locals.get("self")
    return f"{type(owner).__qualname__}.{frame.f_code.co_name}" if owner is not None else frame.f_code.co_name
