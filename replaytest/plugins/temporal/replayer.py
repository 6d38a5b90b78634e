"""Replaying Temporal histories with ``temporalio.worker.Replayer`` and reporting the first divergence.

The matching of commands against events is temporalio's (sdk-core's); this module feeds it, keeps it
fast, and translates its failure into replaytest's ``Divergence`` (``temporal.failure``), with the
recorded side read from the history JSON (``temporal.history``). What sdk-core does not check —
activity and child-workflow inputs, prompt versions, the run's prompt manifest — is compared after
each replay from the commands the code issued (``temporal.trace``, ``temporal.inputs``).

Speed: one Replayer per set of workflow classes/configuration, kept open as a replay iterator on a
private event loop thread, so every history after the first reuses the same sandbox and core worker
instead of building them again (temporalio's ``replay_workflow`` builds both per call).

temporalio is an optional dependency (``replaytest[temporal]``): it is imported on first replay only.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import dataclasses
import gc
import json
import threading
import time
import types
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replaytest.plugins.temporal.failure import (
    INSTANCE_TRACED_KINDS,
    TRACEABLE_KINDS,
    Classified,
    candidate_views,
    classify,
    handler_lookup,
    placed,
    with_handler_notes,
    with_traced_command,
    with_waiting_line,
)
from replaytest.plugins.temporal.history import run_status, sequence_problem, short_type_name, sniff_temporal_json
from replaytest.plugins.temporal.internals import workflow_definition
from replaytest.plugins.temporal.payloads import corrupt_json_payload
from replaytest.prompts import prompt_manifest, prompt_objects
from replaytest.replay.adapter import LoadedHistory, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import FRESH_RUN_NOTE_PREFIX, IN_FLIGHT_STATUSES, PatchDecision, ReplayResult
from replaytest.replay.engine import note_unrecorded_model_calls
from replaytest.replay.guards import is_project_file

if TYPE_CHECKING:
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer, WorkflowReplayResult

ENGINE = "temporal"
# A last resort: histories sdk-core would panic on are refused before replay (``sequence_problem``), but
# a panic leaves the replay waiting forever. temporalio needs ~4 s for 12,000 events; allow far more.
REPLAY_TIMEOUT_S = 60.0
REPLAY_TIMEOUT_PER_1000_EVENTS_S = 5.0
# Replayers kept open per TemporalReplayer; each holds a core worker, so tests that replay against many
# different workflow sets do not accumulate them.
MAX_OPEN_SESSIONS = 8


@dataclass(frozen=True)
class TemporalReplayConfig:
    """The current code as production workers run it, for ``replay_workflows = "myapp.replay:CONFIG"``.

    Replay has to decode payloads and run interceptors exactly as the workers do, so pass the same data
    converter (codecs included), interceptors and worker plugins given to ``temporalio.worker.Worker``.
    """

    workflows: Sequence[type] = ()
    data_converter: Any = None  # temporalio.converter.DataConverter; None means temporalio's default
    interceptors: Sequence[Any] = ()  # temporalio.worker.Interceptor
    plugins: Sequence[Any] = ()  # temporalio.worker.Plugin
    workflow_failure_exception_types: Sequence[type[BaseException]] = ()
    namespace: str | None = None
    debug_mode: bool = False  # disables the deadlock detector, for stepping through replay in a debugger


@dataclass
class _Group:
    """Workflow definitions that replay under one configuration (one Replayer)."""

    config: TemporalReplayConfig
    by_type: dict[str, Any] = field(default_factory=dict)  # workflow type name -> temporalio _Definition
    dynamic: Any = None
    user_config: bool = True  # False for the default group of loose workflow classes
    # Type names defined by more than one class: temporalio's Replayer refuses such a set, and picking
    # one would replay the history against code that may not be the production one.
    duplicates: dict[str, list[type]] = field(default_factory=dict)


class TemporalReplayer:
    """``HistoryReplayer`` for Temporal history JSON files (see ``replaytest.replay.adapter``)."""

    engine = ENGINE

    def __init__(self) -> None:
        _REPLAYERS.add(self)
        self._lock = threading.Lock()
        self._sessions: dict[tuple[Any, ...], _Session] = {}
        self._resolved: tuple[WorkflowSet, list[_Group]] | None = None

    def sniff(self, head: bytes) -> bool:
        return sniff_temporal_json(head)

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        started = time.perf_counter()
        path = Path(path)
        try:
            loaded = LoadedHistory.read(path, options)
        except OSError as error:
            result = ReplayResult(history_path=path, engine=ENGINE, workflow_type="", status="error")
            result.error = f"{path}: not a readable Temporal history: {error}"
            return result
        result = self.replay_loaded(loaded, workflows, options)
        result.duration_s = time.perf_counter() - started
        return result

    def replay_loaded(self, loaded: LoadedHistory, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        """Replay a Temporal history file the runner has read already."""
        started = time.perf_counter()
        with self._lock:
            result = self._replay(loaded, workflows, options)
        result.duration_s = time.perf_counter() - started
        return result

    def close(self) -> None:
        """Shut down the Replayers kept open for speed (also done at interpreter exit)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()

    def _replay(self, loaded: LoadedHistory, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        path = loaded.path
        result = ReplayResult(history_path=path, engine=ENGINE, workflow_type="")
        try:
            from temporalio.client import WorkflowHistory

            from replaytest.plugins.temporal.inputs import (
                annotate,
                compare,
                converter_hint,
                digest_recorded,
                read_run,
            )
        except ImportError:
            result.status, result.error = "error", "temporalio is not installed; install replaytest[temporal]"
            return result
        try:
            # Text, not the parsed document: temporalio deep-copies a dict before it fixes it up, which
            # costs more than parsing the text again.
            text = loaded.text()
            history = WorkflowHistory.from_json(path.stem, text)
        except (UnicodeDecodeError, ValueError, TypeError) as error:
            result.status, result.error = "error", f"{path}: not a readable Temporal history: {error}"
            return result
        result.events = len(history.events)
        if not history.events or not history.events[0].HasField("workflow_execution_started_event_attributes"):
            result.status, result.error = "error", f"{path}: the first event is not WorkflowExecutionStarted"
            return result
        types = _event_type_names(history)
        problem = sequence_problem([(event.event_id, name) for event, name in zip(history.events, types)])
        if problem is not None:
            result.status, result.error = "error", f"{path}: malformed Temporal history: {problem[1]}"
            return result
        recorded_status = result.run_status = run_status(types)
        result.run_started_at = _started_at(history.events[0])
        started = history.events[0].workflow_execution_started_event_attributes
        result.workflow_type = started.workflow_type.name
        result.workflow_id = started.workflow_id or None
        corrupt = corrupt_json_payload(history.events)
        if corrupt is not None:
            # Replayed, it would read as the code failing to decode its input: a divergence it is not.
            index, json_path, why = corrupt
            result.status = "error"
            result.error = (f"{path}: corrupt Temporal history: event {history.events[index].event_id} "
                            f"({short_type_name(types[index])}) {json_path}: a json/plain payload that is not JSON "
                            f"({why}); it cannot be replayed")
            return result
        if result.workflow_id:
            # Code may derive ids from workflow.info().workflow_id (child workflow ids, say), so replay
            # must run under the recorded id; older servers did not record it, then the file name stands in.
            history = WorkflowHistory(result.workflow_id, history.events)
        group, defn = self._definition(workflows, result.workflow_type)
        if group is None:
            known = sorted({name for g in self._groups(workflows) for name in g.by_type})
            result.status = "stale"
            result.error = (
                f"no workflow class for Temporal workflow type {result.workflow_type!r} in the current code"
                f" (known: {', '.join(known) or 'none'}); add it to replay_workflows or delete the history"
            )
            return result
        if group.duplicates:
            result.status, result.error = "error", _duplicates_error(group)
            return result
        if options.fresh_start:
            self._fresh_run(result, history, group, options.fresh_run)
            return result
        if not _has_workflow_task(history):
            # The run never reached a worker: no code ran, so nothing can diverge; its first task is its resume.
            if options.rehearse and recorded_status in IN_FLIGHT_STATUSES:
                session = self._session(group)
                session.recorder.clear()
                self._rehearse(result, history, group, session, defn)
            return result
        session = self._session(group)
        recorder = session.recorder
        recorder.clear()
        try:
            outcome = session.replay(history)
        except Exception as error:  # the replay worker itself broke (bad converter, plugin, hang)
            self._drop(group)
            result.status, result.error = "error", f"replay could not run: {type(error).__name__}: {error}"
            if _converter_trouble(str(error)):
                result.error += f"; {converter_hint(group.config.data_converter is not None)}"
            return result
        if recorder.trace.tracing_errors:
            # The trace the report is built from is incomplete: no verdict rests on it (never a silent pass).
            result.status, result.error = "error", (
                f"replay could not be traced: {recorder.trace.tracing_errors[0]} (a fault in replaytest's tracing "
                "of the replayed workflow, not in the workflow; please report it)")
            return result
        issued = list(recorder.commands)
        result.patch_decisions = _patch_decisions(recorder.trace.patch_calls, history)
        if options.rehearse:
            from replaytest.plugins.temporal.rehearsal import remember_signals

            remember_signals(result.workflow_type, history)
        run = read_run(history, recorded_status)
        decoded = _loop().submit(digest_recorded(run.calls, _data_converter(group))).result(REPLAY_TIMEOUT_S)
        if outcome.replay_failure is None:
            current = prompt_manifest(defn.cls) if defn is not None else {}
            compare(result, run, issued, options, current, decoded, group.config.data_converter is not None,
                    current_prompts=prompt_objects(defn.cls) if defn is not None else None)
            if defn is not None and any(call.prompt is not None for call in run.calls):
                # Recorded per call: an activity that calls a model and recorded no prompt is named.
                note_unrecorded_model_calls(result, _unprompted_activities(run, defn.cls, workflows, options.model_calls))
            if recorded_status in IN_FLIGHT_STATUSES and defn is not None:
                # The next activities of a parked run that fetch their prompt at run time: nothing to compare yet.
                result.notes.extend(_fetched_ahead_notes(history, defn.cls, recorded_status))
            if recorded_status in IN_FLIGHT_STATUSES:
                from replaytest.plugins.temporal.rehearsal import changed_sleeps

                result.notes.extend(changed_sleeps(list(history.events), list(recorder.trace.commands)))
            if options.rehearse and recorded_status in IN_FLIGHT_STATUSES and result.status == "passed":
                self._rehearse(result, history, group, session, defn)
            return result
        # From here on only after a failure: read the events as JSON for the report.
        events = json.loads(text).get("events", [])
        trace = recorder.trace.snapshot()  # before _classify, whose prefix replays trace too
        classified = self._classify(outcome.replay_failure, events, history, session, defn, options)
        found = classified.divergence.issued if classified.divergence is not None else None
        if classified.divergence is not None and found is not None and found.kind in TRACEABLE_KINDS:
            # Timers, patch markers, upserts and Nexus operations come from the instance's trace, the others
            # (with digests) from the interceptor.
            traced = [*issued, *(command for command in trace.commands if command.kind in INSTANCE_TRACED_KINDS)]
            classified.divergence = with_traced_command(classified.divergence, traced, events)
        if classified.divergence is not None:
            handler = handler_lookup(defn, trace)
            classified.divergence = with_handler_notes(
                with_waiting_line(classified.divergence, trace, events, handler), events, handler
            )
        if classified.divergence is None:
            result.status, result.error = "error", classified.error
            if _converter_trouble(classified.error or ""):
                result.error = f"{classified.error}; {converter_hint(group.config.data_converter is not None)}"
        else:
            result.status, result.divergence = "diverged", annotate(classified.divergence, run, issued)
            if _converter_trouble(classified.divergence.message):
                result.divergence = dataclasses.replace(
                    result.divergence,
                    message=f"{result.divergence.message}; {converter_hint(group.config.data_converter is not None)}",
                )
        return result

    def _rehearse(self, result: ReplayResult, history: WorkflowHistory, group: _Group, session: _Session, defn: Any) -> None:
        """Fill ``result.rehearsal`` with the run resumed one task past its history by temporalio's own
        Replayer (``temporal.rehearsal``), or say in ``result.notes`` why it was not."""
        from replaytest.plugins.temporal.rehearsal import rehearse

        recorder = session.recorder
        trace = recorder.trace.snapshot()
        converter = _data_converter(group)

        def replay(resumed: WorkflowHistory) -> tuple[Any, Any]:
            recorder.clear()
            return session.replay(resumed), recorder.trace.snapshot()

        def encode(values: list[Any]) -> list[Any]:
            return list(_loop().submit(converter.encode(values)).result(REPLAY_TIMEOUT_S))

        try:
            rehearsal, note = rehearse(history, defn, replay, encode, trace, _patch_decisions)
        except Exception as error:  # the replay worker broke on the extended history
            self._drop(group)
            result.notes.append(f"resume not rehearsed: the Replayer could not run it ({type(error).__name__}: {error})")
            return
        if recorder.trace.tracing_errors:
            result.notes.append(f"resume not rehearsed: the rehearsal could not be traced ({recorder.trace.tracing_errors[0]})")
            return
        result.rehearsal = rehearsal
        if note:
            result.notes.append(note)

    def _fresh_run(self, result: ReplayResult, history: WorkflowHistory, group: _Group, patch_ids: Sequence[str]) -> None:
        """Fill ``result.fresh_run`` with a new run of the current code from this history's input, run by
        temporalio's own Replayer (``temporal.rehearsal.fresh_run``), or say in ``result.notes`` why not."""
        from replaytest.plugins.temporal.rehearsal import fresh_run

        session = self._session(group)
        recorder = session.recorder

        def replay(prefix: WorkflowHistory) -> tuple[Any, Any]:
            recorder.clear()
            return session.replay(prefix), recorder.trace.snapshot()

        try:
            rehearsal, note = fresh_run(history, replay, _patch_decisions, patch_ids)
        except Exception as error:  # the replay worker broke on a cut history
            self._drop(group)
            result.notes.append(f"{FRESH_RUN_NOTE_PREFIX}: the Replayer could not run it ({type(error).__name__}: {error})")
            return
        result.fresh_run = rehearsal
        if note:
            result.notes.append(note)

    def _classify(
        self, failure: BaseException, events: list[Any], history: WorkflowHistory, session: _Session, defn: Any,
        options: ReplayOptions,
    ) -> Classified:
        from temporalio.workflow import NondeterminismError

        radius = 6 if options.details else 3
        # No fallback line: sdk-core does not say which line issued a command, and the run method's
        # line would be a wrong answer given with confidence. Lines come from the trace (commands,
        # patch calls, waits) or the traceback (exceptions, sandbox calls).
        del defn
        classified = classify(
            failure, events, None, nondeterminism=isinstance(failure, NondeterminismError),
            context_radius=radius,
        )
        if classified.divergence is not None and classified.locate is not None:
            candidates = candidate_views(events, classified.locate)
            found = _first_failing(candidates, history, session)
            if found is not None:
                classified.divergence = placed(classified.divergence, classified.locate, found, events, radius)
        return classified

    def _groups(self, workflows: WorkflowSet) -> list[_Group]:
        if self._resolved is None or self._resolved[0] is not workflows:
            self._resolved = (workflows, _resolve(workflows))
        return self._resolved[1]

    def _definition(self, workflows: WorkflowSet, workflow_type: str) -> tuple[_Group | None, Any]:
        groups = self._groups(workflows)
        for group in groups:
            if workflow_type in group.by_type:
                return group, group.by_type[workflow_type]
        for group in groups:
            if group.dynamic is not None:
                return group, group.dynamic
        return None, None

    def _key(self, group: _Group) -> tuple[Any, ...]:
        # Loose classes get a fresh default config per WorkflowSet; key them by the classes alone so a
        # new WorkflowSet of the same classes reuses the open Replayer. The session keeps the classes
        # (and a user's config) alive, so their ids cannot be reused while the key is in use.
        config = id(group.config) if group.user_config else 0
        return (config, *(id(defn.cls) for defn in _definitions(group)))

    def _session(self, group: _Group) -> _Session:
        key = self._key(group)
        session = self._sessions.pop(key, None)
        if session is None:
            from replaytest.plugins.temporal.trace import CommandRecorder

            session = _Session(group, CommandRecorder(_data_converter(group).payload_converter))
        self._sessions[key] = session  # most recently used last
        while len(self._sessions) > MAX_OPEN_SESSIONS:
            oldest = next(iter(self._sessions))
            self._sessions.pop(oldest).close()
        return session

    def _drop(self, group: _Group) -> None:
        session = self._sessions.pop(self._key(group), None)
        if session is not None:
            session.close()


def _started_at(first_event: Any) -> str | None:
    """The run's start (the started event's time) as ISO 8601 UTC with microseconds, None when the history
    has none; always the same width, so the texts sort as the times do."""
    if not first_event.HasField("event_time"):
        return None
    return str(first_event.event_time.ToDatetime().strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def _patch_decisions(calls: Sequence[Any], history: WorkflowHistory) -> list[PatchDecision]:
    """The ``workflow.patched``/``deprecate_patch`` calls of one replay (``temporal.trace.PatchCall``) as
    decisions, each placed at the event id of the history's ``core_patch`` marker for its id (None where
    the history has none: the recorded run took the old path there, or a call past the history's end
    that a resumed run would record)."""
    if not calls:
        return []
    markers: dict[str, tuple[int, bool]] = {}
    for event in history.events:
        if not event.HasField("marker_recorded_event_attributes"):
            continue
        attrs = event.marker_recorded_event_attributes
        if attrs.marker_name != "core_patch" or "patch-data" not in attrs.details:
            continue
        payloads = attrs.details["patch-data"].payloads
        try:
            data = json.loads(payloads[0].data) if payloads else None
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            markers.setdefault(data["id"], (event.event_id, bool(data.get("deprecated"))))
    decisions = []
    for call in calls:
        marker = markers.get(call.patch_id)
        decisions.append(
            PatchDecision(
                call.patch_id,
                bool(call.used),
                marker[0] if marker is not None else None,
                call.source,
                call.deprecated,
                marker[1] if marker is not None and call.used else None,
            )
        )
    return decisions


def _definitions(group: _Group) -> list[Any]:
    defns = list(group.by_type.values())
    if group.dynamic is not None:
        defns.append(group.dynamic)
    return defns


def _resolve(workflows: WorkflowSet) -> list[_Group]:
    """Sort the WorkflowSet's objects into groups: each TemporalReplayConfig is one, loose workflow
    classes (directly, in lists, or found in a module) share a default one. Objects of other engines
    are ignored — the WorkflowSet is shared by every replayer."""
    default = _Group(TemporalReplayConfig(), user_config=False)
    groups: list[_Group] = []

    def add(group: _Group, cls: type) -> None:
        defn = workflow_definition(cls)
        if defn is None:
            return
        if defn.name is None:
            group.dynamic = group.dynamic or defn
            return
        known = group.by_type.setdefault(defn.name, defn)
        if known.cls is not cls:
            classes = group.duplicates.setdefault(defn.name, [known.cls])
            if cls not in classes:
                classes.append(cls)

    def visit(obj: Any, depth: int = 0) -> None:
        if isinstance(obj, TemporalReplayConfig):
            group = _Group(obj)
            for cls in obj.workflows:
                add(group, cls)
            groups.append(group)
        elif isinstance(obj, type):
            add(default, obj)
        elif isinstance(obj, types.ModuleType) and depth == 0:
            for name in sorted(vars(obj)):
                value = getattr(obj, name)
                if isinstance(value, (type, TemporalReplayConfig)):
                    visit(value, depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset)) and depth < 3:
            for item in sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj:
                visit(item, depth + 1)

    for obj in workflows.objects:
        visit(obj)
    if default.by_type or default.dynamic is not None:
        groups.append(default)
    return groups


def _duplicates_error(group: _Group) -> str:
    problems = [
        f"workflow type {name!r} is defined by {' and '.join(_qualified(cls) for cls in classes)}"
        for name, classes in sorted(group.duplicates.items())
    ]
    return (
        "configuration error: " + "; ".join(problems) + " (Temporal's Replayer refuses more than one workflow"
        " of a name); keep only the class production workers register, or give the others their own"
        " @workflow.defn(name=...)"
    )


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _data_converter(group: _Group) -> Any:
    from temporalio.converter import DataConverter

    return group.config.data_converter or DataConverter.default


_CONVERTER_TROUBLE = ("is not JSON serializable", "Unknown payload encoding", "Failed decoding arguments",
                      "Failed decoding", "payload converter", "Expecting value")


def _converter_trouble(text: str) -> bool:
    """Whether a failure reads like a payload the configured converter cannot encode or decode."""
    return any(marker in text for marker in _CONVERTER_TROUBLE)


def _event_type_names(history: WorkflowHistory) -> list[str]:
    """The parsed events' type names (``EVENT_TYPE_…``; empty for a number temporalio does not know), for
    ``temporal.history``'s checks (sdk-core panics on a malformed sequence) and run status."""
    from temporalio.api.enums.v1 import EventType

    def name(value: Any) -> str:
        try:
            return EventType.Name(value)
        except ValueError:
            return ""

    return [name(event.event_type) for event in history.events]


def _has_workflow_task(history: WorkflowHistory) -> bool:
    from temporalio.api.enums.v1 import EventType

    started = EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
    return any(event.event_type == started for event in history.events)


def _first_failing(candidates: list[Any], history: WorkflowHistory, session: _Session) -> Any:
    """The earliest recorded command among ``candidates`` at which a history prefix already fails.

    sdk-core's message names the recorded command (e.g. activity type ``say``) but not its event id;
    when that command occurs more than once, bisect over prefixes of the history ending at each
    occurrence (a prefix replays like a still-running workflow). Only runs after a divergence.
    """
    from temporalio.client import WorkflowHistory

    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    events = list(history.events)
    low, high = 0, len(candidates) - 1
    while low < high:
        middle = (low + high) // 2
        prefix = WorkflowHistory(history.workflow_id, events[: candidates[middle].position])
        try:
            failed = session.replay(prefix).replay_failure is not None
        except Exception:  # cannot narrow it down: report without a position rather than not at all
            return None
        if failed:
            high = middle
        else:
            low = middle + 1
    return candidates[low]


class _Session:
    """One Replayer kept open as a replay iterator on the shared loop thread; histories are pushed
    one at a time and their results pulled back."""

    def __init__(self, group: _Group, recorder: Any) -> None:
        self._group = group
        self.recorder = recorder  # a temporal.trace.CommandRecorder: what the code issues, with lines
        self._queue: asyncio.Queue[WorkflowHistory | None] | None = None
        self._context: Any = None
        self._results: Any = None  # the replay iterator's async generator
        self._histories: Any = None  # our async generator feeding it
        self._replayer: Replayer | None = None
        _OPEN.add(self)

    def replay(self, history: WorkflowHistory) -> WorkflowReplayResult:
        future = _loop().submit(self._replay(history))
        limit = REPLAY_TIMEOUT_S + REPLAY_TIMEOUT_PER_1000_EVENTS_S * len(history.events) / 1000
        try:
            return future.result(limit)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(
                f"replay did not finish within {limit:.0f} s (sdk-core may have stopped on a history it cannot read)"
            ) from None

    def close(self) -> None:
        _OPEN.discard(self)
        if self._context is not None:
            try:
                _loop().submit(self._close()).result(10)
            except Exception:  # shutting down a broken worker must not hide the error that broke it
                pass
        self._replayer = None

    async def _replay(self, history: WorkflowHistory) -> WorkflowReplayResult:
        if self._results is None:
            await self._open()
        assert self._queue is not None and self._results is not None
        await self._queue.put(history)
        try:
            return await self._results.__anext__()
        except BaseException:
            await self._close()
            raise

    async def _open(self) -> None:
        if self._replayer is None:
            self._replayer = _make_replayer(self._group, [self.recorder])
        self._queue = asyncio.Queue()
        self._histories = self._feed(self._queue)
        self._context = self._replayer.workflow_replay_iterator(self._histories)
        self._results = (await self._context.__aenter__()).__aiter__()

    async def _close(self) -> None:
        context, results, histories = self._context, self._results, self._histories
        self._context = self._results = self._queue = self._histories = None
        if context is None:
            return
        # Close both suspended generators here, on their loop; left to the garbage collector they
        # would be finalised on a loop that may already be stopped.
        for generator in (results, histories):
            if generator is not None:
                await generator.aclose()
        await context.__aexit__(None, None, None)

    @staticmethod
    async def _feed(queue: asyncio.Queue[WorkflowHistory | None]) -> AsyncIterator[WorkflowHistory]:
        while True:
            history = await queue.get()
            if history is None:
                return
            yield history


def _make_replayer(group: _Group, extra_interceptors: Sequence[Any] = ()) -> Replayer:
    from temporalio.worker import Replayer

    config = group.config
    options: dict[str, Any] = {
        "workflows": [defn.cls for defn in _definitions(group)],
        "interceptors": [*config.interceptors, *extra_interceptors],
        "plugins": list(config.plugins),
        "workflow_failure_exception_types": list(config.workflow_failure_exception_types),
        "debug_mode": config.debug_mode,
        "runtime": _quiet_runtime(),
    }
    if config.data_converter is not None:
        options["data_converter"] = config.data_converter
    if config.namespace is not None:
        options["namespace"] = config.namespace
    return Replayer(**options)


_runtime: Any = None


def _quiet_runtime() -> Any:
    """A temporalio Runtime without core's log output: its warning repeats the failure this plugin
    reports, raw, on stderr."""
    global _runtime
    if _runtime is None:
        from temporalio.runtime import Runtime, TelemetryConfig

        _runtime = Runtime(telemetry=TelemetryConfig(logging=None, metrics=None))
    return _runtime


class _LoopThread:
    """A private event loop on a daemon thread, so ``replay`` works from synchronous code and from
    inside a running loop alike, and open Replayers survive between calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="replaytest-temporal-replay", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


_loop_thread: _LoopThread | None = None
_loop_lock = threading.Lock()
_OPEN: set[_Session] = set()
_REPLAYERS: weakref.WeakSet[TemporalReplayer] = weakref.WeakSet()


def _loop() -> _LoopThread:
    global _loop_thread
    with _loop_lock:
        if _loop_thread is None:
            _loop_thread = _LoopThread()
        return _loop_thread


def _close_all() -> None:
    global _loop_thread
    for replayer in list(_REPLAYERS):
        replayer.close()
    for session in list(_OPEN):
        session.close()
    with _loop_lock:
        stopping, _loop_thread = _loop_thread, None
    if stopping is not None:
        stopping.loop.call_soon_threadsafe(stopping.loop.stop)
        stopping.thread.join(10)
    # Free the closed Replayers now, while their native parts can still take the GIL; freed during
    # interpreter finalisation they can abort the process.
    gc.collect()



# Close open Replayers while the interpreter can still run threads: shutting one down needs temporalio's
# workflow task executor, which refuses work once threading's shutdown hooks ran (they run before
# ``atexit``), and a core worker left open into finalisation can crash the process on exit
# (temporalio/sdk-python#300).
_register_shutdown = getattr(threading, "_register_atexit", atexit.register)
_register_shutdown(_close_all)


def _unprompted_activities(run: Any, cls: Any, workflows: Any, extra_calls: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """(activity, where its function calls a model) of the recorded activities that carry no prompt header
    and whose function — found among the globals of the workflow's module, the modules it imports and the
    configured objects — calls a model client."""
    import sys

    from replaytest.model_clients import model_call_site
    from replaytest.plugins.temporal.internals import activity_name

    candidates: list[Any] = list(getattr(workflows, "objects", ()))
    module = sys.modules.get(getattr(cls, "__module__", ""))
    namespaces = [vars(module)] if module is not None else []
    namespaces += [vars(value) for value in (vars(module).values() if module is not None else ())
                   if isinstance(value, types.ModuleType) and is_project_file(getattr(value, "__file__", None) or "<")]
    for namespace in namespaces:
        candidates.extend(namespace.values())
    functions: dict[str, Any] = {}
    for candidate in candidates:
        name = activity_name(candidate) if callable(candidate) and not isinstance(candidate, type) else None
        if name is not None:
            functions.setdefault(name, candidate)
    found: list[tuple[str, Any]] = []
    for call in run.calls:
        if call.kind != "activity" or call.prompt is not None or call.name not in functions:
            continue
        site = model_call_site(functions[call.name], extra_calls=extra_calls)
        if site is not None:
            found.append((f"activity {call.name!r}", site))
    return found


def _fetched_ahead_notes(history: Any, cls: Any, status: str) -> list[str]:
    """``prompts.FETCHED_AHEAD_NOTE`` for each activity the workflow class's code refers to (a global or a
    module attribute its methods load) that the run has not completed and whose function calls
    ``Prompt.fetched``: the run will render whatever the registry holds when that activity runs."""
    from temporalio.api.enums.v1 import EventType

    from replaytest.plugins.temporal.internals import activity_name
    from replaytest.prompts import FETCHED_IN_ACTIVITY, fetched_ahead_note, fetched_prompt_site

    scheduled: dict[int, str] = {}
    completed: set[str] = set()
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed.add(scheduled.get(event.activity_task_completed_event_attributes.scheduled_event_id, ""))
    notes: list[str] = []
    seen: set[str] = set()
    for function in _referenced_functions(cls):
        name = activity_name(function)
        if name is None or name in completed or name in seen:
            continue
        seen.add(name)
        site = fetched_prompt_site(function)
        if site is not None:
            notes.append(fetched_ahead_note(f"activity {name!r}", site, status, recorded=FETCHED_IN_ACTIVITY))
    return notes


def _referenced_functions(cls: Any) -> list[Any]:
    """The callables the methods of ``cls`` load by name (globals, closure variables, attributes of the
    modules they load), in the order the code names them."""
    found: list[Any] = []
    for member in vars(cls).values():
        function = getattr(member, "__func__", member)
        function = getattr(function, "__wrapped__", function)
        if not isinstance(function, types.FunctionType):
            continue
        namespace: dict[str, Any] = dict(function.__globals__)
        for variable, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
            try:
                namespace[variable] = cell.cell_contents
            except ValueError:  # an empty cell
                continue
        codes = [function.__code__]
        while codes:
            code = codes.pop(0)
            codes.extend(constant for constant in code.co_consts if isinstance(constant, types.CodeType))
            modules = [value for name in code.co_names if isinstance(value := namespace.get(name), types.ModuleType)]
            for name in (*code.co_names, *code.co_freevars):
                if callable(namespace.get(name)):
                    found.append(namespace[name])
                found.extend(getattr(module, name) for module in modules if callable(getattr(module, name, None)))
    return found
