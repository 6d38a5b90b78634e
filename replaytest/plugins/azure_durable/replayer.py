"""Replaying Azure Durable Functions histories (neutral histories of engine ``azure_durable``) with the
SDK's own orchestrator.

``AzureDurableReplayer`` rebuilds the Durable Task history of a run (``dtfx_history.sdk_history``), hands
it to the current orchestrator through ``DurableOrchestrationContext.from_json`` and ``Orchestrator.handle``
exactly as the Functions host would, and compares what the orchestrator emitted with what the run
recorded. Activities, sub-orchestrations and timers are never run: the SDK feeds the recorded results
back, and nothing calls an activity function.

The Python SDK matches results to tasks by sequence number only (the Functions host checks names), so
the comparison is done here, action by action in emission order, with ``replay.engine.Matcher``:
``CallActivity``/``CallHttp`` against ``TaskScheduled`` and ``CallEntity``/``SignalEntity`` against ``EventSent``
(step; an entity action named by its operation and entity, ``deposit on @account@acct-1``, its input
digested as an activity's; a ``CallHttp`` by position only, its request uncompared, which a note says),
``CallSubOrchestrator`` against ``SubOrchestrationInstanceCreated`` (child-workflow), ``CreateTimer``
against ``TimerCreated`` (timer; a changed fire time is an ``args-mismatch``), ``ContinueAsNew`` against
``ContinueAsNew`` (the next generation's input not compared, which a note says). Each action carries the
orchestrator's line at the ``yield`` that emitted it (the generator's frame, followed into
``yield from``). An external-event wait emits no history event of its own: the k-th wait for name N
takes the k-th recorded ``EventRaised`` named N, whatever its position (an event may arrive before the
wait), and a wait no recorded event answers is where an unfinished run stands.

The orchestrator runs under the runtime guards, as other replays do: a clock, random or uuid read is a
``nondeterministic-call`` hazard and the replay goes on; a socket, process, file write, or an activity
function of the app called directly is stopped before it does anything and reported at its line.

The end: an orchestrator that returned must have issued every recorded command and, for a completed run,
return the recorded output (``result-mismatch`` otherwise); one that still waits at a ``yield`` while the
history goes on is a ``missing-command`` at that line; a running (or terminated) run passes there.
"""

from __future__ import annotations

import inspect
import types
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from replaytest.history import Event, History
from replaytest.history.digest import args_digest
from replaytest.plugins.azure_durable.dtfx_history import (
    ENGINE,
    TERMINATED,
    TIMER,
    AzureHistoryError,
    entity_operation,
    sdk_history,
)
from replaytest.plugins.azure_durable.profile import PROFILE
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import Divergence, ReplayResult, SourcePosition, short_value, value_text
from replaytest.replay.engine import (
    NO_PROMPTS_NOTE,
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    RecordedEvents,
    check_pending_prompts,
)
from replaytest.replay.guards import (
    NondeterministicCall,
    guarded,
    hazard_message,
    orchestration_modules,
    plain_functions,
    settle_hazards,
)

# Histories from the HTTP API (``import azure-durable --http-json``) are condensed.
CONDENSED_NOTE = (
    "Azure Durable histories from the HTTP API are condensed (no event ids, no activity inputs, no tasks "
    "still pending): arguments and timer fire times were not compared and scheduling order within an episode comes from "
    "scheduled times"
)
HTTP_NOTE = (
    "Azure Durable call_http requests were matched by position only: their method, URL, headers and body "
    "were not compared"
)
CONTINUE_AS_NEW_NOTE = "Azure Durable continue_as_new: the next generation's input was not compared"
NO_ACTIVITY_INPUT_NOTE = "some Azure Durable activity inputs were not stored (large payloads in blobs not fetched): those arguments were not compared"

# SDK ActionType numbers -> neutral kind.
_ACTION_KINDS = {0: "step", 1: "step", 2: "child-workflow", 3: "child-workflow", 4: "continue-as-new", 5: "timer",
                 6: "signal", 7: "step", 8: "step", 9: "step"}
_HTTP_ACTIVITY = "BuiltIn::HttpActivity"


def issued_command(action: dict[str, Any]) -> tuple[str, str, Any]:
    """(kind, name, decoded input or None) of one SDK action JSON."""
    from replaytest.plugins.azure_durable.values import PayloadError, decode_payload

    action_type = int(action.get("actionType", -1))
    kind = _ACTION_KINDS.get(action_type, "step")
    if action_type in (0, 1, 2, 3):
        name = str(action.get("functionName", ""))
    elif action_type == 5:
        name = TIMER
    elif action_type == 6:
        name = str(action.get("externalEventName", ""))
    elif action_type in (7, 9):  # call_entity / signal_entity: the operation and the entity's scheduler id
        name = entity_operation(str(action.get("operation", "")), str(action.get("instanceId", "")))
    elif action_type == 8:
        name = _HTTP_ACTIVITY
    else:
        name = "continue_as_new" if action_type == 4 else f"action {action_type}"
    payload = None
    if kind in ("step", "child-workflow") and action_type != 8:
        try:
            payload = decode_payload(action.get("input"), "the emitted action's input")
        except PayloadError:
            payload = None
    return kind, name, payload


class _YieldTracker:
    """Wraps an orchestrator generator so every action the SDK adds is tied to the line of the ``yield``
    that emitted it (actions are added right after the generator yields a new task)."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.sources: list[SourcePosition | None] = []
        self._pending: SourcePosition | None = None

    def attribute(self, source: SourcePosition | None) -> None:
        from replaytest.plugins.azure_durable import internals

        count = internals.action_count(self.context)
        self.sources.extend([source] * (count - len(self.sources)))

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        tracker = self

        def orchestrator(context: Any) -> Iterator[Any]:
            inner = function(context)
            value: Any = None
            thrown: BaseException | None = None
            while True:
                tracker.attribute(tracker._pending)
                try:
                    task = inner.throw(thrown) if thrown is not None else inner.send(value)
                except StopIteration as stop:
                    tracker.attribute(tracker._pending)
                    return stop.value
                tracker._pending = _suspended_at(inner)
                tracker.attribute(tracker._pending)  # fire-and-forget actions issued on the way
                try:
                    value, thrown = (yield task), None
                except Exception as error:  # a failed task, thrown into the orchestrator by the SDK
                    value, thrown = None, error

        return orchestrator

    def finish(self) -> None:
        self.attribute(self._pending)


def _suspended_at(generator: Any) -> SourcePosition | None:
    while isinstance(getattr(generator, "gi_yieldfrom", None), types.GeneratorType):
        generator = generator.gi_yieldfrom
    frame = getattr(generator, "gi_frame", None)
    if frame is None:
        return None
    return SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def _recorded(event: Event) -> Recorded:
    return Recorded(seq=event.seq, kind=event.kind, name=event.name, args_digest=event.args_digest, payload=event)


class AzureDurableReplayer(NeutralReplayer):
    """The ``HistoryReplayer`` for neutral histories of engine ``azure_durable``."""

    engine = ENGINE

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> ReplayResult:
        """Replay an already loaded history (``path`` is only named in the result)."""
        result = self.new_result(history, path)
        result.run_status = history.status
        if result.status == "error":
            return result
        path = result.history_path
        try:
            from replaytest.plugins.azure_durable import internals
        except ImportError as error:
            result.status, result.error = "error", f"azure-functions-durable is not installed (pip install 'replaytest[azure-durable]'): {error}"
            return result
        orchestrators: dict[str, Callable[..., Any]] = {}
        for obj in workflows.objects:
            orchestrators.update(internals.registered_orchestrators(obj))
        function = orchestrators.get(history.workflow.type)
        if function is None:
            result.status = "stale"
            result.error = (
                f"no current Azure Durable orchestrator named {history.workflow.type!r}; "
                f"known: {', '.join(sorted(orchestrators)) or workflows.none_found('configure replay_workflows')}"
            )
            return result
        result.notes.append(NO_PROMPTS_NOTE)
        azure_fields = [e.extra.get("azure") for e in history.events]
        if any(isinstance(a, dict) and a.get("condensed") for a in azure_fields):
            result.notes.append(CONDENSED_NOTE)
        elif any(isinstance(a, dict) and a.get("input_not_stored") for a in azure_fields):
            result.notes.append(NO_ACTIVITY_INPUT_NOTE)
        try:
            divergence = self._run(history, function, workflows, options, result, internals)
        except AzureHistoryError as error:
            result.status, result.error = "error", f"cannot replay: {error}"
            return result
        if divergence is not None:
            result.status, result.divergence = "diverged", divergence
        return result

    def _run(
        self, history: History, function: Callable[..., Any], workflows: WorkflowSet, options: ReplayOptions,
        result: ReplayResult, internals: Any,
    ) -> Divergence | None:
        from replaytest.plugins.azure_durable.values import encode_payload

        terminated = history.status == "failed" and history.error is not None and history.error.type == TERMINATED
        commands = [e for e in history.events if e.kind != "signal"]
        raised: dict[str, deque[Event]] = defaultdict(deque)
        for event in history.events:
            if event.kind == "signal":
                raised[event.name].append(event)
        matcher = Matcher(RecordedEvents(commands, _recorded), "running" if terminated else history.status, options)
        body = {
            "history": sdk_history(history), "instanceId": history.workflow.id, "isReplaying": True,
            "parentInstanceId": None, "input": encode_payload(history.input), "upperSchemaVersion": 0,
        }
        context = internals.new_context(body)
        tracker = _YieldTracker(context)
        runnable = tracker.wrap(function) if inspect.isgeneratorfunction(function) else function
        modules = orchestration_modules([function])
        bodies = plain_functions(body for obj in workflows.objects for body in internals.registered_activities(obj))
        # The comparison runs after the SDK is done; while it runs, the position is the next action's.
        with guarded(modules, lambda: internals.action_count(context) + 1, bodies) as guard:
            try:
                state, error = internals.run(runnable, context)
            except NondeterministicCall:  # an effect or activity body stopped: the run ended there
                state, error = {"isDone": False}, None
        tracker.finish()
        actions = internals.emitted_actions(context)
        if any(int(action.get("actionType", -1)) == 8 for action in actions):
            result.notes.append(HTTP_NOTE)
        if any(int(action.get("actionType", -1)) == 4 for action in actions):
            result.notes.append(CONTINUE_AS_NEW_NOTE)
        divergence = self._compare(history, matcher, actions, tracker.sources, raised, terminated,
                                   state, error, stopped=guard.stopped is not None)
        result.warnings = matcher.warnings
        check_pending_prompts(result, history.status, None, {}, (), options)
        return settle_hazards(result, divergence, guard.trips, lambda trip: _hazard(matcher, trip), options.hazards)

    def _compare(
        self, history: History, matcher: Matcher, actions: list[dict[str, Any]], tracked: list[SourcePosition | None],
        raised: dict[str, deque[Event]], terminated: bool, state: dict[str, Any], error: BaseException | None, stopped: bool,
    ) -> Divergence | None:
        """The first difference between the emitted actions and the recorded commands, then the ending."""
        sources = tracked + [None] * (len(actions) - len(tracked))
        last_wait: Issued | None = None
        try:
            for action, source in zip(actions, sources):
                kind, name, payload = issued_command(action)
                if kind == "signal":
                    last_wait = Issued(kind, name, source=source)
                    matcher.last_source = source
                    if raised[name]:
                        raised[name].popleft()
                    continue
                digest = args_digest((payload,)) if payload is not None else None
                command = Issued(kind, name, args_digest=digest, source=source)
                recorded = matcher.issue(command)
                if kind == "timer":
                    _check_fire_time(matcher, command, recorded, action.get("fireAt"))
        except DivergenceFound as found:
            return found.divergence
        except ReachedEnd:
            return None
        if stopped:
            return None  # the stopped call is the report: nothing after it was compared
        done = bool(state.get("isDone")) or error is not None
        if not done:
            return self._still_waiting(matcher, history, terminated, last_wait, raised)
        try:
            matcher.finish()
        except DivergenceFound as found:
            return found.divergence
        return _check_outcome(matcher, history, state, error)

    def _still_waiting(
        self, matcher: Matcher, history: History, terminated: bool, last_wait: Issued | None, raised: dict[str, deque[Event]]
    ) -> Divergence | None:
        """The orchestrator stopped at a ``yield`` no recorded event completes."""
        where = matcher.last_source
        unheard = sorted(name for name, events in raised.items() if events)
        hint = f"; recorded external events no wait took: {', '.join(repr(n) for n in unheard)}" if unheard else ""
        waiting = f"the external event {last_wait.name!r}" if last_wait is not None and last_wait.source == where else "a task the history never completes"
        if matcher.index < len(matcher.events):
            upcoming = matcher.events[matcher.index]
            message = (
                f"the code waits for {waiting} but the history continues with {upcoming.kind} {upcoming.name!r} "
                f"({len(matcher.events) - matcher.index} recorded command(s) not issued){hint}"
            )
            return matcher.divergence("missing-command", message, last_wait if last_wait is not None and last_wait.source == where else None, upcoming, source=where)
        if history.status in ("running", "parked") or terminated:
            return None
        message = f"the code waits for {waiting} where the {history.status} history ends{hint}"
        return matcher.divergence("missing-command", message, None, None, source=where)


def _fire_time(text: Any) -> datetime | None:
    """A timer's fire time as the SDK emits it or the task hub stores it (ISO 8601, ``Z`` or an offset)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _check_fire_time(matcher: Matcher, command: Issued, recorded: Recorded, emitted: Any) -> None:
    """A timer the code now sets to fire at another time than the recorded ``TimerCreated``: the SDK
    matches timers by sequence number alone, and a run already waiting keeps the old fire time."""
    event = recorded.payload
    azure = event.extra.get("azure") if isinstance(event, Event) else None
    stored = azure.get("fire_at") if isinstance(azure, dict) else None
    now, then = _fire_time(emitted), _fire_time(stored)
    if azure is None or azure.get("condensed") or now is None or then is None or now == then:
        # A condensed history's episode times are rebuilt from scheduled times, so the code's fire times
        # (computed from them) would differ for no change: CONDENSED_NOTE says they were not compared.
        return
    raise DivergenceFound(matcher.divergence(
        "args-mismatch",
        f"the code now sets the timer to fire at {now.isoformat()}; the history's timer fires at {then.isoformat()} "
        f"({(now - then).total_seconds():+g} s)",
        command, recorded,
    ))


# Why the fix for a value read needs a version guard, and which one (see ``hazard_message``).
_VERSION_GUARD = (
    "runs started before the change must take the old path: Durable Functions has no patch API, so branch on "
    "an input or an orchestration version (context.version) set when the run started"
)


def _hazard(matcher: Matcher, trip: NondeterministicCall) -> Divergence:
    if trip.kind == "step-body":
        instead = "context.call_activity()"
    else:
        instead = PROFILE.replacements.get(trip.category, "an activity (context.call_activity)")
    return matcher.divergence(
        "nondeterministic-call", hazard_message(trip, instead, _VERSION_GUARD), source=trip.source, position=trip.position
    )


def _check_outcome(matcher: Matcher, history: History, state: dict[str, Any], error: BaseException | None) -> Divergence | None:
    where = matcher.last_source
    if history.status == "completed":
        if error is not None:
            return matcher.divergence("result-mismatch", f"the orchestrator now fails with {type(error).__name__}: {error}; the history completed", source=where)
        output = state.get("output")
        if value_text(output) != value_text(history.result):
            return matcher.divergence(
                "result-mismatch",
                f"the orchestrator now returns {short_value(output)}; the history recorded {short_value(history.result)}",
                source=where,
            )
    elif history.status == "failed" and (history.error is None or history.error.type != TERMINATED) and error is None:
        recorded = f"{history.error.type}: {history.error.message}" if history.error else "an error"
        return matcher.divergence("result-mismatch", f"the orchestrator now returns {short_value(state.get('output'))} where the history failed with {recorded}", source=where)
    return None


