"""Replaying neutral histories of engine ``journal`` with journal workflow functions.

``JournalReplayer`` loads a history, finds the current ``@workflow`` function of its type, and runs it
through ``replaytest.journal.run_workflow`` with a ``ReplayBackend``: every command the context issues is
matched against the recorded event at its position (``replaytest.replay.engine.Matcher``) and answered
with the recorded result, recorded failure (``StepFailed``) or recorded signal payload. Thunks — the
real step, model call, clock read — are never called. The run executes under the runtime guards: a
clock, random or uuid read made directly by orchestration code is a ``nondeterministic-call`` hazard at
its line and the replay goes on (so a command divergence after it is found too); a socket, process, file
write or a step body called directly (a function the workflow modules hand to ``ctx.step``/``ctx.model``,
found in their source) is stopped and reported at its line.
"""

from __future__ import annotations

import ast
import gc
import os
import types
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from replaytest.history import Event, History
from replaytest.journal import Command, RunInfo, StepFailed, find_workflow, run_workflow
from replaytest.journal.commands import Thunk
from replaytest.journal.workflow import Outcome, definition_of
from replaytest.model_clients import model_call_site
from replaytest.plugins.journal import PROFILE
from replaytest.prompts import prompt_manifest, prompt_objects
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import (
    ALREADY_SLEEPING_NOTE,
    Divergence,
    Rehearsal,
    ReplayResult,
    short_value,
    value_text,
)
from replaytest.replay.engine import (
    NO_PROMPTS_NOTE,
    PATCH_MARKER,
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    RecordedEvents,
    check_pending_prompts,
    note_unrecorded_model_calls,
)
from replaytest.replay.guards import (
    NondeterministicCall,
    guarded,
    hazard_message,
    orchestration_modules,
    plain_functions,
    settle_hazards,
)
from replaytest.replay.reads import unrecorded
from replaytest.replay.report import display_path

# What the journal offers instead of each guarded call (the fix named in the report), by lint category.
_INSTEAD = PROFILE.replacements


class ReplayBackend:
    """Answers the context's commands from a history through a ``Matcher``; never runs a thunk."""

    def __init__(self, history: History, matcher: Matcher) -> None:
        self.history = history
        self.matcher = matcher
        # (step, its function) of recorded steps that recorded no prompt version; whether the function
        # calls a model is asked after the replay (the runtime guards stop reading its source during it).
        self.unprompted: list[tuple[str, Any]] = []
        # Notes on the timer a parked run is sleeping on, when the code now asks for another duration.
        self.sleeping_notes: list[str] = []

    def _sleeping_on(self, command: Command) -> None:
        """A timer past the recorded events of a parked run sleeping on it: the worker keeps the due time it
        recorded when the timer started, whatever the code now asks; another duration is a note
        (``ALREADY_SLEEPING_NOTE``; ``impact`` names the runs)."""
        waiting = self.history.waiting
        if (
            waiting is None or self.matcher.index < len(self.matcher.events)
            or (waiting.kind, waiting.name) != ("timer", command.name)
            or waiting.duration_s is None or command.duration_s is None or command.duration_s == waiting.duration_s
        ):
            return
        where = f" at {display_path(command.source.path)}:{command.source.line}" if command.source is not None else ""
        self.sleeping_notes.append(f"timer {command.name!r}{where} now sleeps {command.duration_s:g} s, recorded "
                                   f"{waiting.duration_s:g} s: {ALREADY_SLEEPING_NOTE}")

    def execute(self, command: Command, thunk: Thunk) -> Any:
        source = command.source  # a CallSite; the matcher converts it only for a report
        if command.kind == "marker" and command.name == PATCH_MARKER:
            if command.deprecated:
                return self.matcher.deprecate_patch(command.patch_id or "", source)
            return self.matcher.patched(command.patch_id or "", source)
        issued = Issued(
            kind=command.kind,
            name=command.name,
            args_digest=command.args_digest,
            prompt_version=command.prompt.version if command.prompt is not None else None,
            prompt_params=command.prompt.params if command.prompt is not None else None,
            patch_id=command.patch_id,
            source=source,
            prompt_name=command.prompt.name if command.prompt is not None else None,
        )
        if command.kind == "timer":
            self._sleeping_on(command)
        recorded = self.matcher.issue(issued)
        event: Event = recorded.payload
        if command.kind == "step" and command.fn is not None and event.prompt is None:
            self.unprompted.append((f"step {command.name!r} (event #{event.seq})", command.fn))
        if command.duration_s is not None and event.duration_s is not None and command.duration_s != event.duration_s:
            self.matcher.args_changed(
                issued, recorded, f"timer {command.name!r} now sleeps {command.duration_s:g}s, recorded {event.duration_s:g}s"
            )
        if event.error is not None:
            raise StepFailed(event.name, event.error.type, event.error.message)
        if command.kind == "timer":
            return None
        return self.history.event_result(event)


class JournalReplayer(NeutralReplayer):
    """The ``HistoryReplayer`` for neutral histories of engine ``journal`` (the runner dispatches them here)."""

    engine = "journal"

    def replaying(self) -> AbstractContextManager[object]:
        return _gc_paused()

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> ReplayResult:
        """Replay an already loaded history (``path`` is only named in the result)."""
        result = self.new_result(history, path)
        if result.status == "error":
            return result
        path = result.history_path
        definition = find_workflow(workflows.objects, history.workflow.type)
        if definition is None:
            known = sorted(d.name for d in map(definition_of, workflows.objects) if d is not None)
            result.status = "stale"
            result.error = (
                f"no current code for workflow type {history.workflow.type!r}; "
                f"known types: {', '.join(known) or workflows.none_found('configure replay_workflows')}"
            )
            return result
        if options.fresh_start:
            result.fresh_run = _fresh_run(history, definition, orchestration_modules([definition.fn, *workflows.objects]),
                                          options.fresh_run)
            return result
        events = RecordedEvents(history.events, _recorded)
        waiting = (history.waiting.kind, history.waiting.name) if history.waiting is not None else None
        current = prompt_manifest(definition.fn)
        reached = {event.prompt.name: event.prompt.version for event in history.events if event.prompt is not None}
        ahead = {name: version for name, version in current.items() if name not in reached}
        matcher = Matcher(events, history.status, options, waiting=waiting, prompts_ahead=ahead)
        if history.status == "parked" and waiting is None:
            result.notes.append(NO_WAIT_NOTE)
        backend = ReplayBackend(history, matcher)
        run = RunInfo(
            workflow_type=history.workflow.type,
            workflow_id=history.workflow.id,
            run_id=history.workflow.run_id or history.workflow.id,
            input=history.input,
            code_version=definition.version,
        )
        divergence: Divergence | None = None
        outcome: Outcome | None = None
        modules = orchestration_modules([definition.fn, *workflows.objects])
        with guarded(modules, matcher.next_position, step_bodies(modules)) as guard:
            try:
                outcome = run_workflow(definition, run, backend)
            except DivergenceFound as found:
                divergence = found.divergence
            except NondeterministicCall:
                pass  # a stopped effect, recorded on the guard state; reported below
            except ReachedEnd:
                pass  # a running/parked history ends where the run would resume
        if divergence is None:
            # A changed prompt at a recorded call comes before whatever ended the code (a stopped effect).
            divergence = matcher.unreported_drift()
        if divergence is None and outcome is not None and guard.stopped is None:
            divergence = _check_end(matcher, history, outcome)
        result.warnings = matcher.warnings
        result.notes.extend(backend.sleeping_notes)
        result.patch_decisions = matcher.patch_decisions
        divergence = settle_hazards(result, divergence, guard.trips, lambda trip: _hazard(matcher, trip), options.hazards)
        if divergence is not None:
            result.status = "diverged"
            result.divergence = divergence
        if not reached and history.prompt_manifest is None and current:
            result.notes.append(NO_PROMPTS_NOTE)
        # The journal records a prompt per call only through ``ctx.model(..., prompt=P)``: a plain step
        # that calls a model sent a prompt nothing compares.
        sites = ((step, model_call_site(fn, extra_calls=options.model_calls)) for step, fn in backend.unprompted)
        note_unrecorded_model_calls(result, [(step, site) for step, site in sites if site is not None])
        # The manifest keeps only the parameters' digest; the current code's are named ("parameters now …").
        params = {name: (None, prompt.params) for name, prompt in prompt_objects(definition.fn).items()
                  if prompt.params and prompt.full_version == current.get(name)}
        # Where the parked run resumes, in the journal's words (its waits and timers are named).
        where = f" (it resumes at {history.waiting.kind} {history.waiting.name!r})" if history.waiting is not None else ""
        check_pending_prompts(
            result, history.status, history.prompt_manifest, current, reached, options, matcher.next_position(),
            params=params, where=where,
        )
        if options.rehearse:
            from replaytest.plugins.journal.rehearsal import remember_signals

            remember_signals(history)
            if result.status == "passed" and history.status in ("running", "parked"):
                result.rehearsal = _rehearsal(history, definition, modules)
        return result


def _rehearsal(history: History, definition: Any, modules: list[types.ModuleType]) -> Rehearsal:
    """The in-flight run resumed by the journal's own worker backend (``journal.rehearsal``), under the
    runtime guards: an effect the workflow code makes itself is stopped there too."""
    from replaytest.plugins.journal.rehearsal import DRIVER, rehearse

    with guarded(modules, lambda: 0, step_bodies(modules)) as guard:
        try:
            return rehearse(history, definition)
        except NondeterministicCall:
            stopped = guard.stopped
            where = f" at {stopped.source.path}:{stopped.source.line}" if stopped is not None and stopped.source else ""
            return Rehearsal("breaks", error=f"the resumed run made an effect the runtime guards stopped{where}",
                             driver=DRIVER)


def _fresh_run(history: History, definition: Any, modules: list[types.ModuleType], patch_ids: Sequence[str]) -> Rehearsal:
    """A new run from the history's input by the journal's own worker backend (``journal.rehearsal.fresh_run``),
    under the runtime guards: an effect the workflow code makes itself is stopped there too."""
    from replaytest.plugins.journal.rehearsal import FRESH_DRIVER, fresh_run

    with guarded(modules, lambda: 0, step_bodies(modules)) as guard:
        try:
            return fresh_run(history, definition, patch_ids)
        except NondeterministicCall:
            stopped = guard.stopped
            where = f" at {stopped.source.path}:{stopped.source.line}" if stopped is not None and stopped.source else ""
            return Rehearsal("breaks", error=f"the new run made an effect the runtime guards stopped{where}",
                             driver=FRESH_DRIVER)


# A parked history exported before the journal recorded its pending wait.
NO_WAIT_NOTE = (
    "the history does not record the wait the parked run stands at (exported before replaytest recorded it): "
    "the first command past the recorded events was taken as the resume point; export the run again to check it"
)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one load + replay. A long history is hundreds of thousands
    of live objects that full collections would rescan again and again (measured: a 512,000-event replay
    took 1.8x as long with it on); what the replay allocates is freed when the collector resumes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _recorded(event: Event) -> Recorded:
    return Recorded(
        seq=event.seq,
        kind=event.kind,
        name=event.name,
        args_digest=event.args_digest,
        prompt_version=event.prompt.version if event.prompt is not None else None,
        prompt_params=event.prompt.params if event.prompt is not None else None,
        patch_id=event.patch_id,
        payload=event,
        deprecated=event.extra.get("deprecated") is True,
    )


# Why the fix for a value read needs a version guard, and which one (see ``hazard_message``).
_VERSION_GUARD = (
    'put the new command under `if ctx.patched("<change-id>"):` so histories recorded before it take the old path'
)


def _hazard(matcher: Matcher, trip: NondeterministicCall) -> Divergence:
    instead = "ctx.step(name, fn, ...)" if trip.kind == "step-body" else _INSTEAD.get(trip.category, "a recorded ctx call")
    return matcher.divergence(
        "nondeterministic-call", hazard_message(trip, instead, _VERSION_GUARD), source=trip.source, position=trip.position
    )


# The context methods whose second argument is a step body: ``ctx.step(name, fn, ...)``, ``ctx.model(...)``.
_BODY_METHODS = frozenset({"step", "model"})
_body_names_cache: dict[tuple[str, int, int], tuple[tuple[str, ...], ...]] = {}


def step_bodies(modules: list[types.ModuleType]) -> list[types.FunctionType]:
    """The functions the orchestration modules hand to ``ctx.step``/``ctx.model`` by name (``send_email``,
    ``tools.send_email``), found in their source and looked up in their globals. Not found: bodies passed
    through a variable, a lambda or ``functools.partial``, or chosen at run time."""
    found: list[object] = []
    for module in modules:
        for dotted in _body_names(module):
            value: object = module.__dict__.get(dotted[0])
            for part in dotted[1:]:
                value = getattr(value, part, None)
            if value is not None:
                found.append(value)
    return plain_functions(found)


def _body_names(module: types.ModuleType) -> tuple[tuple[str, ...], ...]:
    """The dotted names in second-argument position of ``<x>.step(...)``/``<x>.model(...)`` calls in the
    module's source (cached by file, modification time and size)."""
    filename = getattr(module, "__file__", None)
    if not filename or not filename.endswith(".py"):
        return ()
    try:
        stat = os.stat(filename)
        key = (filename, stat.st_mtime_ns, stat.st_size)
        cached = _body_names_cache.get(key)
        if cached is not None:
            return cached
        with unrecorded(), open(filename, "rb") as handle:  # replaytest's own read: no verdict input
            tree = ast.parse(handle.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return ()  # the code that runs is what was imported; a source that cannot be read only hides bodies
    names: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _BODY_METHODS
            and len(node.args) >= 2
        ):
            dotted = _dotted(node.args[1])
            if dotted is not None and dotted not in names:
                names.append(dotted)
    _body_names_cache[key] = tuple(names)
    return _body_names_cache[key]


def _dotted(node: ast.expr) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))


def _check_end(matcher: Matcher, history: History, outcome: Outcome) -> Divergence | None:
    """After the code returned, raised or continued: all events issued, and the same ending."""
    try:
        matcher.finish()
    except DivergenceFound as found:
        return found.divergence
    if history.status in ("running", "parked") and outcome.status == "failed":
        assert outcome.error is not None
        where = "still running" if history.status == "running" else "parked, waiting"
        return matcher.divergence(
            "result-mismatch",
            f"the code now fails with {outcome.error.type}: {outcome.error.message} after the last recorded "
            f"event; the recorded run was {where} there (on resume the engine fails it)",
            source=matcher.last_source,
        )
    if history.status == "completed" and outcome.status == "failed":
        assert outcome.error is not None
        return matcher.divergence(
            "result-mismatch",
            f"the code now fails with {outcome.error.type}: {outcome.error.message}; the history completed",
            source=matcher.last_source,
        )
    if history.status == "completed" and outcome.status == "completed":
        if value_text(outcome.result, str) != value_text(history.result, str):
            return matcher.divergence(
                "result-mismatch",
                f"the code now returns {short_value(outcome.result, 80, str)}; the history recorded {short_value(history.result, 80, str)}",
                source=matcher.last_source,
            )
    if history.status == "failed" and outcome.status != "failed":
        recorded = f"{history.error.type}: {history.error.message}" if history.error else "an error"
        return matcher.divergence(
            "result-mismatch",
            f"the code now {outcome.status} where the history failed with {recorded}",
            source=matcher.last_source,
        )
    if history.status == "failed" and outcome.error is not None and history.error is not None:
        if (outcome.error.type, outcome.error.message) != (history.error.type, history.error.message):
            return matcher.divergence(
                "result-mismatch",
                f"the code now fails with {outcome.error.type}: {outcome.error.message}; "
                f"the history failed with {history.error.type}: {history.error.message}",
                source=matcher.last_source,
            )
    return None


