"""The types of a deploy-impact report (``replaytest impact``), shared by grouping, guard synthesis,
guard verification, patch retirement and the renderings; nothing here runs a replay or reads code."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from replaytest.replay.divergence import CommandView, ReplayResult, SourcePosition

# What a version guard looks like in each engine's code; LangGraph's functional API has none.
GUARD_ENGINES: tuple[str, ...] = ("journal", "temporal", "dbos")

PATCH_VERDICTS: tuple[str, ...] = ("still-needed", "deprecate-now", "remove-now")

# The ``WorkflowImpact.workflow_type`` of notes about patch calls no workflow type could be told for.
UNKNOWN_WORKFLOW_TYPE = "(workflow type unknown)"


@dataclass(frozen=True)
class GroupKey:
    """What makes two divergences one group: the workflow type, the kind, the command the code now
    issues (or, when it issues none there, the recorded one it no longer issues) and its source line."""

    workflow_type: str
    kind: str
    command: tuple[str, str] | None  # (kind, name) of that command
    path: str | None  # the source file of the line, as the divergence names it
    line: int | None


# The path a guard's patch check sends a new run down (``FreshRun.path``); only ``new path`` verifies a guard.
FRESH_RUN_PATHS: tuple[str, ...] = ("new path", "old path", "does not reach the guard", "not rehearsed")


@dataclass(frozen=True)
class FreshRun:
    """A guard's patch check in a **new** run of the guarded code, as the engine's own code ran it from the
    input of ``history`` (every effect answered with that history's recorded results): ``path`` (one of
    ``FRESH_RUN_PATHS``), ``command`` (the command the run issued right after the check, ``activity 'charge'``;
    None when it issued none), ``text`` (why, in a sentence) and ``driver`` (the engine's code that ran it)."""

    patch_id: str
    path: str
    command: str | None
    text: str
    history: Path | None = None
    driver: str = ""


@dataclass
class Verification:
    """A guard applied to a temporary copy of the code, and every history of its workflow type replayed
    against that copy: ``passed`` of ``histories`` replayed green; ``failing`` names the others and why."""

    histories: int
    passed: int
    failing: list[tuple[Path, str]] = field(default_factory=list)
    # What the replays did not check, one sentence each (histories of another change left out, …).
    notes: list[str] = field(default_factory=list)
    # Each in-flight history's path under the guard when the engine resumes it (rehearsed on the guarded
    # code): "new path", "old path", "does not reach the guard in its next step", or "not rehearsed".
    resume: list[tuple[Path, str]] = field(default_factory=list)
    # Each patch guard's check in a new run of the guarded code (rehearsed by the engine): the guard holds
    # only when every new run takes the new path. Empty for a guard with no patch check (a kept name).
    fresh_runs: list[FreshRun] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return (self.histories > 0 and self.passed == self.histories
                and all(fresh.path == "new path" for fresh in self.fresh_runs))


@dataclass
class Guard:
    """A suggested version guard for one change of one workflow function.

    ``new_range``/``old_range``: 1-based inclusive line ranges of the guarded statements in the current
    file and in the file at the base revision (None for a pure removal / a pure insertion).
    ``guarded_text`` is the whole current file with the guard applied; ``diff`` is the unified diff from
    the current file to it. ``verification`` is None until it has been replayed."""

    engine: str
    patch_id: str
    path: Path
    function: str
    new_range: tuple[int, int] | None
    old_range: tuple[int, int] | None
    guarded_text: str
    diff: str
    verification: Verification | None = None
    # ``patch``: an ``if <patched>:`` around the changed block; ``keep-name``: a renamed activity or step keeps
    # its recorded name through its decorator (``@activity.defn(name=…)``, ``@DBOS.step(name=…)``), so every
    # run, old and new, keeps calling it by that name and no patch is needed (``patch_id`` is then the name kept).
    kind: str = "patch"
    # What the guard changes in the file's tree (``impact.guards.GuardEdit``), so that every guard of one
    # file applies in one pass; not part of the report.
    edit: object | None = field(default=None, repr=False, compare=False)


@dataclass
class ImpactGroup:
    """The runs of one workflow type that break at one divergence point."""

    key: GroupKey
    position: int | None  # the (first) event number where they break
    recorded: list[CommandView | None]  # every distinct recorded side at that point
    issued: CommandView | None  # what the code does there now
    source: SourcePosition | None
    message: str  # the divergence message of the first run of the group
    in_flight: list[ReplayResult] = field(default_factory=list)
    finished: list[ReplayResult] = field(default_factory=list)
    unknown_status: list[ReplayResult] = field(default_factory=list)
    guard: Guard | None = None
    guard_note: str | None = None  # why there is no guard (LangGraph guidance, no base file, …)
    # Wider guards of the same change, tried in order when ``guard`` does not verify (the span of every
    # changed statement of the function, then its whole body); verification puts the one that holds in
    # ``guard``. Not part of the report.
    wider_guards: list[Guard] = field(default_factory=list, repr=False)


@dataclass
class PatchUse:
    """A ``patched(id)`` / ``DBOS.patch(id)`` / ``deprecate_patch(id)`` already in the code, and its verdict.

    ``needed_by``: in-flight runs whose replay took the old branch there (they started before the
    marker), oldest first (reports name the first as the oldest); ``marked_by``: retained histories that recorded the marker;
    ``replayed_old_by``: finished retained histories that took the old branch. Verdict: ``still-needed`` while
    ``needed_by`` or ``replayed_old_by`` is not empty (removing the old branch breaks a run, or makes a retained
    history diverge), else ``deprecate-now`` while a retained history has the marker, else ``remove-now``."""

    patch_id: str
    engine: str
    path: Path
    line: int
    deprecated: bool  # the call is already a deprecate_patch
    needed_by: list[ReplayResult] = field(default_factory=list)
    marked_by: list[ReplayResult] = field(default_factory=list)
    # Finished (or unknown-status) retained runs whose replay took the old branch: removing the guard makes
    # them diverge (the same replays that group them say so), so the guard is never "remove now" for them.
    replayed_old_by: list[ReplayResult] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.needed_by:
            return "still-needed"
        if self.replayed_old_by:
            return "still-needed"
        return "deprecate-now" if self.marked_by else "remove-now"


@dataclass
class PromptGroup:
    """The in-flight runs of one workflow type that will use another version of one prompt than they
    started under (``started`` → ``current``). A prompt change breaks no replay, but it changes what a
    parked run does once it resumes. ``not_called``: runs that have not called the prompt yet (their next
    call uses ``current``); ``called``: runs whose recorded calls already used it (they keep those results;
    any later call of theirs uses ``current``). ``compared``: where the started version came from, ``call``
    (recorded per call) and/or ``manifest`` (the run's start manifest)."""

    prompt: str
    started: str | None
    current: str
    not_called: list[ReplayResult] = field(default_factory=list)
    called: list[ReplayResult] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)
    source: SourcePosition | None = None  # the line of the current code using the prompt, when known


@dataclass(frozen=True)
class GuardBranches:
    """Where a guard's two blocks are in the guarded file: ``new`` the lines of its ``if <check>:`` body (the
    current code), ``old`` those of its ``else:`` (the code runs recorded before the change ran)."""

    file_name: str
    new: tuple[tuple[int, int], ...]
    old: tuple[tuple[int, int], ...]
    # The block a True answer to the check runs: ``new`` for ``if patched(...)``, ``old`` for ``if not
    # patched(...)``; None when the test is something else (or the guard's ``if`` statements disagree).
    when_taken: str | None = None

    def selected_by(self, taken: bool) -> str | None:
        """``new``/``old``: the block the check's answer ``taken`` runs, when the test says (``when_taken``)."""
        if self.when_taken is None:
            return None
        return self.when_taken if taken else ("old" if self.when_taken == "new" else "new")

    def branch_of(self, source: object) -> str | None:
        """``new``/``old`` for a command issued at ``source`` (``file.py:12``) inside a block, else None."""
        if not isinstance(source, str) or ":" not in source:
            return None
        name, _, line_text = source.rpartition(":")
        if name != self.file_name or not line_text.isdigit():
            return None
        line = int(line_text)
        if any(first <= line <= last for first, last in self.new):
            return "new"
        if any(first <= line <= last for first, last in self.old):
            return "old"
        return None


@dataclass
class WorkflowImpact:
    """Everything the report says about one workflow type."""

    workflow_type: str
    engine: str
    groups: list[ImpactGroup] = field(default_factory=list)
    not_reached: list[ReplayResult] = field(default_factory=list)
    # Green runs that are neither broken nor "not reached": finished ones, in-flight ones past the first
    # changed command, and every green run of a type with no group.
    unaffected: list[ReplayResult] = field(default_factory=list)
    patches: list[PatchUse] = field(default_factory=list)
    guidance: str | None = None  # engines without a code guard (LangGraph): what to do instead
    prompt_groups: list[PromptGroup] = field(default_factory=list)
    # Checks that could not apply to this workflow type, one sentence each, naming the file and line
    # (a patch id that is not a literal, histories that could not be replayed, …).
    notes: list[str] = field(default_factory=list)
    # The blocks of the current code's version guards, by patch id : the
    # resume verdicts judge the path by the block the command after the check comes from.
    guard_blocks: dict[str, GuardBranches] = field(default_factory=dict)


@dataclass
class ImpactReport:
    """The whole ``replaytest impact`` outcome: the workflow types (worst first), the histories that could
    not be checked (error or stale: never grouped, never counted safe) and what the report could not tell."""

    workflows: list[WorkflowImpact] = field(default_factory=list)
    could_not_check: list[ReplayResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
