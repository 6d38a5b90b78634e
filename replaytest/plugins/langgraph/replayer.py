"""Replaying LangGraph functional-API histories (neutral format, engine ``langgraph``) against the current
``@entrypoint``.

The current entrypoint function runs exactly as LangGraph's runner would call it (input, injected
``previous``/``config``/``writer``), but every ``@task`` call is dispatched to replaytest instead of
LangGraph: through the runnable-config call hook LangGraph itself uses to schedule task calls (see
``langgraph.internals``). Each call is matched by the engine-neutral ``Matcher`` against the recorded
task call at the same call index — the name must agree, since LangGraph finds a stored result by an id
derived from the name and the index — and answered with the recorded result (or recorded failure, the
way LangGraph's own resume raises it). No task body runs; nothing is checkpointed.

``interrupt()`` reads the recorded resume values by index, as LangGraph does. LangGraph does not record
where an interrupt fell between task calls, so interrupts are checked by count, and by the value given
to ``interrupt(value)`` where the history recorded it (``interrupt-mismatch``: the human answered, or
will answer, another question). A parked history records the interrupt it waits at: the code must reach
it having made every recorded task call and no other one — a task call past the recorded ones before
that is an ``extra-command`` (LangGraph would run it for real on resume), a code that parks before calls
the history made is ``missing-command``, and a code that now interrupts where a completed history went
on is an ``extra-command``. A graph the entrypoint invokes from its own code (``editor.invoke(…)``, ``await
editor.ainvoke(…)``: a nested run) is answered from the nested run the history recorded (``_NestedRuns``;
``langgraph.nested``): its code is replayed against its own recorded task calls, and the recorded output is
handed back. Any other way of starting a graph there (``stream``, a compiled ``StateGraph``, a nested run
inside a nested run, an entrypoint of another package, one the history does not hold) stops the replay at that call, after the calls before
it were checked, with an ``error`` naming what is not supported. The run executes under
the runtime guards: a clock, random or uuid read in the entrypoint is a ``nondeterministic-call`` hazard
and the replay goes on; a socket, process, file write, or a ``@task``'s function called directly (the
tasks the entrypoint's modules hold in their globals) is stopped and reported at its line.

LangGraph's store (``store=`` of the ``@entrypoint``) is never reached: the code is given
``langgraph.internals.replay_store``, which discards writes (a note counts them) and stops a read in the
entrypoint's own code at its line with an ``error`` (no checkpoint keeps store values). A ``@task`` reading or
writing the store is answered from its recorded result, its body not run.

``async def`` entrypoints are replayed on a fresh event loop; task calls resolve immediately.

Prompts: a thread recorded with per-call records (``langgraph.recording``) lists on each task call every
prompt it used; each is compared by the matcher with the current code's version at that call (the task
body's prompts and the ``use_prompt`` blocks around the call; the call's other changes in the same message,
``Issued.prompt_also``), and the prompts of the tasks the thread has not recorded yet by ``prompts-pending``
(``check_recorded_prompts``). A thread recorded before them has only its start manifest
(``langgraph.prompts.with_prompts``): the prompts a recorded call uses by the current code are compared at the
manifest's versions, with a note (``engine.check_manifest_prompts``); a history without a manifest gets a note.

A graph-API history (a ``graph`` section) is not replayed here but checked by ``langgraph.graph_check``, and a
parked one that checks green is resume-rehearsed by ``langgraph.graph_rehearsal``.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import contextvars
import inspect
import os
import sys
import textwrap
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from replaytest.history import Event, History
from replaytest.history.redact import DEFAULT_REPLACEMENT
from replaytest.history.strict_json import join_path
from replaytest.model_clients import model_call_site
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.nested import CHILD_KIND, NESTED_FIELD
from replaytest.plugins.langgraph.rehearsal import TASK_LABEL
from replaytest.plugins.langgraph.values import normal_form, revive
from replaytest.prompts import (
    Prompt,
    PromptManifest,
    also_changed,
    fetched_ahead_note,
    fetched_prompt_site,
    prompt_manifest,
    prompt_objects,
    prompt_objects_in_use,
    prompts_in_use,
    renamed_prompts,
    short_version,
    use_prompt,
)
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import (
    CommandView,
    Divergence,
    Rehearsal,
    ReplayResult,
    SourcePosition,
    short_value,
    value_text,
)
from replaytest.replay.engine import (
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    RecordedEvents,
    check_manifest_prompts,
    check_pending_prompts,
    note_unrecorded_model_calls,
    uncompared_prompt_note,
)
from replaytest.replay.guards import (
    NondeterministicCall,
    guarded,
    hazard_message,
    is_project_file,
    orchestration_modules,
    plain_functions,
    settle_hazards,
)

_INSTEAD = "a @task that makes the value (its result is recorded)"
# LangGraph has no version guard: the fix for a value read changes the task call ids of runs in flight.
_VERSION_GUARD = (
    "LangGraph has no version guard, so stamp a version into the input or state and take the new path only "
    "for runs that carry it"
)


# LangGraph's checkpointer stores no task inputs.
NO_ARGUMENTS_NOTE = "LangGraph stores no task inputs: task arguments were not compared"
# What histories imported by earlier versions, or LangGraph's own storage, leave out about interrupts.
NO_INTERRUPT_VALUES_NOTE = (
    "no interrupt values recorded (imported before replaytest recorded them): interrupts were compared by count only"
)
EARLIER_INTERRUPTS_NOTE = (
    "LangGraph keeps only the latest interrupt's value: earlier interrupts were compared by count only"
)
NO_PARK_NOTE = (
    "the history does not record where the run is parked (imported before replaytest recorded it): a task call past "
    "the recorded ones was taken as the resume point; import the thread again to check it"
)
UNREAD_VALUE_NOTE = (
    "the value the code gave interrupt() could not be read from this langgraph version: interrupt values were not compared"
)
NO_CALL_PROMPTS_NOTE = (
    "no per-call prompt versions recorded (thread recorded before replaytest recorded them per task call): the "
    "versions its task calls used are taken from the start manifest"
)
NESTED_RUNS_NOTE = (
    "graphs started from the entrypoint's code were replayed against their recorded nested runs, matched by the "
    "order the code starts them; the prompts of their task calls were not compared"
)
STORE_NOTE = ("the entrypoint has a store (store=...): what it holds is in no checkpoint, so store values were not "
              "compared (tasks using it were answered from their recorded results)")
# The entrypoint's own code wrote to LangGraph's store during replay (``lg.replay_store``).
STORE_WRITES_NOTE = ("the code wrote to LangGraph's store {count} time(s) during replay: the writes were discarded "
                     "(replay never writes to a store) and store values were not compared")
# How the reasons begin for a graph invoked as replay supports whose recorded run the history does not hold.
_NESTED_RUN_NOT_IMPORTED = ("the history holds no graph run #", "the import found graph run #")
NESTED_NOT_REHEARSED_NOTE = "resume not rehearsed: the thread's nested runs are not restored for a rehearsal yet"
INTERRUPT_IN_TASK_NOTE = (
    "the run is parked at an interrupt inside a task body, which replay never runs: that interrupt's value was not compared"
)


class LangGraphReplayer(NeutralReplayer):
    """The ``HistoryReplayer`` for histories imported from LangGraph checkpointers."""

    engine = "langgraph"

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> ReplayResult:
        """Replay an already loaded history (``path`` is only named in the result)."""
        path = path or history.source or Path("<history>")
        result = ReplayResult(path, self.engine, history.workflow.type, history.workflow.id, events=len(history.events))
        problem = lg.version_problem()
        if problem:
            result.status, result.error = "error", problem
            return result
        from replaytest.plugins.langgraph.graph_check import check_graph_history, is_graph_history

        if is_graph_history(history):
            checked = check_graph_history(history, workflows, options, path)
            if options.rehearse and checked.status == "passed" and history.status in ("running", "parked"):
                _rehearse_graph(checked, history, workflows)
            return checked
        found = find_entrypoint(workflows, history.workflow.type)
        if found is None:
            known = sorted(name for name, _ in _entrypoints(workflows))
            result.status = "stale"
            result.error = (
                f"no current @entrypoint named {history.workflow.type!r}; "
                f"known entrypoints: {', '.join(known) or 'none (configure replay_workflows)'}"
            )
            return result
        try:
            run = _Run(history, found, options)
        except _Unsupported as error:
            result.status, result.error = "error", str(error)
            return result
        divergence = run.execute()
        if run.stopped_at_graph is not None:
            graph, reason, where = run.stopped_at_graph
            at = f" at {_display(where.path)}:{where.line}" if where is not None else ""
            result.status = "error"
            # A graph invoked as replay supports, whose recorded run the history lacks: the reason says what to do.
            unimported = reason.startswith(_NESTED_RUN_NOT_IMPORTED)
            how = "" if unimported else " in a way replay does not support"
            advice = "" if unimported else (
                " Call it with invoke()/ainvoke() from the entrypoint, or from inside a @task (whose recorded "
                "result replay feeds back), to make this history replayable"
            )
            result.error = (
                f"the entrypoint starts another LangGraph graph ({graph!r}){at} from its own code{how}: "
                f"{reason}. Replay checked the {run.matcher.index} task call(s) before it and "
                f"stopped at this call, before the graph ran anything; the rest of the thread is not checked."
                f"{advice}"
            )
            return result
        if run.stopped_at_store is not None:
            operation, where = run.stopped_at_store
            at = f" at {_display(where.path)}:{where.line}" if where is not None else ""
            result.status = "error"
            result.error = (
                f"the entrypoint reads LangGraph's store ({operation}){at} in its own code: no checkpoint keeps what "
                f"the store held, so replay has no value to give it (and never reads a real store). Replay checked "
                f"the {run.matcher.index} task call(s) before it and stopped there; the rest of the thread is not "
                f"checked. Read the store inside a @task (whose recorded result replay feeds back) to make this "
                f"history replayable"
            )
            return result
        result.warnings = run.matcher.warnings
        divergence = settle_hazards(result, divergence, run.trips, run.hazard, options.hazards)
        # Checks this engine's histories cannot support, said once in the summary instead of passing silently.
        if divergence is not None:
            result.status = "diverged"
            result.divergence = divergence
        result.notes.append(NO_ARGUMENTS_NOTE)
        if any(name == history.workflow.type and lg.has_store(g) for name, _, g in _entrypoint_graphs(workflows)):
            result.notes.append(STORE_NOTE)
        current = run.current
        if run.per_call:
            note_unrecorded_model_calls(result, unprompted_model_tasks(run.task_events, run.task_bodies, options.model_calls))
            renamed = set(renamed_prompts(history.prompt_manifest or {}, current).values())
            for task_name, prompt, version in run.uncompared:
                body = run.task_bodies.get(task_name)
                note = uncompared_prompt_note(f"task {task_name!r}", "task", prompt, version,
                                              fetched_prompt_site(body) if body is not None else None)
                if prompt not in renamed and note not in result.notes:
                    result.notes.append(note)
            check_recorded_prompts(result, history, run, current, options)
        else:
            if history.prompt_manifest is not None:
                result.notes.append(NO_CALL_PROMPTS_NOTE)
            check_manifest_prompts(
                result, "LangGraph", history.status, history.prompt_manifest, current, run.called,
                options, run.matcher.next_position(),
            )
            if result.divergence is not None:
                result.divergence = _langgraph_words(result.divergence)
            result.warnings = [_langgraph_words(warning) for warning in result.warnings]
        result.notes.extend(run.notes)
        if run.nested_runs.children:
            result.notes.append(NESTED_RUNS_NOTE)
        if history.status in ("parked", "running") and run.function is not None:
            result.notes.extend(fetched_ahead_note(f"task {name!r}", site, history.status)
                                for name, site in _fetched_tasks_ahead(run))
        _task_views(result)
        if options.rehearse and run.nested_runs.children:
            if result.status == "passed" and history.status in ("running", "parked"):
                result.notes.append(NESTED_NOT_REHEARSED_NOTE)
        elif options.rehearse:
            from replaytest.plugins.langgraph.rehearsal import remember_answers

            remember_answers(history)
            if result.status == "passed" and history.status in ("running", "parked"):
                _rehearse(result, history, run, workflows)
        return result


def unprompted_model_tasks(
    events: Iterable[Event], bodies: Mapping[str, Any], extra_calls: Iterable[str] = ()
) -> list[tuple[str, Any]]:
    """(task call, where its body calls a model) of the recorded task calls, in a thread recorded with
    per-call records, whose body calls a model client (or a name of ``extra_calls``) but that recorded no
    prompt version."""
    found: list[tuple[str, Any]] = []
    for event in events:
        body = bodies.get(event.name)
        if body is None or _call_prompts(event):
            continue
        site = model_call_site(body, extra_calls=extra_calls)
        if site is not None:
            found.append((f"task {event.name!r}", site))
    return found


def _fetched_tasks_ahead(run: _Run) -> list[tuple[str, tuple[str, int]]]:
    """(task, where its body calls ``Prompt.fetched``) of the tasks the entrypoint calls that the thread has
    not recorded yet (all the module's tasks when the entrypoint's source cannot be read)."""
    planned = _planned_calls(run.function)
    recorded = {event.name for event in run.task_events}
    found = []
    for name in planned if planned is not None else run.task_bodies:
        body = run.task_bodies.get(name)
        site = fetched_prompt_site(body) if body is not None and name not in recorded else None
        if site is not None:
            found.append((name, site))
    return found


def has_call_prompts(history: History) -> bool:
    """True when the thread was recorded with per-call prompt records (``langgraph.recording``): the
    importer then lists, on every task call, the prompts it used (``prompts``, maybe empty)."""
    return any(event.kind == "step" and "prompts" in event.extra for event in history.events)


def check_recorded_prompts(
    result: ReplayResult, history: History, run: _Run, current: dict[str, str], options: ReplayOptions
) -> None:
    """The prompt checks of a thread with per-call records: every prompt each recorded call used was
    compared by the matcher (``Matcher.issue``, as on the journal; the call's other changed prompts in the
    same message, ``Issued.prompt_also``) with the current code's version at that call; the prompts the
    thread will still use (``_prompts_ahead``: those of the tasks it has not recorded yet) are compared by
    ``prompts-pending`` with the version the thread last used (``reused``), else the one it started under,
    even when an earlier task used them; any other prompt is out of that check. Messages use LangGraph's
    words."""
    reached: dict[str, str | None] = dict(run.reached)
    reused: dict[str, str] = {}
    outside: set[str] = set()
    if run.ahead is not None:
        # A pending prompt is named at the line of a task the thread has not run yet.
        current = PromptManifest(current)
        current.sites = {**getattr(run.current, "sites", {}), **run.ahead.sites}
        reused = {name: run.reached[name] for name in run.ahead if name in run.reached}
        # Prompts neither a recorded call used nor a task the thread has not run yet uses: not pending, and
        # no change for this thread either (it did not call them and will not): left out of the changes the
        # deploy-impact report lists, where they would read "already called" (a renamed prompt, say).
        for name in {*(history.prompt_manifest or {}), *current}:
            if name not in run.ahead and name not in reached:
                reached[name] = None
                outside.add(name)
    params = {
        name: (run.last_used[name].get("params") if name in run.last_used else None, prompt.params)
        for name, prompt in run.current_objects.items() if prompt.full_version == current.get(name)
    }
    before = len(result.prompt_changes)
    check_pending_prompts(
        result, history.status, history.prompt_manifest, current, reached, options,  # type: ignore[arg-type]
        run.matcher.next_position(), reused=reused, params=params,
    )
    result.prompt_changes[before:] = [change for change in result.prompt_changes[before:] if change.name not in outside]
    if result.divergence is not None:
        result.divergence = _langgraph_words(result.divergence)
    result.warnings = [_langgraph_words(warning) for warning in result.warnings]


def _langgraph_words(divergence: Divergence) -> Divergence:
    """A prompt-drift message in LangGraph's words: task calls, threads."""
    if divergence.kind != "prompt-drift":
        return divergence
    message = divergence.message.replace("step '", "task '").replace(" by a recorded step", " by a recorded task")
    for status in ("parked", "running"):
        message = message.replace(f"this {status} run ", f"this {status} thread ")
        message = message.replace(f"the {status} run ", f"the {status} thread ")
    return replace(divergence, message=message)


def _task_views(result: ReplayResult) -> None:
    """Task calls shown as LangGraph calls them (``task 'triage'``) in the divergence's and warnings'
    detail lines and side-by-side rows; the neutral kind (``step``) stays what reports and JSON carry."""

    def relabel(view: CommandView | None) -> CommandView | None:
        if view is None or view.kind != "step":
            return view
        return replace(view, detail={**view.detail, **TASK_LABEL})

    def relabelled(divergence: Divergence) -> Divergence:
        return replace(
            divergence, recorded=relabel(divergence.recorded), issued=relabel(divergence.issued),
            recorded_context=tuple(relabel(view) or view for view in divergence.recorded_context),
            issued_context=tuple(relabel(view) or view for view in divergence.issued_context),
        )

    if result.divergence is not None:
        result.divergence = relabelled(result.divergence)
    result.warnings = [relabelled(warning) for warning in result.warnings]


def _rehearse(result: ReplayResult, history: History, run: _Run, workflows: WorkflowSet) -> None:
    """Fill ``result.rehearsal`` with the parked thread resumed by LangGraph itself (``langgraph.rehearsal``),
    under the runtime guards, or say in ``result.notes`` why it was not."""
    from replaytest.plugins.langgraph.rehearsal import driver, rehearse

    graph = next((g for name, _, g in _entrypoint_graphs(workflows) if name == history.workflow.type), None)
    if graph is None:
        result.notes.append("resume not rehearsed: the current entrypoint graph was not found")
        return
    namespaces = [module.__dict__ for module in run.modules]
    bodies = plain_functions(lg.task_bodies(namespaces))
    with guarded(run.modules, lambda: 0, bodies) as guard:
        try:
            rehearsal, note = rehearse(history, graph, run.bound, history.workflow.type, namespaces, run.project_prefixes)
        except NondeterministicCall:
            stopped = guard.stopped
            where = f" at {stopped.source.path}:{stopped.source.line}" if stopped is not None and stopped.source else ""
            rehearsal, note = Rehearsal("breaks", error=f"the resumed run made an effect the runtime guards stopped{where}",
                                        driver=driver()), None
        except Exception as error:  # the restore itself failed inside LangGraph
            rehearsal, note = None, f"resume not rehearsed: LangGraph could not restore the thread ({type(error).__name__}: {error})"
    result.rehearsal = rehearsal
    if note:
        result.notes.append(note)


def _rehearse_graph(result: ReplayResult, history: History, workflows: WorkflowSet) -> None:
    """Fill ``result.rehearsal`` with the parked graph thread resumed by LangGraph itself
    (``langgraph.graph_rehearsal``), under the runtime guards, or say in ``result.notes`` why it was not."""
    from replaytest.plugins.langgraph.graph_check import current_graphs
    from replaytest.plugins.langgraph.graph_rehearsal import rehearse

    [compiled] = current_graphs(history, workflows)  # the check passed: exactly one
    functions = [f for f in (lg.node_function(node) for node in lg.graph_nodes(compiled).values()) if f is not None]
    modules = orchestration_modules(functions)
    namespaces = [module.__dict__ for module in modules]
    prefixes = tuple(sorted({str(Path(m.__file__).parent) for m in modules if m.__file__}))
    with guarded(modules, lambda: 0, plain_functions(lg.task_bodies(namespaces))):
        try:
            rehearsal, note = rehearse(history, compiled, namespaces, prefixes)
        except Exception as error:  # the restore itself failed inside LangGraph
            rehearsal, note = None, f"resume not rehearsed: LangGraph could not restore the thread ({type(error).__name__}: {error})"
    result.rehearsal = rehearsal
    if note:
        result.notes.append(note)


class _Unsupported(Exception):
    pass


def _entrypoints(workflows: WorkflowSet) -> Iterator[tuple[str, Any]]:
    for name, bound, _ in _entrypoint_graphs(workflows):
        yield name, bound


def _entrypoint_graphs(workflows: WorkflowSet) -> Iterator[tuple[str, Any, Any]]:
    """(name, node runnable, the ``@entrypoint`` graph) of every entrypoint among the current code's objects."""
    for obj in workflows.objects:
        candidates = list(vars(obj).values()) if isinstance(obj, type(sys)) else obj if isinstance(obj, (list, tuple)) else [obj]
        for candidate in candidates:
            node = lg.entrypoint_node(candidate)
            if node is not None:
                yield node[0], node[1], candidate


def find_entrypoint(workflows: WorkflowSet, name: str) -> Any:
    """The entrypoint node runnable named ``name`` among the current code's objects (graphs, modules)."""
    return next((bound for node_name, bound in _entrypoints(workflows) if node_name == name), None)


class _Run:
    """One replay: the matcher over the recorded task calls, the recorded interrupts, and the hooks."""

    def __init__(self, history: History, bound: Any, options: ReplayOptions) -> None:
        self.history = history
        self.bound = bound
        self.function = getattr(bound, "func", None) or getattr(bound, "afunc", None)
        if lg.is_async_entrypoint(bound) and sys.version_info < (3, 11):
            raise _Unsupported(
                "replaying an async @entrypoint needs Python 3.11 or later: before it LangGraph's task calls "
                "cannot find their configuration inside asyncio tasks (LangGraph itself refuses them there)"
            )
        tasks: list[Event] = []
        self.resumes: list[Any] = []
        self.interrupt_events: list[Event] = []  # the resumed interrupts, then the pending one (if parked)
        self.pending: Event | None = None
        self.previous: Any = None
        nested_events: list[Event] = []
        for event in history.events:
            if event.extra.get(NESTED_FIELD) is not None:  # a graph the entrypoint's code ran (``langgraph.nested``)
                nested_events.append(event)
            elif event.kind == "step":
                tasks.append(event)
            elif event.kind == "signal" and event.name == "interrupt" and event.extra.get("pending") is True:
                self.pending = event
                self.interrupt_events.append(event)
            elif event.kind == "signal" and event.name == "interrupt":
                self.resumes.append(revive(history.event_result(event)))
                self.interrupt_events.append(event)
            elif event.kind == "side-effect" and event.name == "previous":
                self.previous = revive(history.event_result(event))
            else:
                raise _Unsupported(f"event #{event.seq} is a {event.kind} {event.name!r}, which LangGraph histories do not hold")
        # Threads recorded with per-call prompt records (``langgraph.recording``): the version each call
        # used is on its event and compared by the matcher; else inferred from the start manifest.
        self.per_call = has_call_prompts(history)
        # {prompt: the version the latest recorded call using it used}, and that call's record of it.
        self.reached: dict[str, str] = {}
        self.last_used: dict[str, dict[str, Any]] = {}
        for event in tasks:
            for used in _call_prompts(event):
                self.reached[used["name"]] = used["version"]
                self.last_used[used["name"]] = used
        self.task_events = tasks
        self.interrupts = 0  # interrupt() calls the code made
        self.interrupt_source: SourcePosition | None = None
        # A graph the entrypoint started in a way replay does not support: (its name, why, the line).
        self.stopped_at_graph: tuple[str, str, SourcePosition | None] | None = None
        # A store read in the entrypoint's own code: (the operation, the line). Writes are discarded.
        self.stopped_at_store: tuple[str, SourcePosition | None] | None = None
        self.store = lg.replay_store()
        self.notes = _interrupt_notes(history.status, self.interrupt_events, self.pending)
        self.trips: list[NondeterministicCall] = []  # what the runtime guards caught during ``execute``
        self.modules = orchestration_modules([self.function])
        # The folders of the entrypoint's package: its code, even when installed into site-packages.
        files = [getattr(module, "__file__", None) for module in self.modules]
        self.project_prefixes = tuple(sorted({os.path.dirname(f) + os.sep for f in files if f}))
        # {task name: the prompts its body names} (versions, and the Prompt objects for their parameters).
        bodies = lg.task_bodies([module.__dict__ for module in self.modules])
        self.task_prompts = {lg.task_name_of(body): prompt_manifest(body) for body in bodies}
        self.task_bodies = {lg.task_name_of(body): body for body in bodies}
        self.task_prompt_objects = {lg.task_name_of(body): prompt_objects(body) for body in bodies}
        self.current = prompt_manifest(self.function) if self.function is not None else PromptManifest()
        self.current_objects = prompt_objects(self.function) if self.function is not None else {}
        # The prompts the thread will still use: those of the current code's tasks it has not recorded yet.
        self.ahead: PromptManifest | None = None
        if self.per_call and self.function is not None:
            self.ahead = _prompts_ahead(self.function, {event.name for event in tasks}, self.task_prompts,
                                        self.current, self.reached)
        # {event seq: the name of the recorded prompt compared at that call, None for none} (of several, the
        # first that changed), so report rows show the prompt compared (``_recorded``).
        self.chosen: dict[int, str | None] = {}
        self.matcher = Matcher(
            RecordedEvents(tasks, lambda event: _recorded(event, self.chosen)), history.status, options,
            prompts_ahead=self.ahead,
        )
        if self.per_call:
            self.matcher.resume_hint = self._resume_hint
        self.called: dict[str, str] = {}
        # (task, prompt, version) a recorded call used that the task's current code renders no Prompt of.
        self.uncompared: list[tuple[str, str, str]] = []
        self.nested_runs = _NestedRuns(self, nested_events)

    # --- hooks LangGraph calls ---

    def call(self, func: Any, arguments: Any, **options: Any) -> Any:
        """A ``@task`` call: match it, answer it with the recorded outcome; the task never runs."""
        issued = Issued("step", lg.task_name_of(func), source=project_caller(self.project_prefixes))
        if self.per_call:
            self._prompt_of(issued)
        if self.history.status == "parked" and self.matcher.index >= len(self.matcher.events):
            self._check_past_the_park(issued)
        event: Event = self.matcher.issue(issued).payload
        for prompt in [*(name for name, _ in prompts_in_use()), *self.task_prompts.get(issued.name, ())]:
            self.called.setdefault(prompt, f"task {issued.name!r}")
        return _answer(self.history, event)

    def _prompt_of(self, issued: Issued) -> None:
        """Set the prompts the current code's call uses on ``issued``: a ``use_prompt`` block around the
        call, and those its task's body names. The prompt the matcher compares (``prompt_*``, and the
        recorded call's on the event it compares next): of the prompts the recorded call used that the call
        still uses, the first whose version changed, else the first. Every other change of the call is a
        phrase of the same drift message (``Issued.prompt_also``): another prompt the recorded call used at
        another version, and a prompt the call now uses that the recorded call could not have used (added
        since the thread started, not a rename). A prompt of the task's body the thread had when it started
        and the recorded call did not render (another branch) is not compared. Past the recorded calls, the
        first prompt the call uses is set (the next-prompt text of a kept drift)."""
        uses: dict[str, str] = {name: version for name, version in prompts_in_use()}
        for name, version in self.task_prompts.get(issued.name, {}).items():
            uses.setdefault(name, version)
        objects = dict(self.task_prompt_objects.get(issued.name, {}))
        objects.update({prompt.name: prompt for prompt in prompt_objects_in_use()})

        def params(name: str) -> Any:
            prompt = objects.get(name)
            return prompt.params if prompt is not None and prompt.full_version == uses[name] else None

        index = self.matcher.index
        if index >= len(self.task_events):
            if uses:
                name = next(iter(uses))
                issued.prompt_name, issued.prompt_version, issued.prompt_params = name, uses[name], params(name)
            return
        event = self.task_events[index]
        records = _call_prompts(event)
        shared = [record for record in records if record["name"] in uses]
        changed = [record for record in shared if uses[record["name"]] != record["version"]]
        chosen = (changed or shared)[0] if shared else None
        self.chosen[event.seq] = chosen["name"] if chosen is not None else None
        upcoming = self.matcher.events[index]  # the event the matcher compares next (kept while it looks at it)
        upcoming.prompt_name = chosen["name"] if chosen is not None else None
        upcoming.prompt_version = chosen["version"] if chosen is not None else None
        upcoming.prompt_params = chosen.get("params") if chosen is not None else None
        if chosen is not None:
            name = chosen["name"]
            issued.prompt_name, issued.prompt_version, issued.prompt_params = name, uses[name], params(name)
        manifest = self.history.prompt_manifest
        used = {record["name"]: record["version"] for record in records}
        for record in records:
            # Neither by name nor (a rename) by version among what the call's code renders now: not compared.
            if event.name == issued.name and record["name"] not in uses and record["version"] not in uses.values():
                self.uncompared.append((issued.name, str(record["name"]), str(record["version"])))
        renamed = set(renamed_prompts(used, uses))
        if manifest is not None:
            renamed |= set(renamed_prompts(manifest, self.current))
        added = [name for name in uses if name not in used and manifest is not None and name not in manifest
                 and name not in renamed]
        issued.prompt_also = (
            *(also_changed(record["name"], record["version"], uses[record["name"]], record.get("params"),
                           params(record["name"])) for record in changed[1:]),
            *(f"now also uses prompt {name} {short_version(uses[name])}, which the recorded call did not use"
              for name in added),
        )

    def _resume_hint(self, command: Issued | None) -> str:
        """What a kept prompt drift says of the resume point, in LangGraph's words: the task the thread
        resumes at and the prompt it uses next (that task's, else those of the tasks it has not run yet;
        one an earlier task used too is said so)."""
        if command is None:
            resume = ""
        elif command.kind == "step":
            resume = f" and resumes at task {command.name!r}"
        else:
            resume = f" and resumes at {command.kind} {command.name!r}"
        if command is not None and command.prompt_version:
            name = f"{command.prompt_name} " if command.prompt_name else ""
            return (f"{resume}; the next prompt it uses is {name}{short_version(command.prompt_version)}, "
                    f"at task {command.name!r}")
        if self.ahead is None:
            return f"{resume}; which prompt it uses next is past what the replay sees"
        ahead = [
            f"{name} {short_version(version)}" + (" (used by a recorded task too)" if name in self.reached else "")
            for name, version in sorted(self.ahead.items())
        ]
        if not ahead:
            return f"{resume}; the tasks it has not run yet use no prompt"
        if len(ahead) == 1:
            return f"{resume}; the next prompt it uses is {ahead[0]}, the only prompt of the tasks it has not run yet"
        return f"{resume}; the next prompt it uses is one of those of the tasks it has not run yet: " + ", ".join(ahead)

    def on_interrupt(self, value: Any) -> int:
        """An ``interrupt(value)`` call: its index, once its value matches the recorded one."""
        index = self.interrupts
        self.interrupts += 1
        self.interrupt_source = project_caller(self.project_prefixes)
        if index < len(self.interrupt_events):
            self._compare_interrupt(self.interrupt_events[index], index + 1, value)
        return index

    def _compare_interrupt(self, event: Event, number: int, value: Any) -> None:
        """The human answered (or will answer) the recorded question: the code must ask the same one."""
        if "interrupt_value" not in event.extra:
            return
        if value is lg.NO_VALUE:
            if UNREAD_VALUE_NOTE not in self.notes:
                self.notes.append(UNREAD_VALUE_NOTE)
            return
        if event.extra.get("task") is not None:
            return  # raised inside a task body, which replay never runs
        recorded = event.extra["interrupt_value"]
        now = normal_form(value)
        if same_as_recorded(recorded, now, frozenset(self.history.redacted), f"$.events[{event.seq - 1}].interrupt_value"):
            return
        answered = (
            "the answer the reviewer gives on resume would go to this new question"
            if event is self.pending
            else "the recorded answer was given to the recorded question"
        )
        raise DivergenceFound(
            self.matcher.divergence(
                "interrupt-mismatch",
                f"interrupt #{number} now asks {short_value(now, 240, str)}; the history recorded {short_value(recorded, 240, str)} there "
                f"({answered})",
                Issued("signal", "interrupt", source=self.interrupt_source),
                _signal(event),
            )
        )

    def _check_past_the_park(self, issued: Issued) -> None:
        """A task call past the recorded ones of a parked history: right only where the run waits."""
        pending = self.pending
        if pending is None:
            return  # imported before parks were recorded: taken as the resume point (said in a note)
        if self.interrupts > len(self.resumes):
            return  # the code went past the pending interrupt (it caught the interrupt): the resume point
        number = len(self.resumes) + 1
        value = pending.extra.get("interrupt_value")
        asked = f" ({short_value(value, 80, str)})" if "interrupt_value" in pending.extra else ""
        task, call_index = pending.extra.get("task"), pending.extra.get("call_index")
        if task is not None:
            if (issued.name, self.matcher.index) == (task, call_index):
                raise ReachedEnd()  # the call whose body waits at the interrupt: the run resumes in it
            where = f"inside step {task!r} (task call #{call_index + 1 if isinstance(call_index, int) else '?'})"
        else:
            where = "in the entrypoint"
        raise DivergenceFound(
            self.matcher.divergence(
                "extra-command",
                f"the code issued step {issued.name!r} before reaching interrupt #{number}{asked}, where this parked "
                f"history waits {where}; on resume LangGraph would run it for real before the answer is read",
                issued,
                _signal(pending),
            )
        )

    # --- the run ---

    def execute(self) -> Divergence | None:
        scratchpad = lg.Scratchpad.build(self.on_interrupt, list(self.resumes))
        namespace = f"{self.history.workflow.type}:{self.history.workflow.run_id or ''}"
        returned: Any = None
        raised: BaseException | None = None
        outcome = "returned"
        divergence: Divergence | None = None
        bodies = plain_functions(lg.task_bodies([module.__dict__ for module in self.modules]))
        with guarded(self.modules, self.matcher.next_position, bodies) as guard, lg.nested_invokes(self.nested_runs):
            try:
                if lg.is_async_entrypoint(self.bound):
                    returned = asyncio.run(self._arun(scratchpad, namespace))
                else:
                    returned = lg.run_entrypoint(
                        self.bound, self.history.input, self.call, scratchpad, namespace, self.previous, self.store
                    )
            except DivergenceFound as found:
                divergence = found.divergence
            except ReachedEnd:
                outcome = "reached-end"
            except lg.NestedGraphRun as started:
                self.stopped_at_graph = (
                    started.graph_name, started.reason, project_raise_site(started, self.project_prefixes)
                )
                return None
            except lg.StoreRead as read:
                self.stopped_at_store = (read.operation, project_raise_site(read, self.project_prefixes))
                return None
            except NondeterministicCall:
                outcome = "guard"  # a stopped effect, recorded on the guard state
            except Exception as error:
                outcome = "interrupted" if lg.is_graph_interrupt(error) else "raised"
                raised = error
        self.trips = guard.trips
        discarded = lg.store_writes_discarded(self.store)
        if discarded:
            self.notes.append(STORE_WRITES_NOTE.format(count=discarded))
        if divergence is None:
            # A changed prompt at a recorded call (kept for the resume point) comes before whatever
            # ended the code: the park, a stopped effect, the end.
            divergence = self.matcher.unreported_drift()
        if divergence is not None or outcome in ("reached-end", "guard"):
            return divergence
        if outcome == "interrupted":
            return self._check_parked() or self.nested_runs.unstarted()
        if self.interrupts < len(self.resumes):
            return self.matcher.divergence(
                "missing-command",
                f"the history resumed {len(self.resumes)} interrupt(s) but the code now reaches "
                f"{self.interrupts} interrupt() call(s)",
                source=self.matcher.last_source,
            )
        try:
            self.matcher.finish()
        except DivergenceFound as found:
            return found.divergence
        unstarted = self.nested_runs.unstarted()
        if unstarted is not None:
            return unstarted
        if raised is not None:
            return self._check_failed(raised)
        return self._check_result(returned)

    def hazard(self, trip: NondeterministicCall) -> Divergence:
        instead = "its @task (call the task, not its function)" if trip.kind == "step-body" else _INSTEAD
        return self.matcher.divergence(
            "nondeterministic-call", hazard_message(trip, instead, _VERSION_GUARD), source=trip.source, position=trip.position
        )

    async def _arun(self, scratchpad: Any, namespace: str) -> Any:
        return await lg.arun_entrypoint(
            self.bound, self.history.input, self.call, scratchpad, namespace, self.previous, self.store
        )

    def _check_parked(self) -> Divergence | None:
        """The code waits at interrupt number ``self.interrupts``: right only where the history waits."""
        status = self.history.status
        index = self.interrupts  # 1-based number of the interrupt the code waits at
        if status in ("completed", "failed"):
            return self.matcher.divergence(
                "extra-command",
                f"the code now waits at interrupt #{index}, which this {status} history never reached "
                f"(it resumed {len(self.resumes)} interrupt(s))",
                source=self.interrupt_source,
            )
        try:
            self.matcher.finish()
        except DivergenceFound:
            event = self.matcher.events[self.matcher.index]
            return self.matcher.divergence(
                "missing-command",
                f"the code now waits at interrupt #{index} before {event.kind} {event.name!r}, which the history "
                f"recorded ({len(self.matcher.events) - self.matcher.index} recorded task call(s) not made)",
                event=event,
                source=self.interrupt_source,
            )
        return None

    def _check_failed(self, error: BaseException) -> Divergence | None:
        """The code raised after every recorded call: right only for a history that failed too."""
        status = self.history.status
        if status == "failed":
            return None
        ended = {
            "completed": "the history completed",
            "parked": "the recorded run went on to wait at an interrupt",
            "running": "the recorded run was still running there",
        }[status]
        return self.matcher.divergence(
            "result-mismatch",
            f"the code now fails with {type(error).__name__}: {error}; {ended}",
            source=project_raise_site(error, self.project_prefixes) or self.matcher.last_source,
        )

    def _check_result(self, returned: Any) -> Divergence | None:
        status = self.history.status
        if status == "failed":
            recorded = f"{self.history.error.type}: {self.history.error.message}" if self.history.error else "an error"
            return self.matcher.divergence(
                "result-mismatch",
                f"the code now returns where the history failed with {recorded}",
                source=self.matcher.last_source,
            )
        if status != "completed":
            return None
        now = normal_form(lg.final_value(returned))
        if not same_as_recorded(self.history.result, now, frozenset(self.history.redacted)):
            return self.matcher.divergence(
                "result-mismatch",
                f"the code now returns {short_value(now, 80, str)}; the history recorded {short_value(self.history.result, 80, str)}",
                source=self.matcher.last_source,
            )
        return None


# --- graphs the entrypoint invokes from its own code (nested runs, ``langgraph.nested``) -------------------


class _NestedRuns:
    """Answers ``graph.invoke(value)`` / ``await graph.ainvoke(value)`` made by the replayed entrypoint's
    code (``lg.nested_invokes``) from the nested runs its history recorded, matched by the order the code
    starts them (LangGraph finds a nested run's checkpoints by that number): the nested entrypoint's name
    and input are compared with the recorded run's, its code is replayed against the run's own recorded task
    calls as the entrypoint's is (no task body runs), its return value compared, and the recorded output is
    handed back, as LangGraph does on resume. A thread in flight is resumed by LangGraph without running a
    finished nested run's code again (whichever entrypoint the code names for it): a change found inside it, or
    another entrypoint name, is then a warning, not a divergence, while a changed input stays a divergence (the
    code would go on with an output made from another input).
    Forms replay does not support stop the replay at the call (``lg.NestedGraphRun``)."""

    def __init__(self, run: _Run, events: list[Event]) -> None:
        self.run = run
        self.children: dict[int, Event] = {}
        self.tasks: dict[int, list[Event]] = {}
        for event in events:
            index = event.extra.get(NESTED_FIELD)
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                raise _Unsupported(f"event #{event.seq}: {NESTED_FIELD} is {index!r}, not a nested run's number")
            if event.kind == CHILD_KIND and index not in self.children:
                self.children[index] = event
            elif event.kind == "step":
                self.tasks.setdefault(index, []).append(event)
            else:
                raise _Unsupported(f"event #{event.seq} is a {event.kind} {event.name!r} of nested run #{index + 1}, "
                                   "which LangGraph histories do not hold")
        self.started = 0  # graphs the code started so far
        self.inside = False  # a nested run's code is running

    # --- what ``lg.nested_invokes`` calls ---

    def invoke(self, graph: Any, value: Any, config: Any, options: dict[str, Any]) -> Any:
        event, bound, source = self._begin(graph, value, config, options)
        if bound is None:  # another graph than the recorded one, on a thread in flight: its code is not run
            return revive(self.run.history.event_result(event))
        if lg.is_async_entrypoint(bound):
            raise lg.NestedGraphRun(event.name, "an async @entrypoint invoked with invoke() from synchronous code")
        matcher, call, scratchpad, namespace = self._hooks(event)
        self.inside = True
        try:
            try:
                returned = lg.run_entrypoint(bound, value, call, scratchpad, namespace, None, self.run.store)
                self._check_returned(event, lg.final_value(returned), matcher, source)
            except DivergenceFound as found:
                self._found_inside(found)
            except Exception as error:  # noqa: BLE001 - the nested code raised where its recorded run returned
                self._found_inside(self._raised(event, error, matcher))
        finally:
            self.inside = False
        return revive(self.run.history.event_result(event))

    async def ainvoke(self, graph: Any, value: Any, config: Any, options: dict[str, Any]) -> Any:
        if not lg.is_async_entrypoint(self._bound(graph)):
            return self.invoke(graph, value, config, options)
        event, bound, source = self._begin(graph, value, config, options)
        if bound is None:  # another graph than the recorded one, on a thread in flight: its code is not run
            return revive(self.run.history.event_result(event))
        matcher, call, scratchpad, namespace = self._hooks(event)
        self.inside = True
        try:
            try:
                # In a context of its own: LangGraph's runner sets the nested run's config in the context it runs in.
                # (A task copies the context it is created in.)
                returned = await contextvars.copy_context().run(
                    asyncio.ensure_future, lg.arun_entrypoint(bound, value, call, scratchpad, namespace, None, self.run.store)
                )
                self._check_returned(event, lg.final_value(returned), matcher, source)
            except DivergenceFound as found:
                self._found_inside(found)
            except Exception as error:  # noqa: BLE001 - the nested code raised where its recorded run returned
                self._found_inside(self._raised(event, error, matcher))
        finally:
            self.inside = False
        return revive(self.run.history.event_result(event))

    # --- the checks ---

    def _begin(self, graph: Any, value: Any, config: Any, options: dict[str, Any]) -> tuple[Event, Any, SourcePosition | None]:
        """The recorded nested run the code's call stands for, once its input matches, and the node runnable of
        the nested entrypoint to replay (None: the code names another graph than the recorded one, which is a
        warning on a thread in flight — LangGraph hands it the recorded run's output without running it)."""
        run = self.run
        source = project_caller(run.project_prefixes)
        node = lg.entrypoint_node(graph)
        name = node[0] if node is not None else str(graph.get_name())
        if self.inside:
            raise lg.NestedGraphRun(name, "a graph invoked from a nested entrypoint's own code (a nested run inside a nested run)")
        if node is None:
            raise lg.NestedGraphRun(name, "a compiled StateGraph (its nodes would run as a graph of their own)")
        function = getattr(node[1], "func", None) or getattr(node[1], "afunc", None)
        if getattr(function, "__module__", None) not in {module.__name__ for module in run.modules}:
            # The runtime guards watch the replayed entrypoint's package only: this code would run unwatched.
            raise lg.NestedGraphRun(name, "an entrypoint defined outside the replayed entrypoint's package (its "
                                          "code would run without the runtime guards)")
        given = sorted(key for key, option in options.items() if option is not None)
        if given or (isinstance(config, dict) and set(config) - {"callbacks", "tags", "metadata", "run_name"}):
            raise lg.NestedGraphRun(name, f"invoke() given {', '.join(given or sorted(config))}")
        from langgraph.types import Command

        if isinstance(value, Command):
            raise lg.NestedGraphRun(name, "invoke() given a Command")
        index = self.started
        self.started += 1
        event = self.children.get(index)
        issued = Issued(CHILD_KIND, name, source=source)
        if event is None:
            raise self._not_recorded(name, index, issued, source)
        status = event.extra.get("run_status")
        if status != "completed":
            raise lg.NestedGraphRun(name, f"a nested run that is {status} (LangGraph resumes it from its own checkpoints)")
        recorded = event.extra.get("input")
        now = normal_form(value)
        if not same_as_recorded(recorded, now, frozenset(run.history.redacted), f"$.events[{event.seq - 1}].input"):
            went_on = (
                "on resume LangGraph hands back the recorded run's output without running it again, so the code "
                "would go on with an output made from the recorded input"
                if run.history.status in ("running", "parked")
                else "the recorded output was made from the recorded input"
            )
            raise DivergenceFound(run.matcher.divergence(
                "args-mismatch",
                f"graph {name!r} (graph run #{index + 1} from the entrypoint) is now given {short_value(now, 160, str)}; "
                f"the history recorded {short_value(recorded, 160, str)} ({went_on})",
                issued, _child(event), source=source,
            ))
        if event.name != name:
            # The run in that namespace is the recorded one, whichever graph the code names now.
            self._found_inside(DivergenceFound(run.matcher.divergence(
                "command-mismatch",
                f"the code now starts graph {name!r} as graph run #{index + 1} from the entrypoint, where the history "
                f"recorded {event.name!r}",
                issued, _child(event), source=source,
            )))
            return event, None, source
        return event, node[1], source

    def _not_recorded(self, name: str, index: int, issued: Issued, source: SourcePosition | None) -> BaseException:
        """What to raise where the code starts graph run #``index + 1``, which the history holds no run of. When the
        import said which nested runs it found (``History.nested_namespaces``) and this is none of them, the thread
        never ran it: LangGraph would run the graph and its task calls for real, a command the recorded run lacks
        (``extra-command``), or, past the recorded calls of a thread in flight where it resumes, the resume point
        (``ReachedEnd``: the engine's rehearsal says what it runs next). Otherwise replay cannot tell that from a run
        the import left out, and stops here."""
        run = self.run
        read = run.history.nested_namespaces
        if read is None:
            return lg.NestedGraphRun(name, (
                f"the history holds no graph run #{index + 1} started from the entrypoint's code and does not say "
                f"which nested runs its import found (imported before replaytest recorded that, or from a saver "
                f"whose database replaytest does not read with SQL): either the code now starts a graph the "
                f"recorded run did not, or the import left it out. Import the thread again (from its SQLite or "
                f"Postgres checkpoints) to tell"
            ))
        found = dict(read)
        if index in found:
            return lg.NestedGraphRun(name, (
                f"the import found graph run #{index + 1} (checkpoint namespace {found[index]!r}) but the history "
                f"holds none of its checkpoints; import the thread again"
            ))
        status = run.history.status
        if run.matcher.index >= len(run.matcher.events) and (
            status == "running"
            or (status == "parked" and (run.pending is None or run.interrupts > len(run.resumes)))
        ):
            return ReachedEnd()
        found_text = f"{len(found)} nested run(s)" if found else "none"
        consequence = ("on resume LangGraph would run it and its task calls for real before the run reaches where it "
                       "waits" if status in ("running", "parked") else "the recorded run never started it")
        return DivergenceFound(run.matcher.divergence(
            "extra-command",
            f"the code now starts graph {name!r} as graph run #{index + 1} from the entrypoint, which this {status} "
            f"thread never ran (its import read the thread's checkpoint namespaces and found {found_text}): "
            f"{consequence}",
            issued, None, source=source,
        ))

    @staticmethod
    def _bound(graph: Any) -> Any:
        node = lg.entrypoint_node(graph)
        return node[1] if node is not None else None

    def _hooks(self, event: Event) -> tuple[Matcher, Any, Any, str]:
        """The nested run's matcher over its recorded task calls, its task-call hook (answers from the
        history; no task body runs), its scratchpad and checkpoint namespace."""
        run = self.run
        index = event.extra[NESTED_FIELD]
        matcher = Matcher(RecordedEvents(self.tasks.get(index, []), _recorded), "completed", run.matcher.options)

        def call(func: Any, arguments: Any, **options: Any) -> Any:
            issued = Issued("step", lg.task_name_of(func), source=project_caller(run.project_prefixes))
            return _answer(run.history, matcher.issue(issued).payload)

        def on_interrupt(value: Any) -> int:
            raise DivergenceFound(matcher.divergence(
                "extra-command",
                f"graph {event.name!r} (graph run #{index + 1} from the entrypoint) now waits at an interrupt, which "
                f"its recorded run never reached",
                Issued("signal", "interrupt", source=project_caller(run.project_prefixes)),
            ))

        return matcher, call, lg.Scratchpad.build(on_interrupt, []), f"{event.name}:nested-{index}"

    def _raised(self, event: Event, error: BaseException, matcher: Matcher) -> DivergenceFound:
        return DivergenceFound(matcher.divergence(
            "result-mismatch",
            f"graph {event.name!r} (graph run #{event.extra[NESTED_FIELD] + 1} from the entrypoint) now fails with "
            f"{type(error).__name__}: {error}; its recorded run completed",
            source=project_raise_site(error, self.run.project_prefixes) or matcher.last_source,
        ))

    def _check_returned(self, event: Event, returned: Any, matcher: Matcher, source: Any) -> None:
        """Every recorded task call made, and the recorded value returned."""
        matcher.finish()
        index = event.extra[NESTED_FIELD]
        recorded = self.run.history.event_result(event)
        now = normal_form(returned)
        if not same_as_recorded(recorded, now, frozenset(self.run.history.redacted), f"$.events[{event.seq - 1}].result"):
            raise DivergenceFound(matcher.divergence(
                "result-mismatch",
                f"graph {event.name!r} (graph run #{index + 1} from the entrypoint) now returns "
                f"{short_value(now, 80, str)}; the history recorded {short_value(recorded, 80, str)}",
                source=matcher.last_source or source,
            ))

    def _found_inside(self, found: DivergenceFound) -> None:
        """A change inside a finished nested run (or of the graph the code names for it): the thread's divergence,
        or — for a thread in flight, which LangGraph resumes with the recorded run's output without running any
        code for it — a warning, and the replay goes on."""
        if self.run.history.status not in ("running", "parked"):
            raise found
        divergence = found.divergence
        self.run.matcher.warnings.append(replace(
            divergence, severity="warning",
            message=f"{divergence.message} (not a divergence of this {self.run.history.status} thread: LangGraph "
                    f"resumes it with the nested run's recorded output, without running its code again)",
        ))

    def unstarted(self) -> Divergence | None:
        """A recorded nested run the code no longer starts (the code finished, or reached its park, first)."""
        if self.started >= len(self.children):
            return None
        event = self.children[min(index for index in self.children if index >= self.started)]
        return self.run.matcher.divergence(
            "missing-command",
            f"the history recorded graph run #{event.extra[NESTED_FIELD] + 1} ({event.name!r}) started from the "
            f"entrypoint's code, which the code no longer starts",
            None, _child(event), source=self.run.interrupt_source or self.run.matcher.last_source,
        )


def _child(event: Event) -> Recorded:
    """A recorded nested run as the report shows it (it is not one of the matcher's task calls)."""
    return Recorded(seq=event.seq, kind=event.kind, name=event.name, payload=event)


def _answer(history: History, event: Event) -> Any:
    """A recorded task call's outcome as the future LangGraph's call hook returns."""
    future: Any
    try:
        future = asyncio.get_running_loop().create_future()
    except RuntimeError:
        future = concurrent.futures.Future()
    if event.error is not None:
        # LangGraph stores repr(exception) and its own resume raises Exception(that text).
        future.set_exception(Exception(f"{event.error.type}({event.error.message!r})"))
    else:
        future.set_result(revive(history.event_result(event)))
    return future


def _interrupt_notes(status: str, interrupts: list[Event], pending: Event | None) -> list[str]:
    """What the recorded interrupts let replay check, said where it is less than everything."""
    notes = []
    if status == "parked" and pending is None:
        notes.append(NO_PARK_NOTE)
    valued = [event for event in interrupts if "interrupt_value" in event.extra]
    if (interrupts or status == "parked") and not valued:
        notes.append(NO_INTERRUPT_VALUES_NOTE)
    elif len(valued) < len(interrupts):
        notes.append(EARLIER_INTERRUPTS_NOTE)
    if pending is not None and pending.extra.get("task") is not None:
        notes.append(INTERRUPT_IN_TASK_NOTE)
    return notes


def _signal(event: Event) -> Recorded:
    """A recorded interrupt as the report shows it (it is not one of the matcher's task calls)."""
    return Recorded(seq=event.seq, kind=event.kind, name=event.name, payload=event)


def _recorded(event: Event, chosen: dict[int, str | None] | None = None) -> Recorded:
    """A recorded task call; ``chosen``: the name of the recorded prompt compared at that call
    (``_Run._prompt_of``, None for none), shown and compared instead of the first recorded."""
    prompt = event.prompt
    if chosen is not None and event.seq in chosen:
        name = chosen[event.seq]
        record = next((record for record in _call_prompts(event) if record["name"] == name), None)
        version = record["version"] if record is not None else None
        params = record.get("params") if record is not None else None
    else:
        name = prompt.name if prompt is not None else None
        version = prompt.version if prompt is not None else None
        params = prompt.params if prompt is not None else None
    return Recorded(
        seq=event.seq, kind=event.kind, name=event.name, args_digest=event.args_digest, payload=event,
        prompt_version=version, prompt_params=params, prompt_name=name,
    )


def _call_prompts(event: Event) -> list[dict[str, Any]]:
    """The per-call records of a task call's event (``prompts``: every prompt the call used, in the
    order it used them), the well-formed ones."""
    records = event.extra.get("prompts")
    if not isinstance(records, list):
        return []
    return [
        record for record in records
        if isinstance(record, dict) and isinstance(record.get("name"), str) and isinstance(record.get("version"), str)
        and (record.get("params") is None or isinstance(record.get("params"), dict))
    ]


def _prompts_ahead(
    function: Any, recorded_tasks: set[str], task_prompts: dict[str, PromptManifest], current: PromptManifest,
    reached: dict[str, str],
) -> PromptManifest:
    """The prompts a thread will still use, at their current versions (with the lines using them): those of
    the tasks the entrypoint calls that the thread has not recorded yet (the task's body, and ``use_prompt``
    blocks around its calls in the entrypoint), plus any prompt of the current code that no recorded call
    used and no recorded task names. A prompt only the recorded tasks use is not among them."""
    planned = _planned_calls(function)
    ahead = PromptManifest()
    attributed: set[str] = set()
    for task in planned if planned is not None else task_prompts:
        body = task_prompts.get(task, PromptManifest())
        around = planned.get(task, {}) if planned is not None else {}
        if task in recorded_tasks:
            attributed.update(body, around)
            continue
        for name, version in body.items():
            if name not in ahead:
                ahead[name] = version
                if name in body.sites:
                    ahead.sites[name] = body.sites[name]
        for name, (prompt, site) in around.items():
            if name not in ahead:
                ahead[name] = prompt.full_version
                ahead.sites[name] = site
    for name, version in current.items():
        if name not in ahead and name not in reached and name not in attributed:
            ahead[name] = version
            if name in current.sites:
                ahead.sites[name] = current.sites[name]
    return ahead


def _planned_calls(function: Any) -> dict[str, dict[str, tuple[Prompt, tuple[str, int, str]]]] | None:
    """``{task name: {prompt name: (Prompt, the line of its use_prompt block)}}`` for every ``@task`` the
    entrypoint's code calls by name — in its own body or in a project helper function it calls (followed
    ``_HELPER_DEPTH`` levels down, with the ``use_prompt`` blocks around the helper's call) — with the
    ``use_prompt(P)`` blocks around each call (read from the source: calls the replay does not reach, past the
    park, are never run). None when the entrypoint's source cannot be read."""
    planned: dict[str, dict[str, tuple[Prompt, tuple[str, int, str]]]] = {}
    seen: set[int] = set()

    def scan(fn: Any, around: tuple[tuple[Prompt, tuple[str, int, str]], ...], depth: int) -> bool:
        try:
            source = textwrap.dedent(inspect.getsource(fn))
            tree = ast.parse(source)
        except (OSError, TypeError, SyntaxError):
            return False
        code = fn.__code__
        seen.add(id(code))
        namespace: dict[str, Any] = dict(getattr(fn, "__globals__", {}))
        for variable, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                namespace[variable] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        qualname = getattr(fn, "__qualname__", code.co_name)

        def resolve(node: ast.AST) -> Any:
            if isinstance(node, ast.Name):
                return namespace.get(node.id)
            if isinstance(node, ast.Attribute):
                base = resolve(node.value)
                if isinstance(base, types.ModuleType):
                    return base.__dict__.get(node.attr)
            return None

        def site(line: int) -> tuple[str, int, str]:
            return (code.co_filename, code.co_firstlineno + line - 1, qualname)

        def visit(node: ast.AST, around: tuple[tuple[Prompt, tuple[str, int, str]], ...]) -> None:
            if isinstance(node, (ast.With, ast.AsyncWith)):
                inner = around
                for item in node.items:
                    visit(item.context_expr, around)
                    expression = item.context_expr
                    if (isinstance(expression, ast.Call) and len(expression.args) == 1
                            and resolve(expression.func) is use_prompt):
                        prompt = resolve(expression.args[0])
                        if isinstance(prompt, Prompt):
                            inner = (*inner, (prompt, site(node.lineno)))
                for statement in node.body:
                    visit(statement, inner)
                return
            if isinstance(node, ast.Call):
                target = resolve(node.func)
                if lg.is_task_function(target):
                    uses = planned.setdefault(lg.task_name_of(target), {})
                    for prompt, where in around:
                        uses.setdefault(prompt.name, (prompt, where))
                elif (depth > 0 and isinstance(target, types.FunctionType) and id(target.__code__) not in seen
                        and _is_project_function(target)):
                    # A helper of the project that calls tasks: its calls are the entrypoint's.
                    scan(target, around, depth - 1)
            for child in ast.iter_child_nodes(node):
                visit(child, around)

        visit(tree, around)
        return True

    return planned if scan(function, (), _HELPER_DEPTH) else None


# How deep ``_planned_calls`` follows project helper functions from the entrypoint.
_HELPER_DEPTH = 3


def _is_project_function(fn: types.FunctionType) -> bool:
    """Application code (not the standard library, installed packages or replaytest)."""
    top = (fn.__module__ or "").partition(".")[0]
    if not top or top in ("replaytest", "langgraph", "langchain_core") or top in sys.stdlib_module_names:
        return False
    return is_project_file(fn.__code__.co_filename)


def project_caller(project_prefixes: tuple[str, ...]) -> SourcePosition | None:
    """The line of project code that made the current call (the first frame outside libraries)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(project_prefixes) or is_project_file(filename):
            return SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def project_raise_site(error: BaseException, project_prefixes: tuple[str, ...]) -> SourcePosition | None:
    """The last line of project code the exception passed through."""
    site = None
    trace = error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if code.co_filename.startswith(project_prefixes) or is_project_file(code.co_filename):
            site = SourcePosition(code.co_filename, trace.tb_lineno, code.co_name)
        trace = trace.tb_next
    return site


def same_as_recorded(recorded: Any, now: Any, redacted: frozenset[str] = frozenset(), path: str = "$.result") -> bool:
    """Recorded and current values agree; a value the importer redacted (a path the history lists as
    redacted, or the plain replacement text) agrees with anything."""
    if path in redacted or recorded == DEFAULT_REPLACEMENT:
        return True
    if isinstance(recorded, dict) and isinstance(now, dict):
        return recorded.keys() == now.keys() and all(
            same_as_recorded(recorded[key], now[key], redacted, join_path(path, key)) for key in recorded
        )
    if isinstance(recorded, list) and isinstance(now, list):
        return len(recorded) == len(now) and all(
            same_as_recorded(a, b, redacted, f"{path}[{index}]") for index, (a, b) in enumerate(zip(recorded, now))
        )
    return value_text(recorded, str) == value_text(now, str)


def _display(path: str) -> str:
    """``path`` relative to the working directory when it lies under it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path


