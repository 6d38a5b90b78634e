"""The outcome of one replay: ``Divergence`` (what differed, where) and ``ReplayResult`` (per history).

These types are the contract between every framework replayer (journal, DBOS, Temporal, third-party)
and the faces (pytest plugin, ``replaytest replay``). Rendering lives in ``replaytest.replay.report``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from replaytest.history.model import STATUSES

# What state the replayed run was in when its history was recorded: the history format's own
# vocabulary (``$.status``), split by what a divergence means for it. An in-flight run is resumed by
# replaying it, so a divergence breaks its recovery; a finished one is only replayed for queries,
# resets and forks.
RUN_STATUSES: tuple[str, ...] = STATUSES
IN_FLIGHT_STATUSES: tuple[str, ...] = ("running", "parked")
FINISHED_STATUSES: tuple[str, ...] = ("completed", "failed")

DIVERGENCE_KINDS: tuple[str, ...] = (
    "command-mismatch",  # a different kind or name at a position
    "args-mismatch",  # same command, different arguments digest
    "extra-command",  # code issues a command the completed history lacks
    "missing-command",  # code finished before the history did
    "result-mismatch",  # the run ends with another result or failure than recorded
    "prompt-drift",  # a model step's prompt version differs from the recorded one
    "patch-mismatch",  # a patch marker the code no longer issues, or issues where history has none
    "nondeterministic-call",  # a runtime guard caught a clock/random/uuid read or stopped an effect
    "interrupt-mismatch",  # a human-in-the-loop wait asks another question than the one recorded there
    "graph-node-missing",  # a LangGraph graph thread waits in (or is still to run) a node the graph no longer has
    "graph-channel-missing",  # a state key holding a recorded value is no channel of the current graph
    "graph-channel-required",  # a node a thread resumes in reads a state key the recorded state lacks
    "graph-tool-missing",  # a ToolNode a thread resumes in (or is still to run) lacks a tool the pending call names
)

ResultStatus = Literal["passed", "diverged", "stale", "error"]
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class CommandView:
    """One command, as recorded in a history or as issued by the code, in engine-neutral terms.

    ``kind`` is the neutral kind (step, model, timer, signal, marker, child-workflow, …) and
    ``detail`` carries what the engine adds (Temporal event id and type, patch id, activity type).
    """

    kind: str
    name: str
    position: int | None = None
    args_digest: str | None = None
    prompt_version: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def kind_text(self) -> str:
        """The kind as reports word it: the engine's own word where it set one (``detail["kind_label"]``:
        LangGraph's ``task`` for the neutral ``step``), else the neutral kind."""
        label = self.detail.get("kind_label")
        return label if isinstance(label, str) and label else self.kind

    def describe(self) -> str:
        """Short text for reports: kind, name, patch id, the prompt version (``short_version``: the text's
        digest cut to 12 hex digits, with the model and parameters) and the args digest cut to 12."""
        text = f"{self.kind_text} {self.name!r}" if self.name else self.kind_text
        if self.detail.get("patch_id"):
            text += f" {self.detail['patch_id']!r}"
        if self.prompt_version:
            from replaytest.prompts import short_version  # the whole version: text, model and parameters

            named = f"{self.detail['prompt']} " if self.detail.get("prompt") else ""
            text += f" prompt {named}{short_version(self.prompt_version)}"
        if self.args_digest:
            text += f" args {self.args_digest[:19]}"
        return text


@dataclass(frozen=True)
class SourcePosition:
    """Where in the current code a command was issued (or a guard tripped)."""

    path: str
    line: int
    function: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        return f"{where} in {self.function}" if self.function else where


@dataclass(frozen=True)
class Divergence:
    """The first place where the current code and the recorded history part."""

    kind: str
    position: int | None
    message: str
    recorded: CommandView | None = None
    issued: CommandView | None = None
    recorded_context: tuple[CommandView, ...] = ()
    issued_context: tuple[CommandView, ...] = ()
    source: SourcePosition | None = None
    severity: Severity = "error"

    def __post_init__(self) -> None:
        if self.kind not in DIVERGENCE_KINDS:
            raise ValueError(f"unknown divergence kind {self.kind!r}; expected one of {', '.join(DIVERGENCE_KINDS)}")


@dataclass(frozen=True)
class PatchDecision:
    """One ``patched(id)`` / ``deprecate_patch(id)`` call the code made while a history replayed.

    ``taken``: the call found the patch marker in the history there (the run is on the new path; for
    ``deprecate_patch``: the marker was consumed); False: the recorded run took the old path there (no
    marker). ``position``: the recorded event holding the marker (the journal's seq, DBOS's function id,
    Temporal's event id), or where the code stood when there was none (None when the engine does not
    say). ``deprecated``: the call is a ``deprecate_patch``. ``marker_deprecated``: the consumed marker
    was itself recorded by a ``deprecate_patch`` (None: no marker consumed, or the engine does not say)."""

    patch_id: str
    taken: bool
    position: int | None = None
    source: SourcePosition | None = None
    deprecated: bool = False
    marker_deprecated: bool | None = None


# The end of the note a replayer adds to an in-flight run sleeping on a timer whose duration the code has
# changed since; ``impact`` lists the runs that carry it.
ALREADY_SLEEPING_NOTE = (
    "this run is already sleeping on it and keeps the recorded duration (the engine fires it when it was due); "
    "runs that reach it later sleep the new one"
)


# What the engine's own code did when an in-flight run was resumed past the end of its history
# (``Rehearsal.outcome``).
REHEARSAL_OUTCOMES: tuple[str, ...] = (
    "continues",  # the engine accepted the resume and the code took its next command(s) past the history
    "waits",  # the engine accepted the resume and the run waits again, with no new command
    "completes",  # the engine accepted the resume and the run finished
    "breaks",  # the engine refused the resume (its own nondeterminism / unexpected-step error)
)


# How a note about a fresh run's rehearsal (``ReplayResult.fresh_run``) begins, when none could be made.
FRESH_RUN_NOTE_PREFIX = "fresh run not rehearsed"


@dataclass(frozen=True)
class Rehearsal:
    """A resume rehearsal: an in-flight run resumed on the current code by **the engine's own code**, one
    step past the end of its history, every effect stubbed. It answers "what does this run do when it
    resumes on this code" from the engine rather than from replaytest's model of it.

    ``outcome``: one of ``REHEARSAL_OUTCOMES``. ``delivered``: what was handed to the run so that it could
    resume (the signal, message or answer it waits for, the timer it sleeps on, fired; "" when it needed
    nothing). ``commands``: the commands the engine took past the history, in order. ``patch_decisions``:
    every patch check of the resumed run as the engine answered it, those answered while it replayed the
    recorded part included: the path the run takes. ``error``: the engine's own message when it ``breaks``.
    ``source``: the line of the first command past the history, or of the failure. ``driver``: what
    resumed it (the engine's API and version). ``note``: what the rehearsal could not do or stub, or why a
    check answered as it did (a guard whose check falls in a task the run already completed)."""

    outcome: str
    delivered: str = ""
    commands: tuple[CommandView, ...] = ()
    patch_decisions: tuple[PatchDecision, ...] = ()
    error: str | None = None
    source: SourcePosition | None = None
    driver: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in REHEARSAL_OUTCOMES:
            raise ValueError(f"unknown rehearsal outcome {self.outcome!r}; expected one of {', '.join(REHEARSAL_OUTCOMES)}")

    def takes_patch(self, patch_id: str) -> bool | None:
        """The engine's answer to the run's last ``patched(patch_id)`` check, None when it asked none."""
        answers = [decision.taken for decision in self.patch_decisions if decision.patch_id == patch_id]
        return answers[-1] if answers else None


@dataclass(frozen=True)
class PromptChange:
    """A prompt the current code has at another version than the run used or started under.

    ``started``: the version the run's recorded calls used (``compared == "call"``) or, for a prompt no
    recorded call used or an engine that records no per-call versions, the one in the run's start manifest
    (``compared == "manifest"``); None when the prompt did not exist when the run started. ``called``: a
    recorded call of the run already used it (the run keeps that call's result)."""

    name: str
    started: str | None
    current: str
    called: bool
    compared: Literal["call", "manifest"] = "manifest"
    # Where the current code uses the prompt (the manifest walk's line), when known.
    source: SourcePosition | None = None


@dataclass
class ReplayResult:
    """What replaying one history file produced.

    ``status``: ``passed`` (no divergence; ``warnings`` may still hold prompt drift), ``diverged``
    (``divergence`` set), ``stale`` (no current code for the workflow type; ``error`` says which),
    ``error`` (the replay itself could not run; ``error`` holds the reason).

    ``run_status`` is the run's recorded state (one of ``RUN_STATUSES``: running, parked, completed,
    failed), None only when the history could not be read or its replayer does not say.
    """

    history_path: Path
    engine: str
    workflow_type: str
    workflow_id: str | None = None
    status: ResultStatus = "passed"
    divergence: Divergence | None = None
    warnings: list[Divergence] = field(default_factory=list)
    # Every runtime-guard hit of the run, in order (kind nondeterministic-call): value reads that returned
    # a real value while the replay went on, and the effect that stopped it. ``divergence`` is the command
    # divergence when there is one, else the first failing hazard; warning hazards are in ``warnings`` too.
    hazards: list[Divergence] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    events: int = 0
    # Checks that could not apply to this history, one short sentence each (the summary counts them):
    # "passed" must say what it did not check.
    notes: list[str] = field(default_factory=list)
    log: str = ""  # what libraries logged or wrote to stderr during the replay (tracebacks included)
    # For a diverged history that redaction changed: the redacted JSON paths the code could have read
    # before it diverged (the input and the events up to the divergence), so a report can say the
    # divergence may come from a pseudonym rather than from the code.
    redacted: tuple[str, ...] = ()
    run_status: str | None = None
    # Every patch decision the code made during the replay, in call order (empty: it asked for none, or
    # the replay stopped before it did). Replay stopping at a running run's resume point records none past it.
    patch_decisions: list[PatchDecision] = field(default_factory=list)
    # When the run started, as the history records it (ISO 8601, UTC), or None when it does not.
    run_started_at: str | None = None
    # Every prompt the current code has at another version than this run used or started under (empty:
    # none changed, or the history records no prompt versions, which ``notes`` then says).
    prompt_changes: list[PromptChange] = field(default_factory=list)
    # An in-flight run resumed by the engine's own code past the end of its history (``ReplayOptions.rehearse``);
    # None when not asked for, not in flight, or the replay did not reach the end of its history.
    rehearsal: Rehearsal | None = None
    # A fresh run of the current code rehearsed by the engine's own code from this history's recorded input
    # (``ReplayOptions.fresh_run``): started from nothing, every effect answered with a result this history
    # recorded for the same activity/step type, driven until the patch checks asked for are answered and the
    # command after them issued. ``commands`` holds every command of that run in order (patch markers as
    # ``patch`` views with ``detail.patch_id``). None when not asked for or the engine has no patch API.
    fresh_run: Rehearsal | None = None

    @property
    def in_flight(self) -> bool | None:
        """True for a running or parked run (replay is how the engine resumes it), False for a finished
        one, None when the run status is unknown (or outside ``RUN_STATUSES``)."""
        if self.run_status not in RUN_STATUSES:
            return None
        return self.run_status in IN_FLIGHT_STATUSES


def value_text(value: Any, fallback: Callable[[Any], str] = repr) -> str:
    """A recorded or returned value as canonical JSON text (sorted keys; tuples read as lists), the form
    results are recorded and compared in; what JSON cannot hold is written with ``fallback`` (every engine's
    messages quote values this way)."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=fallback)
    except (TypeError, ValueError):  # keys that do not sort, a value that contains itself
        return fallback(value)


def short_value(value: Any, limit: int = 100, fallback: Callable[[Any], str] = repr) -> str:
    """``value_text`` cut to ``limit`` characters (the last one an ellipsis) for a one-line message."""
    text = value_text(value, fallback)
    return text if len(text) <= limit else text[: limit - 1] + "…"
