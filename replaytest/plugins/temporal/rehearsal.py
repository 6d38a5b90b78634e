"""The resume rehearsal: an in-flight Temporal run resumed one workflow task past its history by
temporalio's own ``Replayer``, so the engine, not replaytest's model, says what the run does on resume.

A parked run waits for something: an activity in flight to finish, a timer to fire, or a signal. The
rehearsal appends that event to the recorded history — the activity completed (with a result the
history records for the same activity type, else null), the timer fired, or the signal (with a payload
the history records for it, else a neutral value built from the handler's parameter types) — and a new
workflow task (scheduled, started), then replays the whole through the open Replayer session. sdk-core
replays the recorded tasks as replaying and runs the new one as a live worker would (``is_replaying``
False), so ``workflow.patched`` answers there as in production: False for a check first evaluated in a
task the run already completed (memoised), True for one first reached in the new task. Activities are
never executed by a Replayer; the commands the code issues in the new task are read from the trace
(``temporal.trace.WorkflowTrace``, each command tagged with its activation's ``is_replaying``).

Which signal: the names the history records as handled, then the handlers the workflow class declares,
then those set at run time; each is tried in turn and the first that makes the run take a step wins.
When nothing deliverable is pending (a child workflow, a Nexus operation, an update, a dynamic-only
signal handler with no recorded name), the rehearsal is not made and the reason is returned as a note.

Imported when temporalio is known to be installed.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import temporalio
from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskStartedEventAttributes,
    HistoryEvent,
    TimerFiredEventAttributes,
    WorkflowExecutionSignaledEventAttributes,
    WorkflowTaskScheduledEventAttributes,
    WorkflowTaskStartedEventAttributes,
)
from temporalio.client import WorkflowHistory

from replaytest.plugins.temporal.internals import handler_function, signal_names
from replaytest.plugins.temporal.trace import IssuedCommand, PatchCall, WorkflowTrace
from replaytest.replay.divergence import ALREADY_SLEEPING_NOTE, CommandView, PatchDecision, Rehearsal
from replaytest.replay.rehearsal import recorded_signal, remember_signal
from replaytest.replay.report import display_path

ENGINE = "temporal"

# The most signals tried on one run (each is a replay of the whole history).
MAX_SIGNALS = 8
_TERMINAL = frozenset({"complete", "fail", "cancel", "continue-as-new"})
_E = EventType
_CHILD_CLOSED = frozenset({
    _E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED, _E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
    _E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, _E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
    _E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT, _E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
})
_NEXUS_CLOSED = frozenset({
    _E.EVENT_TYPE_NEXUS_OPERATION_COMPLETED, _E.EVENT_TYPE_NEXUS_OPERATION_FAILED,
    _E.EVENT_TYPE_NEXUS_OPERATION_CANCELED, _E.EVENT_TYPE_NEXUS_OPERATION_TIMED_OUT,
})


@dataclass
class _Delivery:
    """What to append before the new workflow task, and how the rehearsal says it."""

    events: list[HistoryEvent]
    text: str


@dataclass
class _Pending:
    """What the recorded run waits for at the end of its history."""

    task_open: bool = False  # a workflow task scheduled (maybe started) and not finished
    task_started: int | None = None  # ... its started event id, or None when not started
    task_scheduled: int | None = None
    activities: list[HistoryEvent] | None = None  # scheduled, not closed
    activity_started: dict[int, int] | None = None  # scheduled event id -> started event id
    timers: list[HistoryEvent] | None = None  # started, neither fired nor cancelled
    children: int = 0
    nexus: int = 0
    updates: int = 0


def rehearse(
    history: WorkflowHistory,
    defn: Any,
    replay: Callable[[WorkflowHistory], tuple[Any, WorkflowTrace]],
    encode: Callable[[list[Any]], list[Any]],
    trace: WorkflowTrace,
    decisions: Callable[[Sequence[PatchCall], WorkflowHistory], list[PatchDecision]],
) -> tuple[Rehearsal | None, str | None]:
    """Resume the in-flight run of ``history`` one workflow task past its end (see the module docstring).

    ``defn``: the workflow's temporalio definition. ``replay``: replays a history on the open session and
    returns (temporalio's ``WorkflowReplayResult``, a snapshot of its trace). ``encode``: values to
    payloads with the workers' data converter (codec included). ``trace``: the trace of the replay of
    ``history`` as recorded. ``decisions``: patch calls to ``PatchDecision``. Returns the rehearsal, or
    None and the note saying why the resume was not rehearsed."""
    events = list(history.events)
    pending = _pending(events)
    if pending.task_open:
        return _run(history, events, [], replay, decisions), None
    if pending.activities:
        return _run(history, events, [_activity_done(events, pending)], replay, decisions), None
    waiting_condition = any(wait.waiting for wait in trace.waits)
    candidates, why_not = _signal_candidates(events, defn, trace)
    if pending.timers and not (waiting_condition and candidates):
        return _run(history, events, [_timer_fired(pending)], replay, decisions), None
    if not candidates:
        if pending.children or pending.nexus or pending.updates:
            what = ", ".join(
                text for count, text in ((pending.children, "a child workflow"), (pending.nexus, "a Nexus operation"),
                                         (pending.updates, "an update handler")) if count
            )
            return None, f"resume not rehearsed: the run waits on {what}, which a rehearsal cannot deliver"
        return None, f"resume not rehearsed: could not work out what the run waits for ({why_not})"
    tried: list[Rehearsal] = []
    for name in candidates[:MAX_SIGNALS]:
        delivery = _signal(events, name, defn, trace, encode, _workflow_type(events))
        if isinstance(delivery, str):
            tried.append(Rehearsal("waits", note=delivery))
            continue
        rehearsal = _run(history, events, [delivery], replay, decisions)
        if rehearsal.outcome in ("continues", "completes"):
            return _with_others(rehearsal, name, candidates), None
        tried.append(rehearsal)
    broken = [rehearsal for rehearsal in tried if rehearsal.outcome == "breaks"]
    if broken:
        return broken[0], None
    if len(candidates) == 1 and tried and tried[0].delivered:
        return tried[0], None  # the one signal it handles was delivered: it waits again, honestly
    names = ", ".join(repr(name) for name in candidates[:MAX_SIGNALS])
    return None, (f"resume not rehearsed: could not work out which signal the run waits for; none of {names} "
                  "made it take a step")


def _with_others(rehearsal: Rehearsal, name: str, candidates: Sequence[str]) -> Rehearsal:
    others = [other for other in candidates if other != name]
    if not others:
        return rehearsal
    text = (f"the run also handles signal(s) {', '.join(repr(other) for other in others)}; rehearsed with "
            f"{name!r}, the first that made it take a step")
    note = f"{rehearsal.note}; {text}" if rehearsal.note else text
    return Rehearsal(rehearsal.outcome, rehearsal.delivered, rehearsal.commands, rehearsal.patch_decisions,
                     rehearsal.error, rehearsal.source, rehearsal.driver, note)


def _pending(events: Sequence[HistoryEvent]) -> _Pending:
    pending = _Pending(activities=[], activity_started={}, timers=[])
    activities: dict[int, HistoryEvent] = {}
    timers: dict[str, HistoryEvent] = {}
    children: set[int] = set()
    nexus: set[int] = set()
    updates: set[str] = set()
    for event in events:
        kind = event.event_type
        if kind == _E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            pending.task_open, pending.task_scheduled, pending.task_started = True, event.event_id, None
        elif kind == _E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            pending.task_started = event.event_id
        elif kind in (_E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, _E.EVENT_TYPE_WORKFLOW_TASK_FAILED,
                      _E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT):
            pending.task_open, pending.task_started = False, None
        elif kind == _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activities[event.event_id] = event
        elif kind == _E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            assert pending.activity_started is not None
            pending.activity_started[event.activity_task_started_event_attributes.scheduled_event_id] = event.event_id
        elif kind in (_E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, _E.EVENT_TYPE_ACTIVITY_TASK_FAILED,
                      _E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, _E.EVENT_TYPE_ACTIVITY_TASK_CANCELED):
            attributes = getattr(event, event.WhichOneof("attributes") or "", None)
            activities.pop(getattr(attributes, "scheduled_event_id", -1), None)
        elif kind == _E.EVENT_TYPE_TIMER_STARTED:
            timers[event.timer_started_event_attributes.timer_id] = event
        elif kind == _E.EVENT_TYPE_TIMER_FIRED:
            timers.pop(event.timer_fired_event_attributes.timer_id, None)
        elif kind == _E.EVENT_TYPE_TIMER_CANCELED:
            timers.pop(event.timer_canceled_event_attributes.timer_id, None)
        elif kind == _E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            children.add(event.event_id)
        elif kind == _E.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
            nexus.add(event.event_id)
        elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            updates.add(event.workflow_execution_update_accepted_event_attributes.protocol_instance_id)
        elif kind == _E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            updates.discard(event.workflow_execution_update_completed_event_attributes.meta.update_id)
        elif kind in _CHILD_CLOSED:
            closing: Any = getattr(event, event.WhichOneof("attributes") or "")
            children.discard(closing.initiated_event_id)
        elif kind in _NEXUS_CLOSED:
            closing = getattr(event, event.WhichOneof("attributes") or "")
            nexus.discard(closing.scheduled_event_id)
    pending.activities = sorted(activities.values(), key=lambda event: event.event_id)
    # The timer due first fires first.
    pending.timers = sorted(
        timers.values(),
        key=lambda event: (event.event_time.ToNanoseconds()
                           + event.timer_started_event_attributes.start_to_fire_timeout.ToNanoseconds(), event.event_id),
    )
    pending.children, pending.nexus, pending.updates = len(children), len(nexus), len(updates)
    return pending


def _event(kind: int, field: str, attributes: Any) -> HistoryEvent:
    event = HistoryEvent(event_type=kind)  # type: ignore[arg-type]
    getattr(event, field).CopyFrom(attributes)
    return event


def _activity_done(events: Sequence[HistoryEvent], pending: _Pending) -> _Delivery:
    assert pending.activities and pending.activity_started is not None
    scheduled = pending.activities[0]
    activity_type = scheduled.activity_task_scheduled_event_attributes.activity_type.name
    result, recorded_at = _recorded_result(events, activity_type)
    appended = []
    if scheduled.event_id not in pending.activity_started:
        appended.append(_event(_E.EVENT_TYPE_ACTIVITY_TASK_STARTED, "activity_task_started_event_attributes",
                               ActivityTaskStartedEventAttributes(scheduled_event_id=scheduled.event_id, attempt=1)))
    completed = ActivityTaskCompletedEventAttributes(
        scheduled_event_id=scheduled.event_id, started_event_id=pending.activity_started.get(scheduled.event_id, 0)
    )
    if result is not None:
        completed.result.CopyFrom(result)
    appended.append(_event(_E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, "activity_task_completed_event_attributes", completed))
    how = (f"the result recorded at event {recorded_at}" if recorded_at is not None
           else "no result (null: the history records no result of this activity type)")
    return _Delivery(appended, f"activity {activity_type!r} (event {scheduled.event_id}) completed with {how}")


def _recorded_result(events: Sequence[HistoryEvent], activity_type: str) -> tuple[Payloads | None, int | None]:
    types_by_id = {
        event.event_id: event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events if event.event_type == _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    for event in reversed(events):
        if event.event_type != _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            continue
        attributes = event.activity_task_completed_event_attributes
        if types_by_id.get(attributes.scheduled_event_id) == activity_type and attributes.HasField("result"):
            return attributes.result, event.event_id
    return None, None


def _timer_fired(pending: _Pending) -> _Delivery:
    assert pending.timers
    started = pending.timers[0]
    timer_id = started.timer_started_event_attributes.timer_id
    fired = TimerFiredEventAttributes(timer_id=timer_id, started_event_id=started.event_id)
    return _Delivery([_event(_E.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes", fired)],
                     f"timer {timer_id} (started at event {started.event_id}) fired")


def _signal_candidates(events: Sequence[HistoryEvent], defn: Any, trace: WorkflowTrace) -> tuple[list[str], str]:
    """The signal names the run may wait for, most likely first, and why there are none when so."""
    declared = signal_names(defn) if defn is not None else []
    runtime = [name for (kind, name), handler in trace.handlers_set.items() if kind == "signal" and handler is not None]
    dynamic = None in declared or None in runtime
    known = {name for name in (*declared, *runtime) if name is not None}
    names: list[str] = []
    for event in events:
        if event.event_type == _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            name = event.workflow_execution_signaled_event_attributes.signal_name
            if (name in known or dynamic) and name not in names:
                names.append(name)
    for handled in (*declared, *runtime):
        if handled is not None and handled not in names:
            names.append(handled)
    if names:
        return names, ""
    if dynamic:
        return [], "only a dynamic signal handler, and no signal name recorded in the history"
    return [], "no activity or timer in flight, and the workflow handles no signal"


def _signal(
    events: Sequence[HistoryEvent], name: str, defn: Any, trace: WorkflowTrace, encode: Callable[[list[Any]], list[Any]],
    workflow_type: str,
) -> _Delivery | str:
    """The signal ``name`` with the payload this history recorded for it, else one another run of the same
    workflow type in this replay batch recorded (``replay.rehearsal``), else a neutral one."""
    attributes = WorkflowExecutionSignaledEventAttributes(signal_name=name, identity="replaytest-rehearsal")
    recorded_here = next(
        (event for event in reversed(events) if event.event_type == _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
         and event.workflow_execution_signaled_event_attributes.signal_name == name),
        None,
    )
    sampled, sample = recorded_signal(ENGINE, workflow_type, name)
    if recorded_here is not None:
        recorded = recorded_here.workflow_execution_signaled_event_attributes
        attributes.input.CopyFrom(recorded.input)
        attributes.header.CopyFrom(recorded.header)
        text = f"signal {name!r} with the payload recorded at event {recorded_here.event_id}"
    elif sampled and isinstance(sample, bytes):
        attributes.input.ParseFromString(sample)
        text = f"signal {name!r} with the payload another run of {workflow_type} recorded"
    else:
        handler = trace.handlers_set.get(("signal", name)) or (
            handler_function(defn, "signal", name) if defn is not None else None
        )
        values = _neutral_arguments(handler) if handler is not None else []
        try:
            payloads = encode(values)
        except Exception as error:  # the workers' converter cannot encode a neutral value
            return f"signal {name!r}: no recorded payload and none could be encoded ({type(error).__name__}: {error})"
        attributes.input.payloads.extend(payloads)
        shown = ", ".join(repr(value) for value in values)
        text = f"signal {name!r} with a neutral payload ({shown}): no run of {workflow_type} recorded one"
    return _Delivery([_event(_E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
                             "workflow_execution_signaled_event_attributes", attributes)], text)


def changed_sleeps(events: Sequence[HistoryEvent], commands: Sequence[IssuedCommand]) -> list[str]:
    """For each timer the run is sleeping on (started, not fired or cancelled) whose duration the code now asks
    for differently: a note naming the timer, its line and both durations (``ALREADY_SLEEPING_NOTE``)."""
    notes = []
    for event in _pending(events).timers or []:
        attributes = event.timer_started_event_attributes
        recorded = attributes.start_to_fire_timeout.ToNanoseconds() / 1e9
        issued = next((command for command in commands if command.kind == "timer" and command.name == attributes.timer_id
                       and command.duration_s is not None), None)
        if issued is None or issued.duration_s == recorded:
            continue
        where = f" at {display_path(issued.source.path)}:{issued.source.line}" if issued.source is not None else ""
        notes.append(f"timer {attributes.timer_id}{where} now sleeps {_seconds(issued.duration_s)}, recorded "
                     f"{_seconds(recorded)}: {ALREADY_SLEEPING_NOTE}")
    return notes


def _seconds(value: float | None) -> str:
    return f"{value:g} s"


def _workflow_type(events: Sequence[HistoryEvent]) -> str:
    """The workflow type the run's first event (WorkflowExecutionStarted) names."""
    return events[0].workflow_execution_started_event_attributes.workflow_type.name if events else ""


def remember_signals(workflow_type: str, history: WorkflowHistory) -> None:
    """Offer the signal payloads of ``history`` to the rehearsals of its batch (as the recorded ``Payloads``
    bytes, decoded only by the workers' own converter when a rehearsal delivers them)."""
    for event in history.events:
        if event.event_type == _E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            attributes = event.workflow_execution_signaled_event_attributes
            remember_signal(ENGINE, workflow_type, attributes.signal_name, attributes.input.SerializeToString())


def _neutral_arguments(handler: Callable[..., Any]) -> list[Any]:
    """A neutral value for each required positional parameter of a signal handler, by its type hint."""
    try:
        parameters = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return []
    try:
        hints = typing.get_type_hints(handler)
    except Exception:  # unresolvable annotations: no hints
        hints = {}
    if parameters and parameters[0].name == "self":
        parameters = parameters[1:]
    return [
        _neutral(hints.get(parameter.name, Any))
        for parameter in parameters
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and parameter.default is parameter.empty
    ]


def _neutral(hint: Any) -> Any:
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        arguments = typing.get_args(hint)
        return None if type(None) in arguments else _neutral(arguments[0])
    if origin is typing.Literal:
        return typing.get_args(hint)[0]
    simple: Mapping[Any, Any] = {str: "", int: 0, float: 0.0, bool: False, dict: {}, list: [], tuple: [], set: []}
    if origin in simple:
        return simple[origin]
    try:
        from collections import abc

        if isinstance(origin, type) and issubclass(origin, abc.Mapping):
            return {}
        if isinstance(origin, type) and issubclass(origin, abc.Sequence):
            return []
    except TypeError:
        pass
    return None


def _numbered(events: Sequence[HistoryEvent], appended: Sequence[HistoryEvent], task_started: bool,
              task_scheduled: int | None) -> list[HistoryEvent]:
    """``events`` with ``appended`` and a new workflow task (or the start of the pending one) after them."""
    extended = list(events)
    time = events[-1].event_time

    def add(event: HistoryEvent) -> int:
        copy = HistoryEvent()
        copy.CopyFrom(event)
        copy.event_id = len(extended) + 1
        copy.event_time.CopyFrom(time)
        extended.append(copy)
        return copy.event_id

    for event in appended:
        if event.event_type == _E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            if not attributes.started_event_id:  # the started event appended just before it
                attributes.started_event_id = len(extended)
        add(event)
    if task_scheduled is None:
        task_scheduled = add(_event(_E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, "workflow_task_scheduled_event_attributes",
                                    WorkflowTaskScheduledEventAttributes()))
    if not task_started:
        add(_event(_E.EVENT_TYPE_WORKFLOW_TASK_STARTED, "workflow_task_started_event_attributes",
                   WorkflowTaskStartedEventAttributes(scheduled_event_id=task_scheduled)))
    return extended


def _run(
    history: WorkflowHistory, events: Sequence[HistoryEvent], deliveries: Sequence[_Delivery],
    replay: Callable[[WorkflowHistory], tuple[Any, WorkflowTrace]],
    decisions: Callable[[Sequence[PatchCall], WorkflowHistory], list[PatchDecision]],
) -> Rehearsal:
    pending = _pending(events)
    appended = [event for delivery in deliveries for event in delivery.events]
    if pending.task_open:
        extended = _numbered(events, [], pending.task_started is not None, pending.task_scheduled)
    else:
        extended = _numbered(events, appended, False, None)
    resumed = WorkflowHistory(history.workflow_id, extended)
    outcome, trace = replay(resumed)
    delivered = "; ".join(delivery.text for delivery in deliveries)
    notes = []
    if pending.task_open:
        notes.append("a workflow task was pending at the end of the history: it ran, nothing delivered")
    past = [*_unrecorded(events, trace.commands), *(command for command in trace.commands if command.replaying is False)]
    steps = [command for command in past if command.kind != "patch"]
    driver = f"temporalio {temporalio.__version__} Replayer, one workflow task past the history"
    patch_decisions = tuple(decisions(trace.patch_calls, resumed))
    notes.extend(_patch_notes(trace.patch_calls))
    note = "; ".join(notes)
    views = tuple(_view(command) for command in past)
    if outcome.replay_failure is not None:
        failure = outcome.replay_failure
        return Rehearsal("breaks", delivered, views, patch_decisions, f"{type(failure).__name__}: {failure}",
                         steps[0].source if steps else None, driver, note)
    failed = [text for replaying, text in trace.failed_activations if replaying is False]
    if failed:
        # sdk-core ends a replay at the history's end without a failure for the task past it: the workflow
        # task failing there (the run stuck retrying it in production) is read from the activation itself.
        return Rehearsal("breaks", delivered, views, patch_decisions, f"the workflow task failed: {failed[0]}",
                         steps[0].source if steps else None, driver, note)
    if any(command.kind in _TERMINAL for command in steps):
        kind = "completes"
    elif steps:
        kind = "continues"
    else:
        kind = "waits"
    return Rehearsal(kind, delivered, views, patch_decisions, None, steps[0].source if steps else None, driver, note)


# The history event each command kind leaves, for the commands counted by ``_unrecorded``.
_RECORDED_AS: Mapping[str, int] = {
    "activity": _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    "timer": _E.EVENT_TYPE_TIMER_STARTED,
    "child-workflow": _E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
}


def _unrecorded(events: Sequence[HistoryEvent], commands: Sequence[IssuedCommand]) -> list[IssuedCommand]:
    """Commands the code issued while the recorded tasks replayed that the history has no event for: sdk-core
    lets a replay end there without a nondeterminism error (they follow the last recorded command of their
    kind), and a worker resuming the run sends them with its first task past the history. A step inserted
    before the wait a parked run stands at is such a command: on resume the engine runs it."""
    recorded = {kind: sum(1 for event in events if event.event_type == event_type) for kind, event_type in _RECORDED_AS.items()}
    seen: dict[str, int] = {}
    extra = []
    for command in commands:
        if command.replaying is not True or command.kind not in _RECORDED_AS:
            continue
        seen[command.kind] = seen.get(command.kind, 0) + 1
        if seen[command.kind] > recorded[command.kind]:
            extra.append(command)
    return extra


def _view(command: IssuedCommand) -> CommandView:
    detail: dict[str, Any] = {}
    if command.kind == "patch":
        detail["patch_id"] = command.name
    if command.source is not None:
        detail["source"] = f"{command.source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{command.source.line}"
    return CommandView(command.kind, "" if command.kind == "patch" else command.name, detail=detail)


def _patch_notes(calls: Sequence[PatchCall]) -> list[str]:
    """Why each patch check answered as it did on resume: the first call of each id decides (temporalio
    memoises the answer for the rest of the run)."""
    notes = []
    seen: set[str] = set()
    for call in calls:
        if call.patch_id in seen or call.deprecated:
            seen.add(call.patch_id)
            continue
        seen.add(call.patch_id)
        where = f" at {_where(call)}" if call.source is not None else ""
        if call.replaying and not call.used:
            notes.append(
                f"the guard's check `patched({call.patch_id!r})`{where} ran in a workflow task this run already "
                "completed, so it answers False on resume: the run takes the old path"
            )
        elif call.replaying is False and call.used:
            notes.append(
                f"the guard's check `patched({call.patch_id!r})`{where} is first reached on resume, so it answers "
                "True: the run takes the new path"
            )
    return notes


def _where(call: PatchCall) -> str:
    assert call.source is not None
    return f"{call.source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{call.source.line}"


# The most workflow tasks a fresh run is driven through (each is one replay of a prefix of the history).
MAX_FRESH_TASKS = 64
FRESH_DRIVER = "temporalio {version} Replayer: the recorded start and a first workflow task, then one task at a time"


def fresh_run(
    history: WorkflowHistory,
    replay: Callable[[WorkflowHistory], tuple[Any, WorkflowTrace]],
    decisions: Callable[[Sequence[PatchCall], WorkflowHistory], list[PatchDecision]],
    patch_ids: Sequence[str],
) -> tuple[Rehearsal | None, str | None]:
    """A new run of the current code, as temporalio's own ``Replayer`` runs it, from the input of ``history``:
    the history cut right after its first ``WorkflowTaskStarted`` (its start events and a first task, which
    sdk-core runs with ``is_replaying`` False, so ``workflow.patched`` answers True as a new run's worker
    would); while a patch id of ``patch_ids`` has not been answered yet, the history is cut one workflow task
    later, so the tasks before run as recorded (every activity answered with the result this history recorded
    for it) and the next one runs live. It stops once every id was answered in a live task (the commands of
    that task, the patch marker and the command after it among them), or when the run breaks, ends, or the
    history has no further task. Returns the rehearsal, or None and why it was not made."""
    events = list(history.events)
    task_starts = [index for index, event in enumerate(events) if event.event_type == _E.EVENT_TYPE_WORKFLOW_TASK_STARTED]
    if not task_starts:
        return None, "fresh run not rehearsed: the history records no workflow task to start one from"
    wanted = list(dict.fromkeys(patch_ids))
    found: dict[str, tuple[int, Rehearsal]] = {}
    last: Rehearsal | None = None
    number = 0
    for number, index in enumerate(task_starts[:MAX_FRESH_TASKS], start=1):
        prefix = events[: index + 1]
        last = _run(WorkflowHistory(history.workflow_id, prefix), prefix, [], replay, decisions)
        if last.outcome == "breaks":
            break
        live = {str(view.detail.get("patch_id")) for view in last.commands if view.kind == "patch"}
        for patch_id in wanted:
            if patch_id in live and patch_id not in found:
                found[patch_id] = (number, last)
        if all(patch_id in found for patch_id in wanted) or last.outcome == "completes":
            break
    assert last is not None
    return _fresh(last, number, found, wanted), None


def _fresh(last: Rehearsal, number: int, found: Mapping[str, tuple[int, Rehearsal]], wanted: Sequence[str]) -> Rehearsal:
    """One rehearsal for the fresh run: the live commands of each task that first answered a wanted patch id,
    and of the last task run, in task order; the live answers to the wanted ids; why each id answered so."""
    tasks = sorted({task: rehearsal for task, rehearsal in found.values()}.items())
    if not tasks or tasks[-1][1] is not last:
        tasks.append((number, last))
    commands = [view for _task, rehearsal in tasks for view in rehearsal.commands]
    patch_decisions = tuple(decision for patch_id, (_task, rehearsal) in found.items()
                            for decision in rehearsal.patch_decisions if decision.patch_id == patch_id)
    notes = [f"patch {patch_id!r} first reached in workflow task {task}, which ran live as a new run's worker runs it"
             for patch_id, (task, _rehearsal) in found.items()]
    missing = [patch_id for patch_id in wanted if patch_id not in found]
    if last.outcome == "breaks":
        notes.append(f"the fresh run broke in workflow task {number}")
    elif missing:
        notes.append(f"patch {', '.join(repr(patch_id) for patch_id in missing)} not reached in the {number} "
                     "workflow task(s) driven from the recorded history")
    first = next((view for view in commands if view.kind != "patch"), None)
    source = next((rehearsal.source for _task, rehearsal in tasks if first in rehearsal.commands), last.source)
    driver = FRESH_DRIVER.format(version=temporalio.__version__)
    delivered = ("a new run with the recorded input; each activity answered with the result this history recorded "
                 "for it")
    return Rehearsal(last.outcome, delivered, tuple(commands), patch_decisions, last.error, source, driver,
                     "; ".join(notes))
