"""Resume rehearsal for journal runs: the journal's own worker backend resumes an in-flight run on the
current code, one step past its history, in a scratch in-memory store.

The run's recorded events are written into a fresh ``Journal`` as the worker wrote them (the wait a parked
run stands at as a pending row); what it waits for is delivered the way production delivers it (a signal
through ``Journal.signal`` with the payload a recorded signal of that name carried, else none; a timer by
a clock past its due time); then ``run_workflow`` runs the current code with a ``LiveBackend`` — the
worker's own answers to every recorded command, patch marker and wait. The first command past the history
that would perform an effect or start a timer (a step, a model call, a sleep) is recorded and stops the run:
no thunk ever runs. What the backend answered is the verdict: a ``JournalDivergence`` breaks the resume; otherwise
the run continues with that command, waits again, or ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from replaytest.history import Event, History
from replaytest.journal import RunInfo, run_workflow
from replaytest.journal.commands import Command, Thunk
from replaytest.journal.errors import JournalDivergence, StepFailed
from replaytest.journal.store import Claim, Journal, dumps
from replaytest.journal.worker import LiveBackend
from replaytest.journal.workflow import WorkflowDef
from replaytest.replay.divergence import CommandView, PatchDecision, Rehearsal
from replaytest.replay.engine import PATCH_MARKER, as_position
from replaytest.replay.rehearsal import recorded_signal, remember_signal

DRIVER = "replaytest journal worker (LiveBackend) on a scratch store"
# Far past any due time a recorded timer or signal timeout can have: the rehearsal's clock, so a timer the
# run sleeps on has fired by the time it resumes.
_LATER = 1e12
_LEASE_S = 3600.0


class _Stop(BaseException):
    """The first effect past the history: raised instead of performing it. A ``BaseException``, so that the
    workflow's own ``except Exception`` cannot swallow it."""

    def __init__(self, command: Command) -> None:
        super().__init__(command.name)
        self.command = command


class RehearsalBackend(LiveBackend):
    """The worker's ``LiveBackend`` with every effect past the history stubbed: a recorded command, a patch
    marker, a timer or a signal wait is answered as the worker answers it; anything else new stops the run."""

    def __init__(self, journal: Journal, claim: Claim) -> None:
        super().__init__(journal, claim, _LEASE_S)
        self.recorded_positions = set(self.recorded)
        self.decisions: list[PatchDecision] = []
        self.last_source: Any = None

    def execute(self, command: Command, thunk: Thunk) -> Any:
        self.last_source = command.source
        if command.kind == "marker" and command.name == PATCH_MARKER:
            taken = bool(super().execute(command, thunk))
            self.decisions.append(PatchDecision(
                command.patch_id or "", taken, command.seq, as_position(command.source), command.deprecated,
            ))
            return taken
        if command.seq not in self.recorded_positions and command.kind != "signal":
            # A new step, model call or timer: the engine's next command past the history (a new timer would
            # park the run on it; a new signal wait parks it too, and is answered by the worker below).
            raise _Stop(command)
        return super().execute(command, thunk)


def _signal_payload(history: History, name: str) -> tuple[bool, Any]:
    """The payload a recorded signal named ``name`` carried: this run's last one, else one another run of
    the workflow type recorded in this replay batch; and whether there was one."""
    for event in reversed(history.events):
        if event.kind == "signal" and event.name == name and event.error is None:
            return True, history.event_result(event)
    return recorded_signal("journal", history.workflow.type, name)


def remember_signals(history: History) -> None:
    """Offer this history's recorded signal payloads to the rehearsals of its batch (``replay.rehearsal``)."""
    for event in history.events:
        if event.kind == "signal" and event.error is None and (event.result is not None or event.result_ref is not None):
            remember_signal("journal", history.workflow.type, event.name, history.event_result(event))


def _write_recorded(journal: Journal, claim: Claim, history: History) -> None:
    for event in history.events:
        journal.append(claim, event, state="done", result_json=dumps(history.event_result(event)) if event.result is not None
                       or event.result_ref is not None else None)
    waiting = history.waiting
    if waiting is not None:
        seq = max((event.seq for event in history.events), default=0) + 1
        # The wait as the worker leaves it pending; its due time has passed on the rehearsal's clock.
        journal.append(claim, Event(seq=seq, kind=waiting.kind, name=waiting.name), state="pending", due_at=_LATER / 2
                       if waiting.kind == "timer" else None)


def rehearse(history: History, definition: WorkflowDef, objects: Iterable[Any] = ()) -> Rehearsal:
    """Resume the in-flight run of ``history`` on ``definition`` with the journal's own worker backend.
    Call it under the runtime guards (the workflow code runs); it never runs a step body."""
    del objects  # every journal workflow is one function: nothing else to register
    journal = Journal(":memory:", clock=lambda: _LATER)
    try:
        run_id = history.workflow.run_id or history.workflow.id
        journal.start(definition.fn, history.input, run_id=run_id, workflow_id=history.workflow.id)
        claim = journal.claim("rehearsal", _LEASE_S, run_id)
        assert claim is not None  # a fresh running run is always ready
        _write_recorded(journal, claim, history)
        delivered = ""
        waiting = history.waiting
        if waiting is not None and waiting.kind == "signal":
            found, payload = _signal_payload(history, waiting.name)
            journal.signal(run_id, waiting.name, payload)
            delivered = f"signal {waiting.name!r} with {'a recorded payload' if found else 'no payload (none recorded)'}"
        elif waiting is not None and waiting.kind == "timer":
            delivered = f"timer {waiting.name!r} fired"
        run = RunInfo(workflow_type=definition.name, workflow_id=history.workflow.id, run_id=run_id,
                      input=history.input, code_version=definition.version)
        backend = RehearsalBackend(journal, claim)
        try:
            outcome = run_workflow(definition, run, backend)
        except _Stop as stop:
            command = stop.command
            view = CommandView(command.kind, command.name, position=command.seq)
            return Rehearsal("continues", delivered, (view,), tuple(backend.decisions), None,
                             as_position(command.source), DRIVER)
        except JournalDivergence as divergence:
            return Rehearsal("breaks", delivered, (), tuple(backend.decisions), str(divergence),
                             as_position(backend.last_source), DRIVER)
        except StepFailed as failure:
            return Rehearsal("completes", delivered, (), tuple(backend.decisions), None, as_position(backend.last_source),
                             DRIVER, note=f"the run fails on resume: {failure}")
        if outcome.status == "parked":
            return Rehearsal("waits", delivered, (), tuple(backend.decisions), None, as_position(backend.last_source), DRIVER)
        note = "" if outcome.status != "failed" or outcome.error is None else f"the run fails on resume: {outcome.error.message}"
        return Rehearsal("completes", delivered, (), tuple(backend.decisions), None, as_position(backend.last_source),
                         DRIVER, note=note)
    finally:
        journal.close()



FRESH_DRIVER = "replaytest journal worker (LiveBackend) on a scratch store, from an empty journal"


class FreshRunBackend(LiveBackend):
    """The worker's ``LiveBackend`` running a new run: nothing is recorded, so a patch check writes its marker
    and answers as the worker does; each step or model call is answered with the result the history recorded
    for the same command (its thunk never runs), a timer fires at once, a signal wait gets the payload the
    history recorded for it. Once every patch id of ``patch_ids`` has been answered, the next command stops
    the run before its thunk: the command the new run issues after the guard."""

    def __init__(self, journal: Journal, claim: Claim, history: History, patch_ids: Iterable[str]) -> None:
        super().__init__(journal, claim, _LEASE_S)
        self.history = history
        self.wanted = set(patch_ids)
        self.decisions: list[PatchDecision] = []
        self.commands: list[CommandView] = []
        self.last_source: Any = None
        self.unrecorded: list[str] = []  # commands the history recorded no result for (answered None)
        self.unpaid: list[str] = []  # signals no recorded run carried a payload for (delivered with none)

    def execute(self, command: Command, thunk: Thunk) -> Any:
        self.last_source = command.source
        if command.kind == "marker" and command.name == PATCH_MARKER:
            taken = bool(super().execute(command, thunk))
            self.decisions.append(PatchDecision(
                command.patch_id or "", taken, command.seq, as_position(command.source), command.deprecated,
            ))
            self.commands.append(CommandView("patch", "", position=command.seq,
                                             detail={"patch_id": command.patch_id or ""}))
            return taken
        where = as_position(command.source)
        source = {"source": f"{where.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{where.line}"} if where else {}
        self.commands.append(CommandView(command.kind, command.name, position=command.seq, detail=source))
        if self.wanted and self.wanted <= {decision.patch_id for decision in self.decisions}:
            raise _Stop(command)
        if command.kind == "timer":
            self._append(command, due_at=self.journal.clock())
            return None
        if command.kind == "signal":
            # The payload a recorded signal of that name carried, else none (as a resume rehearsal delivers it).
            found, payload = _signal_payload(self.history, command.name)
            if not found:
                self.unpaid.append(command.name)
            self._append(command, result_json=dumps(payload), result=payload)
            return payload
        found, value = _recorded_result(self.history, command.kind, command.name)
        if not found:
            self.unrecorded.append(f"{command.kind} {command.name!r}")
        return super().execute(command, lambda: value)


def _recorded_result(history: History, kind: str, name: str) -> tuple[bool, Any]:
    """The result the history recorded for the last command of this kind and name (a failed one's is None)."""
    for event in reversed(history.events):
        if event.kind == kind and event.name == name and event.error is None:
            return True, history.event_result(event) if event.result is not None or event.result_ref is not None else None
    return False, None


def fresh_run(history: History, definition: WorkflowDef, patch_ids: Iterable[str]) -> Rehearsal:
    """A new run of ``definition`` from the input of ``history``, by the journal's own worker backend on a scratch
    store (``FreshRunBackend``), up to the command after the patch checks of ``patch_ids``. Call it under the
    runtime guards (the workflow code runs); it never runs a step body."""
    journal = Journal(":memory:", clock=lambda: _LATER)
    try:
        run_id = f"fresh-{history.workflow.run_id or history.workflow.id}"
        journal.start(definition.fn, history.input, run_id=run_id, workflow_id=f"fresh-{history.workflow.id}")
        claim = journal.claim("fresh-run", _LEASE_S, run_id)
        assert claim is not None  # a fresh running run is always ready
        run = RunInfo(workflow_type=definition.name, workflow_id=f"fresh-{history.workflow.id}", run_id=run_id,
                      input=history.input, code_version=definition.version)
        backend = FreshRunBackend(journal, claim, history, patch_ids)
        delivered = "a new run with the recorded input; each step answered with the result this history recorded for it"
        notes: list[str] = []

        def made(outcome: str, error: str | None = None, note: str = "") -> Rehearsal:
            if backend.unrecorded:
                notes.append(f"no recorded result for {', '.join(backend.unrecorded)}: answered None")
            if backend.unpaid:
                notes.append(f"signal {', '.join(repr(name) for name in backend.unpaid)} delivered with no payload "
                             "(no recorded run of this type carried one)")
            return Rehearsal(outcome, delivered, tuple(backend.commands), tuple(backend.decisions), error,
                             as_position(backend.last_source), FRESH_DRIVER, "; ".join([*notes, *filter(None, [note])]))

        try:
            outcome = run_workflow(definition, run, backend)
        except _Stop:
            return made("continues")
        except JournalDivergence as divergence:
            return made("breaks", str(divergence))
        except StepFailed as failure:
            return made("completes", note=f"the new run fails: {failure}")
        if outcome.status == "parked":
            return made("waits")
        note = "" if outcome.status != "failed" or outcome.error is None else f"the new run fails: {outcome.error.message}"
        return made("completes", note=note)
    finally:
        journal.close()
