"""What each in-flight run that replays green does when it resumes on the current code, as the engine's own
code rehearsed it (``ReplayResult.rehearsal``), rather than as replaytest's model of the engine would say.

``resume_verdict(result, impact)`` reads one run's rehearsal against the changes of its workflow type:

- ``new``: the engine issues a command the change introduced (a group's issued command, or one the engine
  marks ``detail["added"]``: not in the code the run was recorded with) past the history;
- ``old``: a patch check the rehearsal answered False (the run keeps the old path), with the engine's reason;
  a guard's path is judged as a fresh run's is (``impact.verify``): by the block of the current code's guard
  (``WorkflowImpact.guard_blocks``) the first command past the history comes from, else by the block the
  engine's answer runs under the guard's test, so a negated check (``if not patched(...)``: a True answer runs
  the ``else:``) is not read as "answered True, new path";
- ``breaks``: the engine refused the resume (its own nondeterminism / unexpected-step error);
- ``further``: the engine resumes cleanly and the change lies further on;
- ``waits`` / ``completes``: the run waits again, or ends, with no new command;
- ``unrehearsed``: the engine's resume could not be rehearsed: the verdict rests on replay alone (the
  report says so; never "they take the new path").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from replaytest.impact.grouping import command_text, run_id
from replaytest.impact.model import WorkflowImpact
from replaytest.impact.verify import guard_branches
from replaytest.replay.divergence import Rehearsal, ReplayResult

RESUME_PATHS: tuple[str, ...] = ("new", "old", "breaks", "further", "waits", "completes", "unrehearsed")


@dataclass(frozen=True)
class ResumeVerdict:
    """One run's resume as rehearsed: ``path`` (one of ``RESUME_PATHS``) and the sentence saying why."""

    path: str
    text: str


def resume_verdict(result: ReplayResult, impact: WorkflowImpact, not_reached: bool = True) -> ResumeVerdict:
    """``result``'s resume as its rehearsal says (``not_reached``: it has not reached the type's first change)."""
    rehearsal = result.rehearsal
    if rehearsal is None:
        why = next((note for note in result.notes if "rehears" in note), "")
        return ResumeVerdict("unrehearsed", "replay-only verdict: the engine's resume was not rehearsed"
                             + (f" ({why})" if why else ""))
    if rehearsal.outcome == "breaks":
        return ResumeVerdict("breaks", f"the engine refuses the resume: {rehearsal.error or 'no reason given'}")
    changed = {(group.issued.kind, group.issued.name) for group in impact.groups if group.issued is not None}
    # A command some engines name by position only (a Temporal timer: '' in a divergence, its sequence number
    # in a rehearsal) is matched by its kind.
    unnamed = {kind for kind, name in changed if not name}
    new = next((view for view in rehearsal.commands if (view.kind, view.name) in changed or view.kind in unnamed), None)
    if new is not None:
        return ResumeVerdict("new", f"take the new path: the engine issues {command_text(new)} next")
    # A command the engine marks as absent from the code the run was recorded with (a LangGraph node added to
    # the graph since the import): the run takes the new path though no replay diverged.
    added = next((view for view in rehearsal.commands if view.detail.get("added") is True), None)
    if added is not None:
        return ResumeVerdict("new", f"take the new path: the engine issues {command_text(added)} next, which the code "
                                    "the run was recorded with did not have")
    guarded = _guarded_path(rehearsal, impact)
    if guarded is not None:
        return guarded
    refused = [decision for decision in rehearsal.patch_decisions if not decision.taken and not decision.deprecated]
    if refused:
        because = rehearsal.note or f"the engine answers patch {refused[-1].patch_id!r} False for them"
        return ResumeVerdict("old", f"take the old path: {because}")
    # A marker the engine records past the history: the run takes the guarded new path from there.
    # (A marker recorded in the history has its position there; one the engine records on resume is past the
    # history's events, or has no position yet.)
    marked = [decision for decision in rehearsal.patch_decisions
              if decision.taken and (decision.position is None or decision.position > result.events)]
    if marked:
        return ResumeVerdict("new", f"take the new path: the engine answers patch {marked[0].patch_id!r} True for them")
    if rehearsal.commands:
        further = "; the change lies further on" if impact.groups and not_reached else ""
        return ResumeVerdict("further", f"resume cleanly: the engine issues {command_text(rehearsal.commands[0])} "
                                        f"next{further}")
    if rehearsal.outcome == "waits":
        return ResumeVerdict("waits", "resume and wait again with no new command")
    tail = f": {rehearsal.note}" if rehearsal.note else ""
    return ResumeVerdict("completes", f"resume and finish{tail}")


def _guarded_path(rehearsal: Rehearsal, impact: WorkflowImpact) -> ResumeVerdict | None:
    """The path of a run whose rehearsal answered a check of a guard in the current code, when the guard's blocks
    say otherwise than the answer does (``if not patched(...)``): the block the first command past the history
    comes from, else the block the answer runs under the guard's test. None when they agree with the answer (the
    verdicts below say it) or cannot tell."""
    decisions = [decision for decision in rehearsal.patch_decisions
                 if not decision.deprecated and decision.patch_id in impact.guard_blocks]
    if not decisions:
        return None
    last = decisions[-1]
    blocks = impact.guard_blocks[last.patch_id]
    first = next((view for view in rehearsal.commands if view.kind not in ("patch", "marker")), None)
    source = first.detail.get("source") if first is not None else None
    if first is not None and not isinstance(source, str) and rehearsal.source is not None:
        source = f"{Path(rehearsal.source.path.replace(chr(92), '/')).name}:{rehearsal.source.line}"
    branch = blocks.branch_of(source)
    if branch is not None:
        how = f"the engine issues {command_text(first)} next, from the guard's {branch} block"
    else:
        branch = blocks.selected_by(last.taken)
        how = (f"the engine answers patch {last.patch_id!r} {last.taken} for them, which runs the guard's {branch} "
               "block under its test")
    if branch is None or branch == ("new" if last.taken else "old"):
        return None
    return ResumeVerdict(branch, f"take the {branch} path: {how}")


def attach_guard_blocks(impacts: Sequence[WorkflowImpact], files: Iterable[Path]) -> None:
    """Find, in the current code's ``files``, the blocks of each guard whose check the in-flight runs' rehearsals
    answered (``WorkflowImpact.guard_blocks``); a file that cannot be read is left out (its guards are judged by
    the engine's answer alone)."""
    texts: dict[Path, str] = {}
    for path in files:
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    for impact in impacts:
        ids = {decision.patch_id for result in in_flight_green(impact) if result.rehearsal is not None
               for decision in result.rehearsal.patch_decisions}
        for patch_id in sorted(ids):
            blocks = guard_branches(texts, patch_id)
            if blocks is not None:
                impact.guard_blocks[patch_id] = blocks


def in_flight_green(impact: WorkflowImpact) -> list[ReplayResult]:
    """The in-flight runs of ``impact`` that replay green: not reached by a change, or past every change."""
    return [*impact.not_reached, *(result for result in impact.unaffected if result.in_flight)]


def resume_groups(impact: WorkflowImpact) -> list[tuple[ResumeVerdict, list[ReplayResult]]]:
    """The in-flight runs of ``impact`` that replay green, by their resume verdict, worst first (breaks, then
    unrehearsed, then the rest in ``RESUME_PATHS`` order), runs in report order."""
    grouped: dict[ResumeVerdict, list[ReplayResult]] = {}
    not_reached = {id(result) for result in impact.not_reached}
    for result in in_flight_green(impact):
        grouped.setdefault(resume_verdict(result, impact, id(result) in not_reached), []).append(result)
    rank = {"breaks": 0, "unrehearsed": 1}
    return sorted(grouped.items(), key=lambda item: (rank.get(item[0].path, 2), RESUME_PATHS.index(item[0].path),
                                                      item[0].text, run_id(item[1][0])))
