"""Replaying DBOS histories (neutral histories of engine ``dbos``) against the current ``@DBOS.workflow()``.

``DBOSReplayer`` loads a history written by ``replaytest import dbos``, finds the workflow DBOS registered
under the history's type, and calls it with the recorded input through DBOS's own wrappers, with
``dbos.internals.ReplaySystemDatabase`` standing in for the system database. DBOS numbers operations itself
(function ids, in call order); every operation it checks is matched here, by function id, against the
recorded one (``replaytest.replay.engine.Matcher``, positions being function ids):

* the same name → its recorded result is returned, or its recorded error raised (rebuilt from typed
  JSON with the current code's classes); the step body, transaction or effect never runs;
* another name at that id → ``command-mismatch`` naming both and the line that issued it;
* an id the history has no row for → the end of a running/parked history (the run would resume there:
  the replay stops and passes) only when no recorded operation remains at a later id, or the operation
  is the pending ``DBOS.recv``/``DBOS.getEvent`` whose own timeout ``DBOS.sleep`` is all that is recorded
  after it (DBOS writes that sleep at the next id before it waits, and the wait's own row only when it
  returns); otherwise ``extra-command`` (see ``_Operations._nothing_recorded``);
* ``DBOS.patch`` as DBOS's ``SystemDatabase.patch`` answers it (``_Operations.patched``): the marker at its
  id → True; another operation there → False; nothing there → True (DBOS writes the marker), and a
  recorded operation the new path then meets is ``command-mismatch`` naming DBOSUnexpectedStepError;
* recorded ids the code never reached → ``missing-command``; another final output or error →
  ``result-mismatch``.

Rehearsal (``ReplayOptions.rehearse``): an in-flight run that replays green goes on past its history
(``_Rehearsing``): a pending recv/getEvent returns None (its timeout), patch checks are answered as DBOS
answers them, and the first new operation is stopped before it runs; ``ReplayResult.rehearsal`` says what
DBOS does at the resume point.

Prompts: a step that used a prompt carries the version it used, recorded when it ran
(``dbos.prompts``' side table, ``Event.prompt``). The current code's call uses the prompts of the
``use_prompt`` blocks around it and those its body names; the one of the recorded name is compared by the
matcher, as on the journal (``prompt-drift`` by ``--prompts``: a parked run that already used a changed
prompt fails under ``fail``, reported where it resumes). Prompts no recorded step used are compared with
the start manifest by ``prompts-pending``. A run with no per-call record (recorded before them) falls
back to the manifest for the steps that used a prompt (``engine.check_manifest_prompts``), with a note;
a history without a manifest gets a note too. A pending DBOS run is called *parked* in these messages.

The run executes under the runtime guards, as journal replays do: a clock, random or uuid read in the
workflow is a ``nondeterministic-call`` hazard and the replay goes on; a socket, process, file write, or
the undecorated function of a step or transaction run directly (found through DBOS's marks on the
functions the workflow modules name) is stopped and reported at its line. DBOS is an optional dependency
(``replaytest[dbos]``), imported on first replay only.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replaytest.history import Event, History
from replaytest.history.model import PromptRef
from replaytest.model_clients import model_call_site
from replaytest.plugins.dbos import PROFILE
from replaytest.plugins.dbos.importer import PATCH_PREFIX, event_kind
from replaytest.prompts import (
    Prompt,
    also_changed,
    fetched_ahead_note,
    fetched_prompt_site,
    prompt_manifest,
    prompt_objects,
    prompts_in_use,
    renamed_prompts,
    short_version,
)
from replaytest.replay.adapter import NeutralReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import (
    ALREADY_SLEEPING_NOTE,
    FRESH_RUN_NOTE_PREFIX,
    Divergence,
    PatchDecision,
    Rehearsal,
    ReplayResult,
    SourcePosition,
    short_value,
    value_text,
)
from replaytest.replay.engine import (
    PATCH_MARKER,
    DivergenceFound,
    Issued,
    Matcher,
    ReachedEnd,
    Recorded,
    RecordedEvents,
    as_position,
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
from replaytest.replay.rehearsal import recorded_signal, remember_signal
from replaytest.replay.report import display_path

if TYPE_CHECKING:
    from replaytest.plugins.dbos.values import Rebuilder

ENGINE = "dbos"


@dataclass(frozen=True)
class DBOSReplayConfig:
    """The current code for ``replay_workflows = ["myapp.replay:CONFIG"]`` when importing the application
    would reach a database: ``modules`` are imported on first replay with ``SQLAlchemyDatasource.create``
    made offline (no connection, no migrations), so a module-level datasource costs nothing."""

    modules: Sequence[str] = ()


# A run whose steps used prompts but carry no per-call version (recorded before ``dbos.prompts`` kept them).
NO_CALL_VERSIONS_NOTE = "prompt versions per call not recorded for this run: compared with its start manifest"

# DBOS records no step arguments (operation_outputs has no input column).
NO_ARGUMENTS_NOTE = "DBOS stores no step arguments: step arguments were not compared"


class CannotReplay(BaseException):
    """A recorded value or error the current code cannot rebuild: the replay cannot go on faithfully.
    A ``BaseException`` so that the workflow's own ``except Exception`` cannot swallow it."""


class _RehearsalStop(BaseException):
    """The rehearsal reached the first new operation past the history: the run is stopped before it runs."""


# Operations a resumed run waits in (no new effect until something arrives or a timer fires).
_WAITS = ("DBOS.recv", "DBOS.getEvent", "DBOS.sleep", "DBOS.getResult")


class _Rehearsing:
    """A rehearsal in progress: DBOS's own wrappers drive the current code past the end of an in-flight
    history, the stand-in answering as DBOS's system database would for a run with that history (nothing
    recorded past it: ``DBOS.patch`` writes its marker and answers True), up to the first new operation,
    which is stopped before it runs."""

    def __init__(self, matcher: Matcher, on_resume: Any = None) -> None:
        self.matcher = matcher
        self.on_resume = on_resume
        self.resumed = False
        self.delivered = ""
        self.decisions_before = 0  # how many of the matcher's patch decisions came before the resume point
        self.commands: list[Issued] = []
        self.positions: list[int] = []
        self.outcome: str | None = None

    def resume(self, delivered: str = "") -> None:
        if self.resumed:
            return
        self.resumed = True
        self.delivered = delivered
        # A patch check at the resume point is answered (and kept on the result) before this is called.
        self.decisions_before = len(self.matcher.patch_decisions)
        if self.on_resume is not None:
            self.on_resume()

    def marker(self, command: Issued, function_id: int) -> None:
        self.commands.append(command)
        self.positions.append(function_id)

    def stop(self, command: Issued, function_id: int) -> None:
        self.commands.append(command)
        self.positions.append(function_id)
        self.outcome = "waits" if command.name in _WAITS else "continues"
        raise _RehearsalStop()

    def result(self, history: History, version: str, note: str = "") -> Rehearsal:
        outcome = self.outcome or "completes"
        commands = tuple(command.view(position, with_source=True) for command, position in zip(self.commands, self.positions))
        new = [command for command in self.commands if command.kind != "marker"]
        source = as_position(new[0].source if new else self.commands[0].source if self.commands else self.matcher.last_source)
        notes = [note] if note else []
        if "timeout fired" in self.delivered:
            notes.append("no run of this type recorded a message there: one would make the wait return it instead, and "
                         "code that branches on it may take another path")
        return Rehearsal(
            outcome=outcome,
            delivered=self.delivered,
            commands=commands,
            patch_decisions=tuple(self.matcher.patch_decisions),
            source=source,
            driver=f"dbos {version}: its workflow wrappers on replaytest's system-database stand-in (nothing recorded past the {history.status} history; no effect ran)",
            note="; ".join(notes),
        )


class _Operations:
    """Answers DBOS's checks for recorded operations from one history (``dbos.internals.OperationSource``)."""

    def __init__(
        self, history: History, matcher: Matcher, workflow_names: set[str], rebuilder: Rebuilder,
        step_prompts: dict[str, dict[str, str]] | None = None,
        step_objects: dict[str, dict[str, Any]] | None = None,
        chosen: dict[int, PromptRef] | None = None,
    ) -> None:
        self.history = history
        # In a rehearsal: the message a pending wait returns (typed JSON another run of the type received).
        self.delivered_message: Any = None
        self.matcher = matcher
        self.workflow_names = workflow_names
        self.rebuilder = rebuilder
        # {step name: {prompt: version} its body names}, and {prompt: the first recorded call that used it}.
        self.step_prompts = step_prompts or {}
        # {step name: {prompt: the Prompt object its body names}}: the current code's model and parameters.
        self.step_objects = step_objects or {}
        # {function id: the recorded prompt a report shows for that step} (of several, the one compared).
        self.chosen = chosen if chosen is not None else {}
        # The operation the run resumes at (where the replay of a parked history stopped), when known.
        self.resume_command: Issued | None = None
        self.called: dict[str, str] = {}
        # {prompt: the first recorded call that used it, per the current code} for calls whose event
        # carries no recorded prompt version (a run recorded before per-call versions).
        self.called_unrecorded: dict[str, str] = {}
        # (step name, the call in words, the recorded prompt) of prompts a recorded step used that the current
        # code of that step renders no Prompt of (fetched at run time, removed): said in a note, not compared.
        self.uncompared: list[tuple[str, str, PromptRef]] = []
        # The run recorded prompt versions per call (a step without a record then used no prompt).
        self.per_call = bool(recorded_prompt_versions(history))
        # Set when the replay goes on past the end of an in-flight history (``ReplayOptions.rehearse``).
        self.rehearsal: _Rehearsing | None = None
        # The last ``DBOS.patch`` answered True where nothing is recorded (DBOS writes its marker there):
        # the run is on the new path, and a recorded operation it meets next is DBOS's unexpected step.
        self.inserted: PatchDecision | None = None
        # The function id DBOS.patch_async / deprecate_patch_async last probed (``name_at``) and the line
        # that asked: they consume a marker there themselves, without asking ``patched``.
        self.probed: tuple[int, SourcePosition | None] | None = None
        # Notes on the sleep a pending run is sleeping on, when the code now asks for another duration.
        self.sleeping_notes: list[str] = []

    def _probed_marker(self, function_id: int) -> None:
        """An async patch check found its marker at the probed id and moved past it (DBOS reserves the
        position only when the marker is its own): the marker is consumed and the new path taken."""
        upcoming = self._next()
        if (
            self.probed is not None and upcoming is not None and upcoming.seq < function_id
            and upcoming.seq == self.probed[0] and upcoming.kind == "marker" and upcoming.patch_id is not None
        ):
            self.matcher.patched(upcoming.patch_id, self.probed[1])
        self.probed = None

    def _skipped(self, command: Issued, function_id: int, upcoming: Recorded) -> None:
        raise DivergenceFound(
            self.matcher.divergence(
                "command-mismatch",
                f"the code issued {command.kind} {command.name!r} at function id {function_id} but never "
                f"reached {upcoming.kind} {upcoming.name!r}, recorded at function id {upcoming.seq}",
                command,
                upcoming,
            )
        )

    def _unexpected_after_patch(self, command: Issued, function_id: int, upcoming: Recorded, patch: PatchDecision) -> None:
        """The code, on the path a ``DBOS.patch`` that found nothing recorded sent it to, issued an
        operation where the history records another: what DBOS's ``check_operation_execution`` refuses."""
        where = f" ({patch.source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{patch.source.line})" if patch.source else ""
        wait = ""
        if upcoming.name == "DBOS.sleep" and patch.position is not None and upcoming.seq == patch.position + 1:
            wait = (
                " (the recorded DBOS.sleep is the timeout of the wait the run is pending in, which DBOS records "
                "before the wait's own row), or move the new code past that wait"
            )
        raise DivergenceFound(
            self.matcher.divergence(
                "command-mismatch",
                f"the code issued {command.kind} {command.name!r} at function id {function_id} where the "
                f"{self.history.status} history recorded {upcoming.kind} {upcoming.name!r}: "
                f'DBOS.patch("{patch.patch_id}"){where} found nothing recorded at function id {patch.position}, so '
                f"DBOS records its marker there and answers True, and the run takes the new path; real DBOS "
                f"recovery would fail with DBOSUnexpectedStepError (function {upcoming.name} was recorded when "
                f"{command.name} was expected). Put the patch check where the run recorded an operation (before "
                f"one it has already run) so runs started before the change take the old path{wait}",
                command,
                upcoming,
                position=function_id,
            )
        )

    # -- matching --------------------------------------------------------------------------------

    def _command(self, function_id: int, function_name: str) -> Issued:
        kind = event_kind(function_name, function_name in self.workflow_names)
        if kind == "marker":
            return Issued(kind, PATCH_MARKER, patch_id=function_name[len(PATCH_PREFIX) :], source=_issuing_line())
        return Issued(kind, function_name, source=_issuing_line())

    def _current_prompts(self, function_name: str) -> dict[str, tuple[str, Any]]:
        """``{name: (version, params)}`` of the prompts the current code's call uses: the ``use_prompt``
        blocks around it (innermost last) and those its step body names."""
        from replaytest.plugins.dbos.prompts import prompt_objects_in_use
        from replaytest.prompts import prompt_objects_in_use as core_objects_in_use

        objects = {prompt.name: prompt for prompt in core_objects_in_use()}
        objects.update(prompt_objects_in_use())
        found: dict[str, tuple[str, Any]] = dict(
            (name, (version, objects[name].params if name in objects and objects[name].full_version == version else None))
            for name, version in prompts_in_use()
        )
        in_body = self.step_objects.get(function_name, {})
        for name, version in self.step_prompts.get(function_name, {}).items():
            prompt = in_body.get(name)
            found.setdefault(name, (version, prompt.params if prompt is not None and prompt.full_version == version else None))
        return found

    def _with_prompt(self, command: Issued, upcoming: Recorded, current: dict[str, tuple[str, Any]]) -> None:
        """Pair the recorded call's prompt with the current call's prompt of that name, on ``upcoming`` (the
        event the matcher compares next) and ``command``: of several recorded prompts, the first whose
        version changed (the matcher compares one prompt per call; every other changed one is named in
        the same message, ``Issued.prompt_also``), else the first the code still uses."""
        event = upcoming.payload
        recorded = _recorded_prompts(event) if isinstance(event, Event) else []
        shared = [ref for ref in recorded if ref.name in current]
        changed = [ref for ref in shared if current[ref.name][0] != ref.version]
        versions = {version for version, _ in current.values()}
        for ref in recorded:
            if ref.name not in current and ref.version not in versions:  # the same version renamed: no change
                self.uncompared.append((command.name, f"step {command.name!r} (function id {upcoming.seq})", ref))
        chosen: PromptRef | None = (changed or shared)[0] if shared else None
        upcoming.prompt_version = chosen.version if chosen is not None else None
        upcoming.prompt_params = chosen.params if chosen is not None else None
        upcoming.prompt_name = chosen.name if chosen is not None else None
        # A prompt the step renders now that did not exist when the run started (not a rename): the recorded
        # call could not have used it, and the run keeps that call's result (as LangGraph's ``_prompt_of``).
        manifest = self.history.prompt_manifest
        added = [name for name in current if self.per_call and manifest is not None and name not in manifest
                 and name not in {ref.name for ref in recorded} and current[name][0] not in manifest.values()]
        added_phrases = tuple(f"now also uses prompt {name} {short_version(current[name][0])}, which the recorded call "
                              "did not use" for name in added)
        if chosen is not None:
            self.chosen[upcoming.seq] = chosen  # the report's rows show the prompt compared, by name
            command.prompt_name = chosen.name
            command.prompt_version, command.prompt_params = current[chosen.name]
            command.prompt_also = tuple(_also_changed(ref, *current[ref.name]) for ref in changed[1:]) + added_phrases
        else:
            command.prompt_also = added_phrases
            if not recorded and current:
                for name in current:
                    self.called_unrecorded.setdefault(name, f"{command.kind} {command.name!r}")

    def _next(self) -> Recorded | None:
        matcher = self.matcher
        return matcher.events[matcher.index] if matcher.index < len(matcher.events) else None

    def _match(self, function_id: int, function_name: str) -> Event | None:
        """The recorded event at ``function_id`` (consumed), or raise; None only in a rehearsal, for the
        pending wait the run resumes at (answered by its timeout)."""
        command = self._command(function_id, function_name)
        # Steps only: DBOS's own operations (sleep, recv, send …) call no model.
        calls_model = command.kind == "step" and not function_name.startswith("DBOS.")
        current = self._current_prompts(function_name) if calls_model else {}
        self._probed_marker(function_id)
        upcoming = self._next()
        if upcoming is None or function_id < upcoming.seq:
            if current:  # the next prompt the run uses, for a kept drift reported at the resume point
                name, (version, params) = next(reversed(current.items()))
                command.prompt_name, command.prompt_version, command.prompt_params = name, version, params
            self._nothing_recorded(command, function_id)
            return None
        elif function_id > upcoming.seq:
            self._skipped(command, function_id, upcoming)
        elif self.inserted is not None and (upcoming.kind, upcoming.name) != (command.kind, command.name):
            self._unexpected_after_patch(command, function_id, upcoming, self.inserted)
        if (upcoming.kind, upcoming.name) == (command.kind, command.name):
            self._with_prompt(command, upcoming, current)
        recorded = self.matcher.issue(command)
        self.inserted = None  # the new path met what was recorded: a later mismatch is not the patch's
        for prompt in current:
            self.called.setdefault(prompt, f"{command.kind} {command.name!r}")
        event: Event = recorded.payload
        return event

    def _guard_advice_for_gap(self, function_id: int) -> str:
        """Where a version guard for an operation put into a gap of the recorded ids must go. A
        ``DBOS.patch`` at ``function_id`` finds nothing recorded there either, so DBOS answers it True
        (and records its marker): wrapping only the new operation still sends the run down the new path.
        The check answers False only where the run recorded another operation, so it must come before one
        the run has already run."""
        earlier = [event for event in self.matcher.events[: self.matcher.index] if event.seq < function_id]
        where = ""
        if earlier:
            last = earlier[-1]
            where = f" (function id {last.seq}, {last.kind} {last.name!r}, or earlier)"
        return (f'a `DBOS.patch("<change-id>")` check put right there finds nothing recorded at function id '
                f"{function_id} either, so DBOS answers it True and the run still takes the new path: put the "
                f"check before an operation the run has already recorded{where} and wrap from there through "
                f"the change (`if DBOS.patch(...): <new> else: <old>`), or move the new code past the wait, "
                f"so runs started before the change take the old path")

    def _nothing_recorded(self, command: Issued, function_id: int, later: list[Recorded] | None = None) -> None:
        """The history has no row at ``function_id``: where a running run resumes, else an extra command.

        A running run resumes here only if nothing is recorded past ``function_id``: DBOS recovery would
        run the operation for real, and the code's next operation would then meet a recorded one issued
        by other code (``DBOSUnexpectedStepError``). The one recorded row a resume point may precede is
        the timeout sleep of the wait that is pending there. The kind is ``extra-command``: the code
        issues an operation in a gap of the recorded ids, one the recorded run never issued. ``later``
        defaults to the recorded operations past ``function_id``."""
        if later is None:
            later = [event for event in self.matcher.events[self.matcher.index :] if event.seq > function_id]
        if self.matcher.resumable and (not later or _own_timeout(command, function_id, later)):
            if self.resume_command is None:
                self.resume_command = command
            self.matcher.resume_at(command)  # a changed prompt a recorded step used comes first
            self.matcher.last_source = command.source
            if self.rehearsal is None:
                raise ReachedEnd()
            if not self.rehearsal.resumed and later:
                # Parked in this wait: it returns what another run of the type received there, else what
                # DBOS answers when its timeout fires (recv/getEvent return None).
                found, message = recorded_signal(ENGINE, self.history.workflow.type, command.name)
                if found:
                    self.delivered_message = message
                    self.rehearsal.resume(f"{command.name} answered with what another run of "
                                          f"{self.history.workflow.type} received there")
                else:
                    self.rehearsal.resume(f"the {command.name} timeout fired ({command.name} returned None)")
                return
            self.rehearsal.resume()
            self.rehearsal.stop(command, function_id)
        if later:
            following = later[0]
            raise DivergenceFound(
                self.matcher.divergence(
                    "extra-command",
                    f"the code issued {command.kind} {command.name!r} at function id {function_id}, where the "
                    f"{self.history.status} history has no operation, before {following.kind} "
                    f"{following.name!r} recorded at function id {following.seq}: DBOS recovery would run "
                    f"{command.name!r} for real and then fail with DBOSUnexpectedStepError where the code's "
                    f"next operation meets the recorded {following.name!r}; "
                    + self._guard_advice_for_gap(function_id),
                    command,
                    following,
                    position=function_id,
                )
            )
        raise DivergenceFound(
            self.matcher.divergence(
                "extra-command",
                f"the code issued {command.kind} {command.name!r} at function id {function_id}, where the "
                f"{self.history.status} history has no operation",
                command,
                None,
                position=function_id,
            )
        )

    # -- OperationSource -------------------------------------------------------------------------

    def recorded(self, function_id: int, function_name: str) -> tuple[Any, BaseException | None, str | None]:
        event = self._match(function_id, function_name)
        if event is None:
            message, self.delivered_message = self.delivered_message, None
            if message is not None:
                from replaytest.plugins.dbos.values import RebuildError

                try:
                    return self.rebuilder.rebuild(message), None, None
                except RebuildError:
                    return None, None, None
            return None, None, None
        child = event.extra.get("child_workflow_id") if event.kind == "child-workflow" else None
        if event.error is not None:
            return None, self._exception(event), child
        return self._value(event), None, child

    def sleep(self, function_id: int, seconds: float) -> None:
        """``DBOS.sleep(seconds)``, matched like any operation. DBOS writes the sleep's row, its wake-up time, before
        it sleeps, and recovery sleeps until that time whatever the code now asks: a pending run whose last
        recorded operation is this sleep is sleeping on it and keeps the recorded duration. When the code now
        asks for another one, a note says so (``ALREADY_SLEEPING_NOTE``; ``impact`` names the runs)."""
        event = self._match(function_id, "DBOS.sleep")
        if event is None or not self.matcher.resumable or self._next() is not None:
            return
        recorded = recorded_sleep_duration(event)
        if recorded is None or abs(recorded - seconds) < SAME_SLEEP_S:
            return
        source = _issuing_line()
        where = f" at {display_path(source.path)}:{source.line}" if source is not None else ""
        self.sleeping_notes.append(
            f"DBOS.sleep{where} (function id {function_id}) now sleeps {seconds:g} s, recorded {round(recorded, 1):g} s: "
            f"{ALREADY_SLEEPING_NOTE}"
        )

    def skip(self, function_id: int, function_name: str) -> None:
        upcoming = self._next()
        if upcoming is not None and upcoming.seq == function_id and upcoming.name == function_name:
            self.matcher.issue(Issued(upcoming.kind, upcoming.name, source=_issuing_line()))

    def patched(self, function_id: int, patch_name: str, deprecated: bool) -> bool:
        """DBOS's own answer (``SystemDatabase.patch`` / ``deprecate_patch``) at ``function_id``.

        The patch's marker recorded there: True, consumed. Another operation recorded there: False,
        nothing consumed (the old path). Nothing recorded there: ``DBOS.patch`` records its marker and
        answers True, so the run takes the new path and the position is used (DBOS moves its function
        id on); ``deprecate_patch`` answers False and records nothing. A pending run whose history ends
        before the check resumes there on the new path: the True answer is kept and the replay stops
        (``ReachedEnd``). A finished history that ends before the check ran the old path to its end
        (DBOS never resumes it): False."""
        patch_id = patch_name[len(PATCH_PREFIX) :]
        source = _issuing_line()
        self._probed_marker(function_id)
        upcoming = self._next()
        if upcoming is not None and upcoming.seq < function_id:
            self._skipped(Issued("marker", PATCH_MARKER, patch_id=patch_id, source=source), function_id, upcoming)
        if upcoming is not None and upcoming.seq == function_id:
            if deprecated:
                return self.matcher.deprecate_patch(patch_id, source)
            return self.matcher.patched(patch_id, source)
        decision = PatchDecision(patch_id, False, function_id, as_position(source), deprecated)
        if deprecated or (upcoming is None and not self.matcher.resumable):
            self.matcher.patch_decisions.append(decision)
            return False
        decision = dataclasses.replace(decision, taken=True)
        self.matcher.patch_decisions.append(decision)
        if upcoming is None:
            # The end of a pending history: the run resumes at this check and takes the new path.
            if self.resume_command is None:
                self.resume_command = Issued("marker", PATCH_MARKER, patch_id=patch_id, source=source)
            self.matcher.resume_at(Issued("marker", PATCH_MARKER, patch_id=patch_id, source=source))
            self.matcher.last_source = source
            if self.rehearsal is None:
                raise ReachedEnd()
            self.rehearsal.resume()
            self.rehearsal.marker(Issued("marker", PATCH_MARKER, patch_id=patch_id, source=source), function_id)
            return True
        self.inserted = decision
        return True

    def name_at(self, function_id: int) -> str | None:
        self.probed = (function_id, _issuing_line())
        for event in self.history.events:
            if event.extra.get("function_id") == function_id:
                return f"{PATCH_PREFIX}{event.patch_id}" if event.kind == "marker" else event.name
        return None

    def child_result(self, child_workflow_id: str) -> tuple[Any, BaseException | None]:
        for event in self.history.events[self.matcher.index :]:
            if event.name == "DBOS.getResult" and event.extra.get("child_workflow_id") == child_workflow_id:
                if event.error is not None:
                    return None, self._exception(event)
                return self._value(event), None
        upcoming = self._next()
        # The wait's own function id is not known here: every operation still recorded comes after it.
        self._nothing_recorded(
            Issued("step", "DBOS.getResult", source=_issuing_line()),
            upcoming.seq if upcoming is not None else self.matcher.next_position(),
            later=list(self.matcher.events[self.matcher.index :]),
        )
        raise AssertionError("unreachable")

    def finished(self, output: Any, error: BaseException | None) -> None:
        pass

    # -- values ----------------------------------------------------------------------------------

    def _value(self, event: Event) -> Any:
        from replaytest.plugins.dbos.values import RebuildError

        try:
            return self.rebuilder.rebuild(self.history.event_result(event))
        except RebuildError as error:
            raise CannotReplay(f"function id {event.extra.get('function_id')} ({event.name}): recorded result: {error}") from None

    def _exception(self, event: Event) -> BaseException:
        where = f"function id {event.extra.get('function_id')} ({event.name})"
        return rebuild_exception(event.extra.get("exception"), where, self.rebuilder)


class _FreshRunStop(BaseException):
    """A fresh run reached the command after the patch checks it was driven to (or a wait nothing answers)."""


class _FreshOperations:
    """Answers DBOS's checks for a **new** run of the current code (``ReplayOptions.fresh_run``): nothing is
    recorded, so ``DBOS.patch`` writes its marker and answers True (``deprecate_patch`` False), as DBOS's
    ``SystemDatabase.patch`` does for a new run; each step, transaction, recv or getEvent is answered with the
    result the history recorded for the same operation name (its body never runs); once every wanted patch id
    has been answered, the next operation is recorded and stops the run before it runs."""

    def __init__(self, history: History, rebuilder: Rebuilder, workflow_names: set[str], patch_ids: Sequence[str]) -> None:
        self.history = history
        self.rebuilder = rebuilder
        self.workflow_names = workflow_names
        self.wanted = set(patch_ids)
        self.commands: list[Issued] = []
        self.positions: list[int] = []
        self.decisions: list[PatchDecision] = []
        self.unrecorded: list[str] = []
        self.waits_on = ""
        self.last_source: SourcePosition | None = None

    def _issue(self, function_id: int, function_name: str) -> Issued:
        kind = event_kind(function_name, function_name in self.workflow_names)
        command = Issued(kind, function_name, source=_issuing_line())
        self.commands.append(command)
        self.positions.append(function_id)
        self.last_source = command.source
        if self.wanted and self.wanted <= {decision.patch_id for decision in self.decisions}:
            raise _FreshRunStop()
        return command

    def _same_name(self, function_name: str) -> Event | None:
        events = [event for event in self.history.events if event.name == function_name]
        return next((event for event in reversed(events) if event.error is None), events[-1] if events else None)

    def recorded(self, function_id: int, function_name: str) -> tuple[Any, BaseException | None, str | None]:
        command = self._issue(function_id, function_name)
        event = self._same_name(function_name)
        if event is None:
            if function_name in ("DBOS.recv", "DBOS.getEvent"):
                self.waits_on = f"{function_name}, which no recorded operation of this run answered"
                raise _FreshRunStop()
            if function_name not in _WAITS and function_name != "DBOS.sleep":
                self.unrecorded.append(f"{command.kind} {function_name!r}")
            return None, None, None
        child = event.extra.get("child_workflow_id") if event.kind == "child-workflow" else None
        try:
            if event.error is not None:
                return None, rebuild_exception(event.extra.get("exception"), f"{function_name}", self.rebuilder), child
            return self.rebuilder.rebuild(self.history.event_result(event)), None, child
        except CannotReplay:
            raise
        except Exception as error:  # a recorded value the current code cannot rebuild
            raise CannotReplay(f"{function_name}: recorded result: {error}") from None

    def skip(self, function_id: int, function_name: str) -> None:
        pass  # a new run writes its wait's timeout sleep; nothing to consume

    def sleep(self, function_id: int, seconds: float) -> None:
        self.recorded(function_id, "DBOS.sleep")  # a new run's sleep: issued, and over at once

    def patched(self, function_id: int, patch_name: str, deprecated: bool) -> bool:
        patch_id = patch_name[len(PATCH_PREFIX) :]
        source = _issuing_line()
        self.last_source = source
        decision = PatchDecision(patch_id, not deprecated, function_id, as_position(source), deprecated)
        self.decisions.append(decision)
        if not deprecated:
            self.commands.append(Issued("marker", PATCH_MARKER, patch_id=patch_id, source=source))
            self.positions.append(function_id)
        return decision.taken

    def name_at(self, function_id: int) -> str | None:
        return None  # nothing is recorded for a new run

    def child_result(self, child_workflow_id: str) -> tuple[Any, BaseException | None]:
        waits = [event for event in self.history.events if event.name == "DBOS.getResult"]
        event = next((event for event in waits if event.extra.get("child_workflow_id") == child_workflow_id),
                     waits[-1] if waits else None)
        self._issue(-1, "DBOS.getResult")
        if event is None:
            self.waits_on = "a child workflow whose result no recorded operation of this run holds"
            raise _FreshRunStop()
        if event.error is not None:
            return None, rebuild_exception(event.extra.get("exception"), "DBOS.getResult", self.rebuilder)
        return self.rebuilder.rebuild(self.history.event_result(event)), None

    def finished(self, output: Any, error: BaseException | None) -> None:
        pass

    def rehearsal(self, outcome: str, version: str, error: str | None = None, note: str = "") -> Rehearsal:
        notes = [note] if note else []
        if self.unrecorded:
            notes.append(f"no recorded result for {', '.join(self.unrecorded)}: answered None")
        commands = tuple(command.view(position, with_source=True) for command, position in zip(self.commands, self.positions))
        new = [command for command in self.commands if command.kind != "marker"]
        return Rehearsal(
            outcome=outcome,
            delivered="a new run with the recorded input; each operation answered with the result this history "
                      "recorded for the same operation name",
            commands=commands,
            patch_decisions=tuple(self.decisions),
            error=error,
            source=as_position(new[-1].source if new else self.last_source),
            driver=f"dbos {version}: its workflow wrappers from function id 0 on replaytest's system-database stand-in "
                   "(a new run; no effect ran)",
            note="; ".join(notes),
        )


def _fresh_run(history: History, function: Any, workflows: WorkflowSet, rebuilder: Rebuilder,
               patch_ids: Sequence[str]) -> Rehearsal:
    """A new run of ``function`` with the input of ``history``, driven by DBOS's own wrappers on the stand-in
    (``_FreshOperations``), under the runtime guards."""
    from replaytest.plugins.dbos import internals

    version = internals.installed_dbos()
    target, args, kwargs = _recorded_call(history, rebuilder, function)
    original = getattr(function, "__wrapped__", function)
    modules = orchestration_modules([original, *[o for o in workflows.objects if not isinstance(o, DBOSReplayConfig)]])
    bodies = plain_functions(internals.step_bodies([module.__dict__ for module in modules]))
    operations = _FreshOperations(history, rebuilder, set(internals.registered_workflow_names()), patch_ids)
    with guarded(modules, lambda: 0, bodies) as guard:
        with internals.replaying(history.workflow.id, operations) as call:
            try:
                call(function, *target, *args, **kwargs)
            except _FreshRunStop:
                if operations.waits_on:
                    return operations.rehearsal("waits", version, note=f"the new run waits on {operations.waits_on}")
                return operations.rehearsal("continues", version)
            except NondeterministicCall:
                stopped = guard.stopped
                where = f" at {stopped.source.path}:{stopped.source.line}" if stopped is not None and stopped.source else ""
                return operations.rehearsal("breaks", version, f"the new run made an effect the runtime guards stopped{where}")
            except CannotReplay:
                raise
            except Exception as error:  # the workflow's own failure
                return operations.rehearsal("completes", version, note=f"the new run fails: {type(error).__name__}: {error}")
    return operations.rehearsal("completes", version)



# DBOS records when a sleep started (milliseconds, before it reads its row back) and when it ends: durations
# closer than this are the same sleep.
SAME_SLEEP_S = 0.5


def recorded_sleep_duration(event: Event) -> float | None:
    """How long a recorded ``DBOS.sleep`` was asked to sleep: its wake-up time less its start (the importer's
    ``wake_at`` and ``started_at``, epoch seconds); None when DBOS recorded no start (before 3.x)."""
    wake_at, started_at = event.extra.get("wake_at"), event.extra.get("started_at")
    if isinstance(wake_at, (int, float)) and isinstance(started_at, (int, float)):
        return float(wake_at) - float(started_at)
    return None


def _remember_waits(history: History) -> None:
    """Offer what this run's recv/getEvent calls returned to the rehearsals of its batch (``replay.rehearsal``):
    a parked run of the same workflow type is resumed with it (typed JSON, rebuilt only when delivered)."""
    for event in history.events:
        if event.name in _TIMED_WAITS and event.error is None and (event.result is not None or event.result_ref is not None):
            remember_signal(ENGINE, history.workflow.type, event.name, history.event_result(event))


# Waits whose timeout DBOS records as a ``DBOS.sleep`` at the next function id before waiting; their
# own row is written only when they return (``SystemDatabase.recv_setup`` / ``get_event_setup``).
_TIMED_WAITS = ("DBOS.recv", "DBOS.getEvent")


def _own_timeout(command: Issued, function_id: int, later: list[Recorded]) -> bool:
    """``later`` is only the timeout sleep of the wait ``command`` issues at ``function_id``: the run waits there."""
    return (
        command.name in _TIMED_WAITS
        and len(later) == 1
        and later[0].name == "DBOS.sleep"
        and later[0].seq == function_id + 1
    )


def rebuild_exception(typed: Any, where: str, rebuilder: Rebuilder) -> BaseException:
    """The recorded exception as the current code's class (DBOS's ``PortableWorkflowError`` for portable JSON)."""
    from replaytest.plugins.dbos.values import RebuildError

    if isinstance(typed, dict) and typed.get("$type") == "portable-error":
        from dbos import PortableWorkflowError

        return PortableWorkflowError(str(typed.get("message") or ""), str(typed.get("name") or "Error"), typed.get("code"), typed.get("data"))
    try:
        error = rebuilder.error(typed)
    except RebuildError as problem:
        raise CannotReplay(f"{where}: recorded error: {problem}") from None
    if not isinstance(error, BaseException):
        raise CannotReplay(f"{where}: the recorded error is not an exception ({type(error).__name__})")
    return error


def _issuing_line() -> SourcePosition | None:
    """The innermost line of project code on the stack (or, for an async workflow checked from another
    thread, in the chain of awaits it is suspended in): the workflow line that issued the operation."""
    from replaytest.plugins.dbos.internals import suspended_frames

    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        if is_project_file(frame.f_code.co_filename):
            return _position(frame)
        frame = frame.f_back
    for suspended in reversed(suspended_frames()):
        if is_project_file(suspended.f_code.co_filename):
            return _position(suspended)
    return None


def _position(frame: types.FrameType) -> SourcePosition:
    return SourcePosition(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


@dataclass(frozen=True)
class _Prompts:
    """The current code's prompt manifest and ``{prompt: the recorded call that used it}`` of one replay."""

    current: dict[str, str]
    called: dict[str, str]
    resume_position: int | None = None  # the function id where the replay stopped (a pending prompt's position)
    unrecorded: dict[str, str] = dataclasses.field(default_factory=dict)  # called, no per-call version recorded
    reached: dict[str, str] = dataclasses.field(default_factory=dict)  # {prompt: version} recorded per call
    # {prompt: version the run used} of prompts a recorded step used that a step not recorded yet uses too.
    reused: dict[str, str] = dataclasses.field(default_factory=dict)
    # {prompt: (parameters the run used, the current code's)} where known, for "temperature 0.2 → 0.9".
    params: dict[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    where: str = ""  # the resume point, in words, for the pending check's message
    # (step, where its body calls a model) of recorded steps that call a model and recorded no prompt.
    unprompted: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    # (step, where its body calls Prompt.fetched) of the steps an unfinished run has not recorded yet.
    fetched_ahead: list[tuple[str, tuple[str, int]]] = dataclasses.field(default_factory=list)
    # (step name, the call in words, its recorded prompt) that the current code could not compare
    # (``_Operations.uncompared``, filled while the replay runs), and {step name: its body}.
    uncompared: list[tuple[str, str, PromptRef]] = dataclasses.field(default_factory=list)
    step_bodies: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Prompts added since the run started that only steps it already recorded render (not pending).
    done_only: set[str] = dataclasses.field(default_factory=set)


class DBOSReplayer(NeutralReplayer):
    """The ``HistoryReplayer`` for neutral histories of engine ``dbos``."""

    engine = ENGINE

    def __init__(self) -> None:
        self._imported: set[str] = set()

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> ReplayResult:
        """Replay an already loaded history (``path`` is only named in the result)."""
        result = self.new_result(history, path)
        if result.status == "error":
            return result
        path = result.history_path
        from replaytest.plugins.dbos import internals

        problem = internals.check_version()
        if problem is not None:
            result.status, result.error = "error", problem
            return result
        try:
            self._import_configured(workflows)
        except Exception as error:
            result.status, result.error = "error", f"importing the DBOS application failed: {type(error).__name__}: {error}"
            return result
        function = internals.registered_workflow(history.workflow.type)
        if function is None:
            known = internals.registered_workflow_names()
            result.status = "stale"
            result.error = (
                f"no current DBOS workflow named {history.workflow.type!r}; "
                f"registered: {', '.join(known) or 'none (configure replay_workflows)'}"
            )
            return result
        from replaytest.plugins.dbos.values import Rebuilder

        rebuilder = Rebuilder()
        if options.fresh_start:
            try:
                result.fresh_run = _fresh_run(history, function, workflows, rebuilder, options.fresh_run)
            except (CannotReplay, internals.UnsupportedOperation) as error:
                result.notes.append(f"{FRESH_RUN_NOTE_PREFIX}: {error}")
            return result
        try:
            divergence, prompts = self._run(history, function, workflows, options, result, rebuilder)
        except CannotReplay as error:
            result.status, result.error = "error", f"cannot replay: {error}"
            return result
        except internals.UnsupportedOperation as error:
            result.status, result.error = "error", f"cannot replay: {error}"
            return result
        if history.status == "running":
            result.run_status = "parked"  # DBOS's words: a pending run waits to be recovered (see _in_words)
        if divergence is not None:
            result.status = "diverged"
            if divergence.position is not None and "function id" not in divergence.message and divergence.kind != "result-mismatch":
                divergence = dataclasses.replace(divergence, message=_with_function_id(divergence))
            result.divergence = divergence
        # Checks this engine's histories cannot support, said once in the summary instead of passing silently.
        result.notes.append(NO_ARGUMENTS_NOTE)
        _check_prompts(result, history, prompts, options)
        not_rebuilt = rebuilder.note()
        if not_rebuilt is not None:
            result.notes.append(not_rebuilt)
        return result

    def _import_configured(self, workflows: WorkflowSet) -> None:
        import importlib

        from replaytest.plugins.dbos.internals import offline_datasources

        for obj in workflows.objects:
            if isinstance(obj, DBOSReplayConfig):
                for module in obj.modules:
                    if module not in self._imported:
                        with offline_datasources():
                            importlib.import_module(module)
                        self._imported.add(module)

    def _run(
        self, history: History, function: Any, workflows: WorkflowSet, options: ReplayOptions, result: ReplayResult,
        rebuilder: Rebuilder,
    ) -> tuple[Divergence | None, _Prompts]:
        from replaytest.plugins.dbos import internals

        events = RecordedEvents(history.events, _recorded)
        original = getattr(function, "__wrapped__", function)
        current = prompt_manifest(original)
        reached = recorded_prompt_versions(history)
        modules = orchestration_modules([original, *[o for o in workflows.objects if not isinstance(o, DBOSReplayConfig)]])
        steps = internals.step_bodies([module.__dict__ for module in modules])
        step_prompts: dict[str, dict[str, str]] = {body.dbos_function_name: prompt_manifest(body) for body in steps}
        step_objects: dict[str, dict[str, Any]] = {body.dbos_function_name: prompt_objects(body) for body in steps}
        # The prompts the run still uses: those not reached yet, and those of the current code's steps (this
        # workflow's) it has not recorded yet, even when an earlier step used them already.
        recorded_names = {event.name for event in history.events}
        loaded = _names_loaded(original)
        pending_steps = [body for body in steps if body.dbos_function_name not in recorded_names and body.__name__ in loaded]
        ahead = {name: version for name, version in current.items() if name not in reached}
        current = _with_sites(current, pending_steps)
        for body in pending_steps:
            for name, version in step_prompts[body.dbos_function_name].items():
                ahead.setdefault(name, version)
        # A prompt added since the run started that only steps the run already recorded render (not a step it
        # has not run, not the workflow's own code): the run will not use it, and the recorded call that now
        # renders it says so (``_with_prompt``), so it is no pending prompt.
        done_only = _added_in_recorded_steps(history, reached, step_prompts, pending_steps, original)
        ahead = {name: version for name, version in ahead.items() if name not in done_only}
        reused = {name: reached[name] for name in ahead if name in reached}
        params = _prompt_params(history, reached, {**prompt_objects(original), **{
            name: prompt for body in pending_steps for name, prompt in step_objects[body.dbos_function_name].items()}})
        chosen: dict[int, PromptRef] = {}
        events = RecordedEvents(history.events, lambda event: _recorded(event, chosen))
        # DBOS's words: a pending run is resumed from its checkpoints (parked), whatever ran it before.
        matcher = Matcher(events, _in_words(history.status), options, prompts_ahead=ahead)
        matcher.resume_hint = lambda command: _resume_hint(command, ahead, reused)
        operations = _Operations(
            history, matcher, set(internals.registered_workflow_names()), rebuilder, step_prompts, step_objects, chosen
        )
        prompts = _Prompts(
            current, operations.called, unrecorded=operations.called_unrecorded, reached=reached, reused=reused, params=params,
            unprompted=_unprompted_model_steps(history, steps, options.model_calls) if reached else [],
            fetched_ahead=[(f"step {body.dbos_function_name!r}", site) for body in pending_steps
                           if (site := fetched_prompt_site(body)) is not None],
            uncompared=operations.uncompared, step_bodies={body.dbos_function_name: body for body in steps},
            done_only=done_only,
        )
        target, args, kwargs = _recorded_call(history, rebuilder, function)
        divergence: Divergence | None = None
        output: Any = None
        raised: BaseException | None = None
        finished = False
        bodies = plain_functions(steps)
        trips_before: list[int] = []  # guard trips before a rehearsal went past the resume point
        with guarded(modules, matcher.next_position, bodies) as guard:
            if options.rehearse:
                _remember_waits(history)
            if options.rehearse and matcher.resumable:
                operations.rehearsal = _Rehearsing(matcher, lambda: trips_before.append(len(guard.trips)))
            with internals.replaying(history.workflow.id, operations) as call:
                try:
                    output = call(function, *target, *args, **kwargs)
                    finished = True
                except DivergenceFound as found:
                    divergence = found.divergence
                except (NondeterministicCall, ReachedEnd, _RehearsalStop):
                    pass  # a stopped effect is reported below; a running history ends where the run resumes
                except Exception as error:  # the workflow's own failure (recorded or new)
                    raised = error
                    finished = True
        if divergence is None:
            # A changed prompt at a recorded step comes before whatever ended the code (a stopped effect).
            divergence = matcher.unreported_drift()
        rehearsal = operations.rehearsal if operations.rehearsal is not None and operations.rehearsal.resumed else None
        trips = guard.trips if rehearsal is None else guard.trips[: trips_before[0]]
        stopped = next((trip for trip in trips if trip.stopped), None)
        result.warnings = matcher.warnings
        result.notes.extend(operations.sleeping_notes)
        result.patch_decisions = matcher.patch_decisions if rehearsal is None else matcher.patch_decisions[: rehearsal.decisions_before]
        if divergence is None and finished and stopped is None and rehearsal is None:
            divergence = _check_end(matcher, history, output, raised)
        prompts = dataclasses.replace(
            prompts, resume_position=matcher.next_position(), where=_resume_point(history, operations.resume_command)
        )
        divergence = settle_hazards(result, divergence, trips, lambda trip: _hazard(matcher, trip), options.hazards)
        if rehearsal is not None and divergence is None:
            if rehearsal.outcome is None and any(trip.stopped for trip in guard.trips[len(trips) :]):
                rehearsal.outcome = "continues"  # the guards stopped its first new effect
            result.rehearsal = rehearsal.result(history, internals.installed_dbos(), _past_resume(guard.trips[len(trips) :], raised))
        return divergence, prompts


def _in_words(status: str) -> str:
    return "parked" if status in ("running", "parked") else status


def recorded_prompt_versions(history: History) -> dict[str, str]:
    """``{prompt: version}`` the run's steps recorded when they ran (the last step's, per name)."""
    return {ref.name: ref.version for event in history.events for ref in _recorded_prompts(event)}


def _unprompted_model_steps(history: History, steps: Sequence[Any], extra_calls: Sequence[str]) -> list[tuple[str, Any]]:
    """The recorded steps whose body calls a model client but that recorded no prompt version (asked only
    of runs that recorded versions per call: for older ones every step lacks one)."""
    bodies = {body.dbos_function_name: body for body in steps}
    found: list[tuple[str, Any]] = []
    for event in history.events:
        body = bodies.get(event.name)
        if body is None or _recorded_prompts(event):
            continue
        site = model_call_site(body, extra_calls=extra_calls)
        if site is not None:
            found.append((f"step {event.name!r} (function id {event.seq})", site))
    return found


def _check_prompts(result: ReplayResult, history: History, prompts: _Prompts, options: ReplayOptions) -> None:
    """The prompt checks past the recorded steps (those are the matcher's): prompts no recorded step used
    against the start manifest, and a run with no per-call versions against its manifest only."""
    note_unrecorded_model_calls(result, prompts.unprompted)
    renamed = set(renamed_prompts(history.prompt_manifest or {}, prompts.current).values())
    for step, what, ref in prompts.uncompared:
        if ref.name in renamed:
            continue  # the rename note says it
        body = prompts.step_bodies.get(step)
        note = uncompared_prompt_note(what, "step", ref.name, ref.version, fetched_prompt_site(body) if body else None)
        if note not in result.notes:
            result.notes.append(note)
    status = _in_words(history.status)
    if status == "parked":
        result.notes.extend(fetched_ahead_note(step, site, status) for step, site in prompts.fetched_ahead)
    if not prompts.reached:
        # Recorded before per-call versions (or with no step that used a prompt yet): the start manifest.
        if prompts.unrecorded and history.prompt_manifest is not None:
            result.notes.append(NO_CALL_VERSIONS_NOTE)
        before = len(result.warnings)
        # A pending drift is reported at the resume point, in words (no event number: none is recorded there).
        check_manifest_prompts(
            result, "DBOS", status, history.prompt_manifest, prompts.current, prompts.called, options, None,
            where=prompts.where,
        )
        # DBOS does record per call now: what is missing is this run's record.
        result.warnings[before:] = [
            dataclasses.replace(warning, message=warning.message.replace(
                "DBOS records no prompt version per call", "this run recorded no prompt version per call"))
            for warning in result.warnings[before:]
        ]
        return
    if prompts.unrecorded:
        result.notes.append(NO_CALL_VERSIONS_NOTE)
    reached: dict[str, str | None] = {name: None for name in prompts.unrecorded}
    reached.update({name: None for name in prompts.done_only})
    reached.update(prompts.reached)
    before = len(result.prompt_changes)
    check_pending_prompts(
        result, status, history.prompt_manifest, prompts.current, reached, options, None,  # type: ignore[arg-type]
        reused=prompts.reused, params=prompts.params, where=prompts.where,
    )
    # Not a change for this run: it did not call them and will not (the recorded call's drift names them).
    result.prompt_changes[before:] = [c for c in result.prompt_changes[before:] if c.name not in prompts.done_only]


def _past_resume(trips: list[NondeterministicCall], raised: BaseException | None) -> str:
    """What the rehearsal met past the resume point besides operations: guard trips, the workflow's failure."""
    notes = [f"{trip.call} at {trip.source.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{trip.source.line}"
             if trip.source is not None else trip.call for trip in trips]
    text = f"past the resume point the runtime guards saw: {', '.join(notes)}" if notes else ""
    if raised is not None:
        text += ("; " if text else "") + f"the workflow raised {type(raised).__name__}: {raised}"
    return text


def _recorded(event: Event, chosen: dict[int, PromptRef] | None = None) -> Recorded:
    """``chosen``: the prompt compared at a step that used several (``_Operations._with_prompt``), shown
    in reports instead of the first recorded."""
    function_id = event.extra.get("function_id")
    seq = function_id if isinstance(function_id, int) else event.seq
    prompt = (chosen or {}).get(seq, event.prompt)
    return Recorded(
        seq=seq,
        kind=event.kind,
        name=event.name,
        patch_id=event.patch_id,
        payload=event,
        prompt_version=prompt.version if prompt is not None else None,
        prompt_params=prompt.params if prompt is not None else None,
        prompt_name=prompt.name if prompt is not None else None,
    )


def _also_changed(ref: PromptRef, version: str, params: Any) -> str:
    """Another changed prompt of a step call, as the drift message names it."""
    return also_changed(ref.name, ref.version, version, ref.params, params)


def _added_in_recorded_steps(
    history: History, reached: dict[str, str], step_prompts: dict[str, dict[str, str]], pending_steps: list[Any],
    workflow: Any,
) -> set[str]:
    """The prompts added since the run started (not in its manifest, at no version the manifest holds: not a
    rename) that only the current bodies of steps the run already recorded render: no step it has not
    recorded, no recorded call, and not the workflow's own code (a name it loads, resolved in its globals or
    as an attribute of a module it loads, bound to a ``Prompt`` of that name). Empty for a run without
    per-call records or a manifest."""
    manifest = history.prompt_manifest
    if manifest is None or not reached:
        return set()
    recorded_steps = {event.name for event in history.events if event.kind == "step"}
    pending = {name for body in pending_steps for name in step_prompts.get(body.dbos_function_name, {})}
    candidates = {
        name for step, prompts in step_prompts.items() if step in recorded_steps
        for name, version in prompts.items()
        if name not in manifest and version not in manifest.values() and name not in pending and name not in reached
    }
    if not candidates:
        return set()
    namespace = getattr(workflow, "__globals__", {})
    loaded = _names_loaded(workflow)
    in_workflow: set[str] = set()
    for name in loaded:
        values = [namespace.get(name)] + [getattr(module, name, None) for module in namespace.values()
                                          if isinstance(module, types.ModuleType)]
        in_workflow.update(str(value.name) for value in values if isinstance(value, Prompt))
    return candidates - in_workflow


def _names_loaded(function: Any) -> set[str]:
    """The names the workflow's code loads (globals, attributes), through the plain functions of the
    application it calls (its own module's globals), transitively: a step whose name is not among them is
    not this workflow's."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = [function]
    while stack:
        current = stack.pop()
        current = getattr(current, "__func__", current)
        code = getattr(current, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        namespace = getattr(current, "__globals__", {})
        codes = [code]
        while codes:
            one = codes.pop()
            names.update(one.co_names)
            names.update(one.co_freevars)
            codes.extend(const for const in one.co_consts if isinstance(const, types.CodeType))
            for name in one.co_names:
                value = namespace.get(name)
                if isinstance(value, types.FunctionType) and is_project_file(value.__code__.co_filename):
                    stack.append(getattr(value, "__wrapped__", value))
                elif isinstance(value, type) and is_project_file(getattr(sys.modules.get(value.__module__), "__file__", "") or ""):
                    stack.extend(member for member in vars(value).values() if isinstance(member, (types.FunctionType, staticmethod, classmethod)))
    return names


def _with_sites(current: Any, pending_steps: list[Any]) -> Any:
    """The current manifest, with each prompt a pending step uses placed at that step's line (the manifest
    walk places it where the workflow first loads it, maybe in a step the run already ran)."""
    if not pending_steps or not hasattr(current, "sites"):
        return current
    placed = type(current)(current)
    placed.sites = dict(current.sites)
    for body in reversed(pending_steps):
        found = prompt_manifest(body)
        placed.sites.update({name: site for name, site in found.sites.items() if name in placed})
    return placed


def _prompt_params(history: History, reached: dict[str, str], objects: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{prompt: (the parameters the run used, the current code's)}`` for the prompts whose recorded
    step carried its parameters (the last call per name, as ``recorded_prompt_versions``); for the other
    current prompts ``(None, the current code's)``: the start manifest keeps only their digest."""
    used: dict[str, Any] = {}
    for event in history.events:
        for ref in _recorded_prompts(event):
            used[ref.name] = ref.params
    params: dict[str, tuple[Any, Any]] = {}
    for name, old in used.items():
        prompt = objects.get(name)
        if old is not None and prompt is not None:
            params[name] = (old, prompt.params or {})
    for name, prompt in objects.items():
        if name not in params and getattr(prompt, "params", None):
            params[name] = (None, prompt.params)
    return params


_WAITING = {
    "DBOS.recv": "waiting for a message",
    "DBOS.getEvent": "waiting for another workflow's event",
    "DBOS.sleep": "a durable sleep",
    "DBOS.getResult": "waiting for a child workflow",
}


def _resume_words(command: Issued, separator: str = " (") -> str:
    """``DBOS.recv (waiting for a message)`` (``separator=", "``: ``DBOS.recv, waiting for a message``)."""
    if command.name in _WAITING:
        return f"{command.name}{separator}{_WAITING[command.name]}" + (")" if separator == " (" else "")
    if command.kind == "marker":
        return f'DBOS.patch("{command.patch_id}")'
    return f"{command.kind} {command.name!r}"


def _resume_point(history: History, command: Issued | None) -> str:
    """`` (it resumes at DBOS.recv (waiting for a message); its history ends at function id 3)``: where
    a parked run's pending prompt drift applies, without an event number the history does not have."""
    last = history.events[-1].extra.get("function_id") if history.events else None
    ends = f"its history ends at function id {last}" if isinstance(last, int) else "nothing is recorded yet"
    if command is None:
        return f" (at the resume point; {ends})"
    return f" (it resumes at {_resume_words(command, ', ')}; {ends})"


def _recorded_call(history: History, rebuilder: Rebuilder, function: Any) -> tuple[Any, Any, Any]:
    """The workflow function bound as the run recorded it (its class or configured instance) and the arguments
    it was started with, rebuilt from the history's input."""
    from replaytest.plugins.dbos import internals
    from replaytest.plugins.dbos.values import RebuildError

    document = history.input if isinstance(history.input, dict) else {}
    try:
        args = rebuilder.rebuild(document.get("args", []))
        kwargs = rebuilder.rebuild(document.get("kwargs", {}))
    except RebuildError as error:
        raise CannotReplay(f"recorded input: {error}") from None
    return internals.bound_target(function, document.get("class_name"), document.get("config_name")), args, kwargs


def _resume_hint(command: Issued | None, ahead: dict[str, str], reused: dict[str, str]) -> str:
    """What a kept drift says of the resume point: where the run resumes and the prompts it uses after it."""
    text = f" and resumes at {_resume_words(command)}" if command is not None else ""
    if not ahead:
        return text + "; it uses no prompt after that"
    listed = [
        f"{name} {short_version(version)}" + (" (used by a recorded step too)" if name in reused else "")
        for name, version in sorted(ahead.items())
    ]
    return text + "; the prompts it uses after that: " + ", ".join(listed)


def _with_function_id(divergence: Divergence) -> str:
    """The message with the function id after the command it names (``step 'triage' at function id 1
    now uses …``), else at its end."""
    message = divergence.message
    issued = divergence.issued
    if issued is not None and issued.name:
        lead = f"{issued.kind} {issued.name!r}"
        if message.startswith(lead + " "):
            return f"{lead} at function id {divergence.position}{message[len(lead):]}"
    return f"{message} (function id {divergence.position})"


def _recorded_prompts(event: Event) -> list[PromptRef]:
    """The prompts a recorded step used, as it recorded them when it ran (``Event.prompt``; all of them
    in the event's ``prompts`` when it used several)."""
    several = event.extra.get("prompts")
    if isinstance(several, list):
        refs = [
            PromptRef(str(item["name"]), str(item["version"]), item.get("params") if isinstance(item.get("params"), dict) else None)
            for item in several
            if isinstance(item, dict) and item.get("name") and item.get("version")
        ]
        if refs:
            return refs
    return [event.prompt] if event.prompt is not None else []


# Why the fix for a value read needs a version guard, and which one (see ``hazard_message``).
_VERSION_GUARD = 'put the new step under `if DBOS.patch("<change-id>"):` so runs started before it take the old path'


def _hazard(matcher: Matcher, trip: NondeterministicCall) -> Divergence:
    if trip.kind == "step-body":
        instead = "its @DBOS.step() / @DBOS.transaction() wrapper"
    else:
        instead = PROFILE.replacements.get(trip.category, "a @DBOS.step()")
    return matcher.divergence(
        "nondeterministic-call", hazard_message(trip, instead, _VERSION_GUARD), source=trip.source, position=trip.position
    )


def _check_end(matcher: Matcher, history: History, output: Any, raised: BaseException | None) -> Divergence | None:
    """After the workflow returned or raised: every recorded operation reached, and the same ending."""
    try:
        matcher.finish()
    except DivergenceFound as found:
        return found.divergence
    where = matcher.last_source
    if history.status == "completed":
        if raised is not None:
            return matcher.divergence(
                "result-mismatch",
                f"the workflow now fails with {type(raised).__name__}: {raised}; the history completed",
                source=where,
            )
        expected = _expected(history.result)
        if not _same(expected, output):
            return matcher.divergence(
                "result-mismatch",
                f"the workflow now returns another output: {_difference(expected, output)}",
                source=where,
                position=None,
            )
    if history.status == "failed":
        recorded = f"{history.error.type}: {history.error.message}" if history.error else "an error"
        if raised is None:
            return matcher.divergence("result-mismatch", f"the workflow now returns {short_value(output)} where the history failed with {recorded}", source=where)
        if history.error is not None and (type(raised).__name__, str(raised)) != (history.error.type, history.error.message):
            return matcher.divergence(
                "result-mismatch",
                f"the workflow now fails with {type(raised).__name__}: {raised}; the history failed with {recorded}",
                source=where,
            )
    return None


def _expected(typed: Any) -> Any:
    """The recorded output, rebuilt as the code's values are (by its own ``Rebuilder``: the history's
    note counts only what reached the code)."""
    from replaytest.plugins.dbos.values import RebuildError, rebuild

    try:
        return rebuild(typed)
    except RebuildError as error:
        raise CannotReplay(f"recorded output: {error}") from None


def _same(expected: Any, actual: Any) -> bool:
    try:
        if expected == actual:
            return True
    except Exception:  # an __eq__ that raises compares as different
        return False
    return value_text(expected) == value_text(actual)  # portable JSON: tuples were recorded as lists


_ABSENT = object()


def _difference(expected: Any, actual: Any, path: str = "$") -> str:
    """Where two outputs first differ, as ``at $.key the history recorded X, the code returns Y``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            left, right = expected.get(key, _ABSENT), actual.get(key, _ABSENT)
            if left is _ABSENT or right is _ABSENT or not _same(left, right):
                return _difference(left, right, f"{path}.{key}" if isinstance(key, str) and key.isidentifier() else f"{path}[{key!r}]")
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)) and len(expected) == len(actual):
        for index, (left, right) in enumerate(zip(expected, actual)):
            if not _same(left, right):
                return _difference(left, right, f"{path}[{index}]")
    recorded = "nothing" if expected is _ABSENT else short_value(expected)
    now = "nothing" if actual is _ABSENT else short_value(actual)
    return f"at {path} the history recorded {recorded}, the code returns {now}"


