"""The double-run check's engine-neutral half: what one run of an orchestration function issued (``Trace``),
the inputs it runs on (``DoubleRunCase``: from recorded histories, or from a declared inputs file), the
conditions each run is given (``RunConditions``), and the first difference between two traces as a
``Divergence`` in a ``ReplayResult`` (so the replay reports, JSON and exit codes render it unchanged).

An engine's tracer (its plugin's ``double_run`` module) runs one case with every step stubbed and returns
its ``Trace``; the face runs each case twice in its own process and once more in a child process under
other conditions, and compares them here. Traces cross the process boundary as JSON (never pickled).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replaytest.fileio import read_regular
from replaytest.history import HistoryError, load_history
from replaytest.history.io import parse_json
from replaytest.replay.divergence import CommandView, Divergence, ReplayResult, SourcePosition
from replaytest.replay.guards import NondeterministicCall
from replaytest.replay.report import display_path

# What the inputs file must hold at its top (``{"format": "replaytest-double-run-inputs", "cases": [...]}``).
INPUTS_FORMAT = "replaytest-double-run-inputs"


class DoubleRunInputError(Exception):
    """An inputs file or a history given to the double run cannot be used (a configuration error: exit 2)."""


@dataclass(frozen=True)
class DoubleRunCase:
    """One orchestration function and the input it runs on. ``steps``: a stub value per step name (the
    inputs file's ``steps``); ``recorded``: ``(kind, name) -> result`` per position from a recorded history,
    which wins where the code issues the same command at that position. ``origin``: the file it came from."""

    engine: str
    workflow: str
    input: Any
    origin: Path
    workflow_id: str | None = None
    steps: Mapping[str, Any] = field(default_factory=dict)
    recorded: Mapping[int, tuple[str, str, Any]] = field(default_factory=dict)
    run_status: str | None = None  # the recorded run's status, for a case taken from a history

    def stub_value(self, position: int, kind: str, name: str) -> Any:
        """What a stubbed step returns: the same for the same name and position in every run."""
        found = self.recorded.get(position)
        if found is not None and found[0] == kind and found[1] == name:
            return found[2]
        return self.steps.get(name)

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "workflow": self.workflow, "input": self.input, "origin": str(self.origin),
                "workflow_id": self.workflow_id, "steps": dict(self.steps), "run_status": self.run_status,
                "recorded": [[position, *entry] for position, entry in sorted(self.recorded.items())]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DoubleRunCase:
        recorded = {int(item[0]): (str(item[1]), str(item[2]), item[3]) for item in data.get("recorded", [])}
        return cls(engine=data["engine"], workflow=data["workflow"], input=data.get("input"), origin=Path(data["origin"]),
                   workflow_id=data.get("workflow_id"), steps=dict(data.get("steps") or {}), recorded=recorded,
                   run_status=data.get("run_status"))


@dataclass(frozen=True)
class TracedCommand:
    """One command a run issued: neutral kind, name, arguments digest and the orchestration line."""

    kind: str
    name: str
    args_digest: str | None = None
    path: str | None = None
    line: int | None = None
    function: str | None = None

    def view(self, position: int) -> CommandView:
        return CommandView(kind=self.kind, name=self.name, position=position, args_digest=self.args_digest)

    def source(self) -> SourcePosition | None:
        return SourcePosition(self.path, self.line, self.function) if self.path and self.line else None

    def same_as(self, other: TracedCommand) -> bool:
        return (self.kind, self.name, self.args_digest) == (other.kind, other.name, other.args_digest)


@dataclass
class Trace:
    """What one run issued and how it ended. ``ending``: ``completed``/``failed``/``parked``/``continued``,
    ``waits``, ``stopped``, or ``broke`` (the engine refused its own replay of the run's earlier steps), with ``result`` (the returned value as canonical JSON text, or the error as ``Type: message``);
    ``error``: the run could not be made at all (no such workflow); ``hazards``: what the runtime guards
    caught (one line each: a value read, or an effect they stopped)."""

    commands: list[TracedCommand] = field(default_factory=list)
    ending: str = ""
    result: str = ""
    error: str | None = None
    hazards: list[str] = field(default_factory=list)
    # The effect the runtime guards stopped (kind ``effect``, the call's name, its line): the run ended there.
    stopped: TracedCommand | None = None
    # For ``broke``, when the tracer knows it: the command the code issued where the engine refused the
    # replay (its line), and the position in ``commands`` of the one recorded there.
    refused: TracedCommand | None = None
    refused_position: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trace:
        commands = [TracedCommand(**item) for item in data.get("commands", [])]
        stopped = TracedCommand(**data["stopped"]) if data.get("stopped") else None
        refused = TracedCommand(**data["refused"]) if data.get("refused") else None
        return cls(commands=commands, ending=data.get("ending", ""), result=data.get("result", ""),
                   error=data.get("error"), hazards=list(data.get("hazards", [])), stopped=stopped,
                   refused=refused, refused_position=data.get("refused_position"))

    def add_guard_trips(self, trips: Sequence[NondeterministicCall]) -> None:
        """What the runtime guards caught during the run: a line each, and the effect that stopped it."""
        for trip in trips:
            source = trip.source
            where = f" at {display_path(source.path)}:{source.line}" if source is not None else ""
            self.hazards.append(f"{'stopped' if trip.stopped else 'read'} {trip.call}{where}")
            if trip.stopped and self.stopped is None:
                self.stopped = TracedCommand("effect", trip.call, None, source.path if source else None,
                                             source.line if source else None, source.function if source else None)


@dataclass(frozen=True)
class RunConditions:
    """What differs between runs besides the process: the random seed, the uuid source and a clock offset.
    ``describe`` is how reports name the run."""

    seed: int
    clock_offset_s: float
    describe: str

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Seed ``random``, give ``uuid.uuid4`` a source drawn from the seed and shift ``time.time`` /
        ``time.time_ns`` for the block; each is put back after. ``datetime.now`` is C code reading the clock
        itself and is not shifted (a second process runs later anyway)."""
        state = random.getstate()
        saved = (uuid.uuid4, time.time, time.time_ns)
        source = random.Random(self.seed)
        offset, real_time, real_time_ns = self.clock_offset_s, time.time, time.time_ns
        random.seed(self.seed)
        uuid.uuid4 = lambda: uuid.UUID(int=source.getrandbits(128), version=4)
        time.time = lambda: real_time() + offset
        time.time_ns = lambda: real_time_ns() + int(offset * 1e9)
        try:
            yield
        finally:
            uuid.uuid4, time.time, time.time_ns = saved
            random.setstate(state)


# The first run and its repeat in the same process run under the same conditions, so only state left over
# from the first (a module counter, a cache, addresses reused) can part them; the second process changes
# everything it can.
FIRST_RUN = RunConditions(seed=1, clock_offset_s=0.0, describe="first run")
REPEAT_RUN = RunConditions(seed=1, clock_offset_s=0.0, describe="the same run again in the same process")
OTHER_PROCESS_RUN = RunConditions(
    seed=2, clock_offset_s=90_061.0,
    describe="a second process (another PYTHONHASHSEED, random seed and uuid source, clock 25h01m01s later)",
)

Tracer = Callable[[DoubleRunCase, RunConditions], Trace]


def cases_from_inputs_file(path: Path, engine: str = "journal") -> list[DoubleRunCase]:
    """The cases of a declared inputs file::

        {"format": "replaytest-double-run-inputs",
         "cases": [{"workflow": "support_agent", "input": {...}, "engine": "journal",
                    "steps": {"plan": "refund", "lookup": {"tier": "gold"}}}]}

    ``engine`` defaults to ``engine``; ``steps`` (optional) gives the value a stubbed step of that name returns
    (a step not named returns null)."""
    try:
        document = parse_json(read_regular(path), path)
    except HistoryError as error:
        raise DoubleRunInputError(f"{path}: {error}") from None
    except OSError as error:
        raise DoubleRunInputError(f"{path}: cannot read: {error.strerror or error}") from None
    if not isinstance(document, dict) or document.get("format") != INPUTS_FORMAT:
        raise DoubleRunInputError(f'{path}: not a double-run inputs file ($.format must be "{INPUTS_FORMAT}")')
    entries = document.get("cases")
    if not isinstance(entries, list) or not entries:
        raise DoubleRunInputError(f"{path}: $.cases must be a non-empty list")
    cases = []
    for index, entry in enumerate(entries):
        where = f"{path}: $.cases[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("workflow"), str) or not entry["workflow"]:
            raise DoubleRunInputError(f"{where}.workflow must be a workflow type name")
        steps = entry.get("steps", {})
        if not isinstance(steps, dict):
            raise DoubleRunInputError(f"{where}.steps must be an object of step name to stub value")
        case_engine = entry.get("engine", engine)
        if not isinstance(case_engine, str):
            raise DoubleRunInputError(f"{where}.engine must be an engine name")
        cases.append(DoubleRunCase(engine=case_engine, workflow=entry["workflow"], input=entry.get("input"),
                                   origin=path, workflow_id=f"case {index}", steps=steps))
    return cases


def case_from_history(path: Path) -> DoubleRunCase:
    """A neutral history's workflow type and input, with its recorded results as the stubs' values (an
    event the run still waits on, ``"pending": true`` in its extra fields as a parked LangGraph thread's
    interrupt, recorded none)."""
    try:
        history = load_history(path)
    except HistoryError as error:
        raise DoubleRunInputError(str(error)) from None
    recorded = {event.seq: (event.kind, event.name, history.event_result(event)) for event in history.events
                if event.error is None and event.extra.get("pending") is not True}
    return DoubleRunCase(engine=history.workflow.engine, workflow=history.workflow.type, input=history.input,
                         origin=path, workflow_id=history.workflow.id, recorded=recorded,
                         run_status=history.status)


def compare(case: DoubleRunCase, first: Trace, second: Trace, conditions: RunConditions) -> ReplayResult:
    """The verdict on one case: passed, or diverged at the first command (or ending) where ``second``
    parts from ``first``; the first run is the report's ``recorded`` side, the other its ``issued`` side."""
    result = ReplayResult(case.origin, case.engine, case.workflow, case.workflow_id, events=len(first.commands),
                          run_status=case.run_status)
    for trace in (first, second):
        if trace.error is not None:
            result.status, result.error = "error", trace.error
            return result
    divergence = _engine_refused(first, "the first run") or _engine_refused(second, conditions.describe) \
        or _effect_stopped(first) or first_difference(first, second, conditions)
    if divergence is not None:
        result.status, result.divergence = "diverged", divergence
    for line in dict.fromkeys([*first.hazards, *second.hazards]):
        result.notes.append(f"runtime guard: {line}")
    if first.ending in ("stopped", "waits") and divergence is None:
        result.notes.append(f"both runs {first.ending} ({first.result}) after {len(first.commands)} command(s): "
                            "what the code does past that was not checked")
    if first.ending == "failed" and divergence is None:
        result.notes.append(
            f"both runs failed alike ({first.result}) under the stubs after {len(first.commands)} command(s): "
            "what the code does past that was not checked; give the steps stub values (the inputs file's \"steps\")"
        )
    return result


def _effect_stopped(trace: Trace) -> Divergence | None:
    """An effect made by orchestration code itself (a socket, a process, a file write, a step body called
    directly): the guards stopped it, so the run ended there and nothing past it was compared."""
    if trace.stopped is None:
        return None
    message = (f"the orchestration code made an effect itself ({trace.stopped.name}); the runtime guards stopped it, "
               "so nothing past it was compared: move it into a step")
    return Divergence("nondeterministic-call", len(trace.commands) + 1, message, source=trace.stopped.source())


def _engine_refused(trace: Trace, which: str) -> Divergence | None:
    """A run the engine itself stopped (``ending == "broke"``): replaying the run's own earlier tasks, it
    found other commands (state that changed between two replays inside one run)."""
    if trace.ending != "broke":
        return None
    message = (f"{which}: the engine's own replay of the run's earlier steps found other commands ({trace.result}); "
               "the code is not deterministic across replays")
    position = trace.refused_position
    if trace.refused is not None and position is not None and 0 < position <= len(trace.commands):
        # What an earlier invocation of the run issued there against what the code issues now, at its line.
        return Divergence("command-mismatch", position, message, recorded=trace.commands[position - 1].view(position),
                          issued=trace.refused.view(position),
                          recorded_context=_context(trace.commands, position - 1),
                          issued_context=_context([*trace.commands[:position - 1], trace.refused], position - 1),
                          source=trace.refused.source() or trace.commands[position - 1].source())
    last = trace.commands[-1] if trace.commands else None
    return Divergence("command-mismatch", len(trace.commands) or None, message,
                      issued=last.view(len(trace.commands)) if last else None, source=last.source() if last else None)


def first_difference(first: Trace, second: Trace, conditions: RunConditions) -> Divergence | None:
    """The first position where the two command sequences part, or their endings when they do not."""
    label = f"the first run issued {{}}; {conditions.describe} issued {{}}"
    for index, (a, b) in enumerate(zip(first.commands, second.commands)):
        if not a.same_as(b):
            position = index + 1
            kind = "args-mismatch" if (a.kind, a.name) == (b.kind, b.name) else "command-mismatch"
            message = label.format(_where(a), _where(b)) + ": the code is not deterministic here"
            return Divergence(kind, position, message, recorded=a.view(position), issued=b.view(position),
                              recorded_context=_context(first.commands, index),
                              issued_context=_context(second.commands, index), source=b.source() or a.source())
    common = min(len(first.commands), len(second.commands))
    if len(first.commands) != len(second.commands):
        longer, extra_kind = (second, "extra-command") if len(second.commands) > common else (first, "missing-command")
        command = longer.commands[common]
        position = common + 1
        if extra_kind == "extra-command":
            message = (f"{conditions.describe} issued {_where(command)} after the first run's last command "
                       f"(the first run {first.ending})")
            return Divergence(extra_kind, position, message, issued=command.view(position), source=command.source())
        message = f"the first run issued {_where(command)}; {conditions.describe} {second.ending} before it"
        return Divergence(extra_kind, position, message, recorded=command.view(position), source=command.source())
    if (first.ending, first.result) != (second.ending, second.result):
        last = first.commands[-1].source() if first.commands else None
        message = (f"the first run {first.ending} with {first.result or 'nothing'}; {conditions.describe} "
                   f"{second.ending} with {second.result or 'nothing'}")
        return Divergence("result-mismatch", None, message, source=last)
    return None


def _where(command: TracedCommand) -> str:
    text = f"{command.kind} {command.name!r}"
    return f"{text} at line {command.line}" if command.line else text


def _context(commands: Sequence[TracedCommand], index: int, radius: int = 6) -> tuple[CommandView, ...]:
    start = max(0, index - radius)
    return tuple(command.view(start + offset + 1) for offset, command in enumerate(commands[start:index + radius]))


def traces_json(traces: Sequence[Trace]) -> str:
    return json.dumps([trace.to_json() for trace in traces])
