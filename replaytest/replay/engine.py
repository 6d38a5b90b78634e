"""The engine-neutral matcher: commands issued by the current code against a history's recorded events.

A replayer (the journal's, a DBOS one, …) runs the orchestration code and hands every command it issues
to ``Matcher.issue``, which compares it with the recorded event at the same position and returns that
event so the replayer can feed its recorded result back (the real effect is never performed). The first
divergence raises ``DivergenceFound``; warnings (prompt drift under a ``warn`` policy, arguments that
changed without ``strict_args``) are collected on ``Matcher.warnings`` and the replay goes on.

Choices the whole replay side shares:

* ``args-mismatch`` is always detected; ``strict_args`` decides whether it fails the replay or is a
  warning. Without it the recorded result is fed back as a resumed run would (Temporal's behaviour:
  activity inputs are not compared on replay), so reworded arguments do not fail old histories.
* A running or parked history ends where the run would resume: the first command past its end raises
  ``ReachedEnd`` and the replay passes. For completed and failed histories it is ``extra-command``. A
  parked history that records its pending wait (``waiting``) resumes only at that wait: another command
  first is a ``command-mismatch`` against the wait, and code that finishes without reaching it a
  ``missing-command`` (``patched()`` there is False: the run replays up to its wait).
* A running or parked history also carries a *prompt manifest* (the prompt versions its workflow
  could use when it started). ``check_pending_prompts`` compares it with the current code's: a prompt
  the run has not reached yet that changed is ``prompt-drift`` under the ``prompts_pending`` policy,
  since it is what the run will use once it resumes. Without a manifest it says so in a note.
* ``patched(id)`` follows Temporal: a marker for ``id`` at the current position is consumed and the new
  path taken; no marker for ``id`` there means an older history, the old path (False) and nothing
  consumed; a recorded marker the code does not ask for before its next command is ``patch-mismatch``.
  ``deprecate_patch(id)`` consumes a marker for ``id`` at the current position and is content without
  one. A marker recorded by ``deprecate_patch`` is matched like any other (the journal and DBOS count
  positions, so removing the call shifts every later one; sdk-core's skipping of such markers applies to
  Temporal's own replay only). Every ``patched``/``deprecate_patch``
  answer is kept on ``Matcher.patch_decisions`` (``ReplayResult.patch_decisions``) for patch retirement.
* A replayer hands the matcher its events as ``RecordedEvents``: each ``Recorded`` is made when the
  matcher looks at it, so a long history is not copied once more per replay.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar, overload

from replaytest.prompts import (
    describe_changes,
    describe_version_change,
    model_or_params_changed,
    renamed_prompts,
    short_version,
)
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.divergence import (
    CommandView,
    Divergence,
    PatchDecision,
    PromptChange,
    ReplayResult,
    SourcePosition,
)

NO_MANIFEST_NOTE = (
    "no prompt manifest recorded (recorded before manifests, or without replaytest's prompt recording):"
    " prompts the unfinished run has not reached yet were not checked"
)
NO_PROMPTS_NOTE = "no prompt versions recorded: prompt drift was not checked"
PATCH_MARKER = "patched"  # the name of the marker event ``patched(id)`` records
_CONTEXT = 6  # events kept on each side for the report (the renderer shows fewer unless --details)


class ReachedEnd(BaseException):
    """The code issued a command past the end of a running/parked history: the run would resume here.

    A ``BaseException`` so that orchestration code catching ``Exception`` does not swallow it."""


class DivergenceFound(BaseException):
    """The first divergence; raised through the orchestration code to stop it."""

    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence
        super().__init__(divergence.message)


def as_position(source: Any) -> SourcePosition | None:
    """A ``SourcePosition`` from one, or from any object with ``path``, ``line`` (and ``function``)."""
    if source is None or isinstance(source, SourcePosition):
        return source
    return SourcePosition(str(source.path), int(source.line), getattr(source, "function", None))


@dataclass(slots=True)
class Recorded:
    """One recorded event in neutral terms; ``payload`` is the replayer's own event object (for results)."""

    seq: int
    kind: str
    name: str
    args_digest: str | None = None
    prompt_version: str | None = None
    patch_id: str | None = None
    payload: Any = None
    deprecated: bool = False  # a patch marker recorded by deprecate_patch
    prompt_params: Mapping[str, Any] | None = None  # the model parameters recorded with the prompt, if any
    prompt_name: str | None = None  # the name of the prompt ``prompt_version`` is of, when known (for reports)

    def view(self) -> CommandView:
        detail: dict[str, Any] = {"patch_id": self.patch_id} if self.patch_id else {}
        if self.prompt_name and self.prompt_version:
            detail["prompt"] = self.prompt_name
        return CommandView(self.kind, self.name, self.seq, self.args_digest, self.prompt_version, detail)


_Event = TypeVar("_Event")


class RecordedEvents(Sequence[Recorded], Generic[_Event]):
    """A replayer's events seen as ``Recorded``, each made by ``convert`` when it is looked at (the last
    one kept, since the matcher looks at the same event several times per command): a replay holds the
    history's events once, not a second list of one ``Recorded`` per event."""

    __slots__ = ("_events", "_convert", "_last_index", "_last")

    def __init__(self, events: Sequence[_Event], convert: Callable[[_Event], Recorded]) -> None:
        self._events = events
        self._convert = convert
        self._last_index = -1
        self._last: Recorded | None = None

    def __len__(self) -> int:
        return len(self._events)

    @overload
    def __getitem__(self, index: int) -> Recorded: ...

    @overload
    def __getitem__(self, index: slice) -> list[Recorded]: ...

    def __getitem__(self, index: int | slice) -> Recorded | list[Recorded]:
        if isinstance(index, slice):
            return [self._convert(event) for event in self._events[index]]
        if index < 0:
            index += len(self._events)
        if index != self._last_index or self._last is None:
            self._last = self._convert(self._events[index])  # IndexError past the end, as a list's
            self._last_index = index
        return self._last


@dataclass(slots=True)
class Issued:
    """One command the current code issued, with where in the code it was issued. ``source`` is a
    ``SourcePosition`` or any object with ``path``, ``line`` and ``function`` (a runtime's own call-site
    type); it is converted only if it ends up in a report, which keeps the per-command cost low."""

    kind: str
    name: str
    args_digest: str | None = None
    prompt_version: str | None = None
    patch_id: str | None = None
    source: Any = None
    prompt_name: str | None = None  # the prompt's name where ``prompt_version`` is set (for reports)
    prompt_params: Mapping[str, Any] | None = None  # its model parameters, when it declares them
    # Other prompts of the same call whose version changed too, or that the call now uses and the recorded
    # call did not, each as a phrase the drift message appends (a call that used several prompts: the
    # matcher compares one, the replayer the others). When the compared prompt itself is unchanged, these
    # phrases alone are the call's drift (``kind 'name' <phrase>``: LangGraph's prompt added since).
    prompt_also: tuple[str, ...] = ()

    def view(self, position: int | None, with_source: bool = False) -> CommandView:
        """``with_source``: the issuing line in ``detail["source"]`` (``file.py:12``), which the report's
        side-by-side table shows so two calls of one kind and name are told apart."""
        detail: dict[str, Any] = {"patch_id": self.patch_id} if self.patch_id else {}
        if self.prompt_name and self.prompt_version:
            detail["prompt"] = self.prompt_name
        if with_source and self.source is not None:
            where = as_position(self.source)
            if where is not None:
                detail["source"] = f"{where.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{where.line}"
        return CommandView(self.kind, self.name, position, self.args_digest, self.prompt_version, detail)


@dataclass
class Matcher:
    """Walks a history's events in order while the code issues commands (see the module docstring)."""

    events: Sequence[Recorded]
    status: str
    options: ReplayOptions
    warnings: list[Divergence] = field(default_factory=list)
    index: int = 0  # the next recorded event to match
    _recent: deque[tuple[int, Issued]] = field(default_factory=lambda: deque(maxlen=_CONTEXT))
    last_source: Any = None  # the source of the last command issued (see Issued.source)
    # A parked history's pending wait, (kind, name), when the history records it: the resume point is
    # that wait, not whatever the code issues first past the recorded events.
    waiting: tuple[str, str] | None = None
    patch_decisions: list[PatchDecision] = field(default_factory=list)
    # The current versions of the prompts no recorded model call used ({name: version}; None when the
    # replayer does not know them): what a resumed run can use next when the replay stops before it.
    prompts_ahead: Mapping[str, str] | None = None
    # A recorded model call of a running/parked run whose prompt changed (policy ``fail``): reported
    # when the replay reaches the resume point, so the report can name the prompt the run uses next
    # instead of the one whose result it already holds.
    _recorded_drift: tuple[Issued, Recorded, Divergence] | None = None
    # The engine's own words for where a run resumes and what it uses next, replacing the generic
    # `` and resumes at …; the next prompt it uses is …`` of a kept drift (given the command resumed at).
    resume_hint: Callable[[Issued | None], str] | None = None

    @property
    def resumable(self) -> bool:
        return self.status in ("running", "parked")

    def next_position(self) -> int:
        if self.index < len(self.events):
            return self.events[self.index].seq
        return (self.events[-1].seq + 1) if self.events else 1

    def issue(self, command: Issued) -> Recorded:
        """Match ``command`` with the next recorded event and return that event (its result is fed back)."""
        self.last_source = command.source
        if self.index >= len(self.events):
            if self.resumable:
                self._raise_recorded_drift(command)
                self._check_resume_point(command)
                raise ReachedEnd()
            self._diverge(
                "extra-command",
                command,
                None,
                f"the code issued {command.view(None).describe()} after the last recorded event "
                f"of this {self.status} history",
            )
        event = self.events[self.index]
        if event.kind == "marker" and event.name == PATCH_MARKER and command.kind != "marker":
            self._diverge(
                "patch-mismatch",
                command,
                event,
                f"the history recorded patch marker {event.patch_id!r} here but the code no longer calls "
                f"patched({event.patch_id!r}) before this command",
            )
        if (event.kind, event.name) != (command.kind, command.name):
            self._diverge(
                "command-mismatch",
                command,
                event,
                f"the code issued {command.kind} {command.name!r} where the history recorded {event.kind} {event.name!r}",
            )
        # Prompt first: a reworded prompt usually changes the model call's arguments too, and the
        # prompt is the cause worth reporting.
        changed = bool(command.prompt_version and event.prompt_version and command.prompt_version != event.prompt_version)
        if changed or command.prompt_also:
            policy = self.options.prompt_policy(self.status)
            if changed:
                what = [f"prompt {command.prompt_name}"] if command.prompt_name else []
                if model_or_params_changed(event.prompt_version, command.prompt_version):
                    what.append(
                        describe_version_change(
                            event.prompt_version, command.prompt_version, event.prompt_params, command.prompt_params
                        )
                    )
                message = (
                    f"{command.kind} {command.name!r} now uses prompt version {short_version(command.prompt_version)} "
                    f"but the history recorded {short_version(event.prompt_version)}"
                    + (f" ({': '.join(what)})" if what else "")
                    + "".join(f"; {also}" for also in command.prompt_also)
                )
            else:  # the compared prompt is unchanged: the call's other prompts are its drift
                message = f"{command.kind} {command.name!r} " + "; ".join(command.prompt_also)
            if policy == "fail" and self.resumable:
                # The run keeps this call's recorded result; what matters is the prompt it uses next,
                # known once the replay reaches the resume point.
                if self._recorded_drift is None:
                    self._recorded_drift = (command, event, self.divergence("prompt-drift", message, command, event))
                self._accept(command)
                return event
            if policy == "fail":
                self._diverge("prompt-drift", command, event, message)
            elif policy == "warn":
                self._warn("prompt-drift", command, event, message)
        if command.args_digest and event.args_digest and command.args_digest != event.args_digest:
            self.args_changed(command, event, f"{command.kind} {command.name!r} was called with other arguments than recorded")
        self._accept(command)
        return event

    def args_changed(self, command: Issued, event: Recorded, message: str) -> None:
        """An ``args-mismatch`` at the current command: fails with ``strict_args``, else a warning."""
        if self.options.strict_args:
            self._diverge("args-mismatch", command, event, message)
        self._warn("args-mismatch", command, event, message + " (recorded result used; strict args would fail)")

    def patched(self, patch_id: str, source: Any = None) -> bool:
        """Temporal-style ``patched(id)``: True (and the marker consumed) if the history has it here."""
        return self._patch_call(patch_id, source, deprecated=False)

    def deprecate_patch(self, patch_id: str, source: Any = None) -> bool:
        """Temporal-style ``deprecate_patch(id)``: a marker for ``id`` here is consumed (True); none is
        fine (False, nothing consumed)."""
        return self._patch_call(patch_id, source, deprecated=True)

    def _patch_call(self, patch_id: str, source: Any, deprecated: bool) -> bool:
        command = Issued("marker", PATCH_MARKER, patch_id=patch_id, source=source)
        self.last_source = source
        if self.index >= len(self.events):
            if self.resumable and self.waiting is None:
                self._raise_recorded_drift(None)
                raise ReachedEnd()
            # A completed history without the marker ran the old code path; so did a parked run, which
            # replays every command up to its wait (Temporal's rule: patched() is False while replaying).
            self._decided(patch_id, False, self.next_position(), source, deprecated, None)
            return False
        event = self.events[self.index]
        if event.kind != "marker" or event.name != PATCH_MARKER or event.patch_id != patch_id:
            # Recorded before this patch existed (another patch's marker may sit here: it must then be
            # asked for next, or the next command reports it as a patch-mismatch).
            self._decided(patch_id, False, event.seq, source, deprecated, None)
            return False
        self._decided(patch_id, True, event.seq, source, deprecated, event.deprecated)
        self._accept(command)
        return True

    def _decided(
        self, patch_id: str, taken: bool, position: int, source: Any, deprecated: bool, marker_deprecated: bool | None
    ) -> None:
        self.patch_decisions.append(
            PatchDecision(patch_id, taken, position, as_position(source), deprecated, marker_deprecated)
        )

    def _check_resume_point(self, command: Issued) -> None:
        """A command past the recorded events of a parked history: right only if it is the wait the run
        stands at. Anything else comes before that wait, where the engine holds the pending wait."""
        if self.waiting is None or (command.kind, command.name) == self.waiting:
            return
        kind, name = self.waiting
        pending = Recorded(seq=self.next_position(), kind=kind, name=name)
        self._diverge(
            "command-mismatch",
            command,
            pending,
            f"the code issued {command.kind} {command.name!r} where this parked run waits for {kind} {name!r} "
            f"(a resumed run must reach that wait before anything new)",
        )

    def finish(self) -> None:
        """The code returned or raised: every recorded command must have been issued, and a parked
        history's wait reached."""
        self._raise_recorded_drift(None)
        if self.index >= len(self.events) and self.waiting is not None and self.resumable:
            kind, name = self.waiting
            message = f"the code finished without reaching the {kind} {name!r} this parked run waits at"
            pending = Recorded(seq=self.next_position(), kind=kind, name=name)
            raise DivergenceFound(self.divergence("missing-command", message, None, pending, source=self.last_source))
        if self.index < len(self.events):
            event = self.events[self.index]
            if event.kind == "marker" and event.name == PATCH_MARKER:
                message = f"the history recorded patch marker {event.patch_id!r} but the code finished without asking for it"
                raise DivergenceFound(self.divergence("patch-mismatch", message, None, event, source=self.last_source))
            message = (
                f"the code finished but the history continues with {event.kind} {event.name!r} "
                f"({len(self.events) - self.index} recorded event(s) not issued)"
            )
            # Named at the last command the code did issue: the place the missing one used to follow.
            raise DivergenceFound(self.divergence("missing-command", message, None, event, source=self.last_source))

    def divergence(
        self,
        kind: str,
        message: str,
        command: Issued | None = None,
        event: Recorded | None = None,
        source: Any = None,
        position: int | None = None,
    ) -> Divergence:
        """Build a divergence at the current position with context (used for guard trips, results)."""
        if position is None:
            position = event.seq if event is not None else self.next_position()
        source = as_position(source or (command.source if command is not None else None))
        low = max(0, self.index - _CONTEXT)
        recorded_context = tuple(e.view() for e in self.events[low : self.index + _CONTEXT + 1])
        issued_context = tuple(issued.view(pos, with_source=True) for pos, issued in self._recent)
        return Divergence(
            kind=kind,
            position=position,
            message=message,
            recorded=event.view() if event is not None else None,
            issued=command.view(position, with_source=True) if command is not None else None,
            recorded_context=recorded_context,
            issued_context=issued_context,
            source=source,
        )

    def _accept(self, command: Issued) -> None:
        self._recent.append((self.events[self.index].seq, command))
        self.index += 1

    def _diverge(self, kind: str, command: Issued | None, event: Recorded | None, message: str) -> None:
        self._raise_recorded_drift(None)  # it came first
        raise DivergenceFound(self.divergence(kind, message, command, event))

    def unreported_drift(self) -> Divergence | None:
        """The prompt drift of a recorded call kept for the resume point, when the replay ended without
        reaching it (a guard stopped the code, say): the replayer reports it so it never passes."""
        try:
            self._raise_recorded_drift(None)
        except DivergenceFound as found:
            return found.divergence
        return None

    def resume_at(self, next_command: Issued | None) -> None:
        """A replayer that finds the resume point itself (DBOS: no row at a function id) calls this
        there: the kept prompt drift of a recorded call, if any, is raised naming ``next_command``."""
        self._raise_recorded_drift(next_command)

    def _raise_recorded_drift(self, next_command: Issued | None) -> None:
        """Raise the kept prompt drift of a recorded call (if any), saying what the run resumes at and
        the prompt it uses next: that of ``next_command`` (the first command past the recorded events)
        when it is a model call with a prompt, else the prompts no recorded call used yet."""
        if self._recorded_drift is None:
            return
        command, event, divergence = self._recorded_drift
        self._recorded_drift = None
        under = f"under {short_version(event.prompt_version)}" if event.prompt_version else "without a prompt"
        if self.resume_hint is not None:
            why = (
                f" (this {self.status} run keeps the result of {command.kind} {command.name!r} recorded "
                f"{under}{self.resume_hint(next_command)})"
            )
            raise DivergenceFound(replace(divergence, message=divergence.message + why))
        if next_command is not None:
            resume = f" and resumes at {next_command.kind} {next_command.name!r}"
        elif self.waiting is not None and self.index >= len(self.events):
            resume = f" and resumes at {self.waiting[0]} {self.waiting[1]!r}"
        else:
            resume = ""
        why = (
            f" (this {self.status} run keeps the result of {command.kind} {command.name!r} recorded "
            f"{under}{resume}; {self._next_prompt(next_command)})"
        )
        # Reported at the recorded call, with the context the report showed there.
        raise DivergenceFound(replace(divergence, message=divergence.message + why))

    def _next_prompt(self, next_command: Issued | None) -> str:
        if next_command is not None and next_command.prompt_version:
            name = f"{next_command.prompt_name} " if next_command.prompt_name else ""
            return (
                f"the next prompt it uses is {name}{short_version(next_command.prompt_version)}, "
                f"at {next_command.kind} {next_command.name!r}"
            )
        if self.prompts_ahead is None:
            return "which prompt it uses next is past what the replay sees"
        ahead = [f"{name} {short_version(version)}" for name, version in sorted(self.prompts_ahead.items())]
        if not ahead:
            return "it has no prompt left that no recorded call used"
        if len(ahead) == 1:
            return f"the next prompt it uses is {ahead[0]}, the only one of its prompts no recorded call used"
        return "the next prompt it uses is one of those no recorded call used: " + ", ".join(ahead)

    def _warn(self, kind: str, command: Issued, event: Recorded, message: str) -> None:
        divergence = self.divergence(kind, message, command, event)
        self.warnings.append(
            Divergence(
                kind=divergence.kind,
                position=divergence.position,
                message=divergence.message,
                recorded=divergence.recorded,
                issued=divergence.issued,
                recorded_context=divergence.recorded_context,
                issued_context=divergence.issued_context,
                source=divergence.source,
                severity="warning",
            )
        )


def check_pending_prompts(
    result: ReplayResult,
    status: str,
    recorded: Mapping[str, str] | None,
    current: Mapping[str, str],
    reached: Iterable[str] | Mapping[str, str],
    options: ReplayOptions,
    position: int | None = None,
    compared: Literal["call", "manifest"] = "call",
    *,
    pending_message: str | None = None,
    reused: Mapping[str, str] | None = None,
    params: Mapping[str, tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]] | None = None,
    where: str = "",
) -> None:
    """Prompt drift a running/parked run will meet after it resumes: prompts of its manifest (``recorded``)
    that the current code (``current``) has at another version and that no recorded model call used
    yet (``reached``: those were compared at their call). Adds a divergence or a warning to ``result``
    by the ``prompts_pending`` policy, or a note when the history has no manifest. Completed and failed
    runs will not use any prompt again: nothing to check. A result that already diverged keeps its
    first divergence.

    Whatever the status and policy, every changed prompt is listed on ``result.prompt_changes`` (for
    the deploy-impact report): ``reached`` as ``{name: version used}`` gives the recorded calls'
    versions, which ``compared`` says come from each call (``call``) or from the start manifest.
    ``pending_message``: the drift's message in the engine's own words (where the run resumes, say),
    used instead of the generic one when there is drift to report. ``reused``: ``{name: version}`` of
    prompts in ``reached`` that a step the run has not recorded yet uses too: compared as pending, with the
    version the run used. ``params``: ``{name: (old, new parameters)}`` where known (``temperature 0.2 →
    0.9``). ``where``: said after "has not reached these prompts yet" (the resume point, in the engine's
    words)."""
    changes = [replace(change, source=_prompt_site(current, [change.name])) for change in
               prompt_changes(recorded, current, reached, compared)]
    result.prompt_changes.extend(changes)
    if status not in ("running", "parked") or options.prompts_pending == "ignore":
        return
    if recorded is None:
        result.notes.append(NO_MANIFEST_NOTE)
        return
    for new_name, old_name in renamed_prompts(recorded, current).items():
        result.notes.append(
            f"prompt {old_name} is now named {new_name} at the same version {short_version(current[new_name])}: "
            "a rename, not a change"
        )
    reused = {name: version for name, version in (reused or {}).items() if name in current}
    base = {**recorded, **reused}
    phrases = describe_changes(base, current, [name for name in reached if name not in reused], params=params, used=reused)
    if not phrases:
        return
    message = pending_message or f"the {status} run has not reached these prompts yet{where}: " + "; ".join(phrases)
    source = _prompt_site(current, [change.name for change in changes if not change.called or change.name in reused])
    if options.prompts_pending == "fail":
        if result.divergence is None:
            result.status = "diverged"
            result.divergence = Divergence("prompt-drift", position, message + " (fails by prompts-pending)", source=source)
        return
    result.warnings.append(Divergence("prompt-drift", position, message, source=source, severity="warning"))


def _prompt_site(current: Mapping[str, str], names: Iterable[str]) -> SourcePosition | None:
    """Where the current code uses the first of ``names`` that the manifest walk placed
    (``replaytest.prompts.PromptManifest.sites``), for the report's line."""
    sites = getattr(current, "sites", None) or {}
    for name in names:
        site = sites.get(name)
        if site is not None:
            return SourcePosition(site[0], site[1], site[2])
    return None


def prompt_changes(
    recorded: Mapping[str, str] | None,
    current: Mapping[str, str],
    reached: Iterable[str] | Mapping[str, str],
    compared: Literal["call", "manifest"] = "call",
) -> list[PromptChange]:
    """The prompts ``current`` has at another version than the run used (``reached``, when it maps
    names to versions) or started under (``recorded``, the manifest), sorted by name. A prompt the
    current code no longer has is left out: nothing will run it."""
    used = dict(reached) if isinstance(reached, Mapping) else {name: None for name in reached}
    renamed = renamed_prompts(recorded, current) if recorded is not None else {}
    changes = []
    for name in sorted(current):
        if name in renamed and used.get(name) is None:
            continue  # the same prompt under a new name, no recorded call of it under that name: no change
        version = used.get(name)
        called = name in used
        if version is not None:
            started, source = version, compared
        elif recorded is not None:
            started, source = recorded.get(name), "manifest"
        else:
            continue  # neither a recorded call's version nor a manifest: nothing to compare with
        if started == current[name]:
            continue
        changes.append(PromptChange(name, started, current[name], called, source))  # type: ignore[arg-type]
    return changes


# What a model step that recorded no prompt version leaves unchecked (``note_unrecorded_model_calls``).
UNRECORDED_MODEL_CALL_NOTE = (
    "{what} calls a model ({site}) but recorded no prompt version: a prompt fetched or built at run time "
    "without Prompt.fetched(...) rendered in it or use_prompt around it is not compared"
)


def note_unrecorded_model_calls(result: ReplayResult, calls: Iterable[tuple[str, Any]]) -> None:
    """One note per recorded model call that carries no prompt version although the run recorded them
    per call: ``calls`` are ``(the call in the engine's words, where its code calls the model)``, e.g.
    ``("step 'answer'", model_clients.ModelCallSite)``. The prompt it rendered cannot be compared, and
    saying so is the difference between a checked run and a silent pass."""
    for what, site in calls:
        note = UNRECORDED_MODEL_CALL_NOTE.format(what=what, site=site)
        if note not in result.notes:
            result.notes.append(note)


# A prompt a recorded call used that the current code of that call renders no ``Prompt`` of: nothing to compare
# it with (``uncompared_prompt_note``).
UNCOMPARED_PROMPT_NOTE = (
    "{what} used prompt {name} {version} (recorded when it ran), which the current code of that {kind} renders no "
    "Prompt of: {why}"
)
UNCOMPARED_FETCHED = (
    "its code fetches that prompt at run time (Prompt.fetched at {where}), so replay cannot compare it offline"
)
UNCOMPARED_OTHER = "a prompt removed, or built at run time without Prompt.fetched, is not compared"


def uncompared_prompt_note(what: str, kind: str, name: str, version: str, fetched: tuple[str, int] | None) -> str:
    """The note for a recorded call's prompt that replay could not compare: ``what`` is the call in the
    engine's words (``step 'answer' (function id 3)``), ``kind`` the engine's word for it, ``fetched`` where
    the call's current code calls ``Prompt.fetched`` (a registry prompt), if it does."""
    if fetched is not None:
        why = UNCOMPARED_FETCHED.format(where=f"{fetched[0].replace(chr(92), '/').rsplit('/', 1)[-1]}:{fetched[1]}")
    else:
        why = UNCOMPARED_OTHER
    return UNCOMPARED_PROMPT_NOTE.format(what=what, name=name, version=short_version(version), kind=kind, why=why)


# The start manifest stands in for per-call versions on engines that record none (DBOS, LangGraph).
MANIFEST_VERSION_NOTE = "from the run's start manifest; {engine} records no prompt version per call"


def check_manifest_prompts(
    result: ReplayResult,
    engine: str,
    status: str,
    recorded: Mapping[str, str] | None,
    current: Mapping[str, str],
    called: Mapping[str, str],
    options: ReplayOptions,
    position: int | None = None,
    *,
    pending_message: str | None = None,
    where: str = "",
) -> None:
    """The prompt checks of an engine whose runs record only the start manifest. ``called``: the prompts
    the run's recorded calls used, ``{prompt name: the step or task that called it}`` (what the current
    code says those calls use: a ``use_prompt`` block around the call, or the step's own body).

    Without a manifest: one note (``NO_PROMPTS_NOTE``, even when the current code has no ``Prompt``: its
    prompts may be plain strings, which replay cannot tell). With one, a called prompt whose current version
    differs from the manifest's is a ``prompt-drift`` warning naming both versions (the run keeps that
    call's result; the version it used is the one it started under, not recorded per call, so it does
    not fail the run), silenced by a prompt policy of ``ignore``; prompts not called yet go to
    ``check_pending_prompts`` (with ``pending_message``)."""
    if recorded is None:
        result.notes.append(NO_PROMPTS_NOTE)
        return
    renamed = renamed_prompts(recorded, current)
    for name in sorted(called):
        old, new = recorded.get(name), current.get(name)
        if new is None or old == new or name in renamed or options.prompt_policy(status) == "ignore":
            continue
        step = called[name]
        if old is None:
            # The run started before this prompt existed: its recorded call used whatever the code had then.
            message = (
                f"{step} now uses prompt {name} {short_version(new)}, which did not exist when the run started: "
                f"the call it recorded used another prompt ({MANIFEST_VERSION_NOTE.format(engine=engine)}); "
                f"the {status} run keeps that call's recorded result"
            )
        else:
            message = (
                f"{step} already called prompt {name}: the run started under {short_version(old)} "
                f"({MANIFEST_VERSION_NOTE.format(engine=engine)}), the code now has {short_version(new)}"
                + (f" ({describe_version_change(old, new)})" if model_or_params_changed(old, new) else "")
                + f"; the {status} run keeps that call's recorded result"
            )
        result.warnings.append(Divergence("prompt-drift", position, message, severity="warning"))
    # Every called prompt counts as reached, one added since the run started too: the run is past that call,
    # and telling it both "already called" and "not reached yet" of one prompt would contradict itself.
    versions = {name: recorded.get(name) for name in called}
    check_pending_prompts(
        result, status, recorded, current, versions, options, position, compared="manifest", pending_message=pending_message,
        where=where,
    )
