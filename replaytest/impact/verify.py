"""Proof before offer: a version guard is replayed before a report calls it verified.

``verify_impacts`` copies what the replay needs of the project into a temporary folder (``impact.project_copy``:
Python files, configuration, package data, the files the replay read; never secrets, version control, tools'
folders, files over the size cap, or the histories, which are replayed where they are), writes the guarded
files into the copy, and replays every history of the workflow type against it in a child process
(``python -m replaytest replay --format json --workflows …`` with the copy's workflow folder as working
directory and first on ``PYTHONPATH``), so the guarded module is the one imported and nothing of the current
process's imports leaks in. Bytecode is not written, so a rewritten file is never served from a stale ``.pyc``.
The child runs in a process group of its own, and a SIGTERM while the copy exists is handled as Ctrl-C: copy
removed, child's group ended (``impact.termination``).

At most one replay per history per candidate: all guards of a workflow type are verified together first;
only when that fails is each replayed alone, to say which one does not hold. A history of a group that has
no guard in the candidate (no guard found, or another guard when one is replayed alone) is expected to
break still; when it does it is left out of the count, and a note says so.

New runs take the new path: rehearsed, not argued. The same child replay starts a fresh run of each workflow
type with a guard (``replay --fresh-run PATCH_ID``), with the engine's own code, from the input of one of its
histories (a finished one first), every effect answered with that history's recorded results, until the
guard's patch check is answered and the command after it issued (``ReplayResult.fresh_run``).
``fresh_run_verdicts`` reads it: the check answered True and the new branch's first command (a group's
``issued`` command) came next is ``new path``; anything else (the check answered False, the old branch's
command came next, the run never reached the check, the fresh run could not be made) keeps the guard from
being verified, and ``Verification.fresh_runs`` says why.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from replaytest.impact.guards import compose_guards
from replaytest.impact.model import FreshRun, Guard, GuardBranches, ImpactGroup, Verification, WorkflowImpact
from replaytest.impact.project_copy import ProjectCopy
from replaytest.impact.termination import run_child, sigterm_as_interrupt
from replaytest.replay.divergence import FRESH_RUN_NOTE_PREFIX, ReplayResult
from replaytest.replay.report import display_path

# Command lines stay well below the kernel's limit (a few MB); more histories take more child replays.
_MAX_ARGUMENT_BYTES = 512 * 1024


def replay_in_copy(
    copy: ProjectCopy, histories: Sequence[Path], workflow_specs: Sequence[str], workflows_base: Path,
    timeout_s: float | None = None, rehearsals: dict[Path, dict[str, Any]] | None = None,
    fresh_run: Sequence[str] = (), fresh_runs: dict[Path, dict[str, Any]] | None = None,
) -> dict[Path, str | None]:
    """Replay ``histories`` against the copy in child processes, rehearsing each in-flight run's resume on
    the engine (``replay --rehearse``); for each (resolved) history, None when it replayed green and the
    engine accepted its resume, else why not (the divergence message, the engine's refusal, the error, or
    the child's failure). ``rehearsals`` receives each rehearsal's JSON by history. With ``fresh_run`` (patch
    ids) the child also rehearses a fresh run per workflow type up to those checks (``replay --fresh-run``);
    ``fresh_runs`` receives, by the history whose input started it, the fresh run's JSON (``{"run": …}``,
    None when the engine made none) and the child's notes on it (``{"notes": […]}``)."""
    base = workflows_base.resolve()
    cwd = copy.inside(base) if base.is_relative_to(copy.root) else copy.path
    cwd.mkdir(parents=True, exist_ok=True)  # a folder the copy took nothing from is not in it
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    outcome: dict[Path, str | None] = {}
    for batch in _batches([path.resolve() for path in histories]):
        command = [sys.executable, "-m", "replaytest", "replay", "--format", "json", "--quiet", "--rehearse"]
        for spec in workflow_specs:
            command += ["--workflows", spec]
        for patch_id in fresh_run:
            command += ["--fresh-run", patch_id]
        command += [str(path) for path in batch]
        try:
            run = run_child(command, cwd=cwd, env=env, timeout_s=timeout_s)
        except subprocess.TimeoutExpired:
            outcome.update({path: f"the verification replay took longer than {timeout_s} s" for path in batch})
            continue
        try:
            document = json.loads(run.stdout)
        except json.JSONDecodeError:
            why = (run.stderr.strip().splitlines() or [f"exit code {run.returncode}"])[-1]
            outcome.update({path: f"the verification replay did not run: {why}" for path in batch})
            continue
        seen = set()
        for entry in document.get("results", []):
            path = Path(entry["history"])
            path = (path if path.is_absolute() else cwd / path).resolve()
            seen.add(path)
            outcome[path] = None if entry["status"] == "passed" else _why(entry)
            fresh = entry.get("fresh_run")
            fresh_notes = [note for note in entry.get("notes", []) if note.startswith(FRESH_RUN_NOTE_PREFIX)]
            if fresh_runs is not None and (isinstance(fresh, dict) or fresh_notes):
                fresh_runs[path] = {"run": fresh if isinstance(fresh, dict) else None, "notes": fresh_notes}
            rehearsal = entry.get("rehearsal")
            if isinstance(rehearsal, dict):
                if rehearsals is not None:
                    rehearsals[path] = rehearsal
                if outcome[path] is None and rehearsal.get("outcome") == "breaks":
                    outcome[path] = f"the engine refuses to resume it on the guarded code: {rehearsal.get('error')}"
        outcome.update({path: "the verification replay did not report it" for path in batch if path not in seen})
    return outcome


def _why(entry: dict) -> str:
    divergence = entry.get("divergence")
    if divergence:
        where = f" at event #{divergence['position']}" if divergence.get("position") is not None else ""
        return f"{divergence['kind']}{where}: {divergence['message']}"
    return f"{entry['status']}: {entry.get('error') or 'no reason given'}"


def _batches(paths: list[Path]) -> list[list[Path]]:
    batches: list[list[Path]] = [[]]
    size = 0
    for path in paths:
        length = len(str(path)) + 1
        if batches[-1] and size + length > _MAX_ARGUMENT_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(path)
        size += length
    return [batch for batch in batches if batch]


def _unique_guards(impact: WorkflowImpact) -> list[Guard]:
    guards: list[Guard] = []
    for group in impact.groups:
        if group.guard is not None and all(known is not group.guard for known in guards):
            guards.append(group.guard)
    return guards


def _resume_paths(
    choice: Sequence[tuple[ImpactGroup, Guard]], in_flight: Sequence[Path], rehearsals: dict[Path, dict[str, Any]],
    texts: dict[Path, str] | None = None,
) -> list[tuple[Path, str]]:
    """The path each in-flight history takes under the guards of ``choice`` when the engine resumes it, judged
    as a fresh run is: by the guard block (``guard_branches`` of the guarded ``texts``) holding the line of the
    first command the rehearsal issued past the history; when that command lies outside the guard (or there is
    none), by the block the engine's last answer to the check selects under the guard's test (a negated check
    sends a True answer to the ``else:``); the answer alone only when the test is neither."""
    ids = {guard.patch_id for _group, guard in choice if guard.kind == "patch"}
    if not ids:
        return []  # a kept name has no patch check: every run takes the one path
    paths = []
    for path in in_flight:
        rehearsal = rehearsals.get(path.resolve())
        if rehearsal is None:
            paths.append((path, "not rehearsed (replay-only verdict)"))
            continue
        answers = [decision for decision in rehearsal.get("patch_decisions", []) if decision.get("patch_id") in ids]
        if not answers:
            paths.append((path, "does not reach the guard in its next step"))
            continue
        taken = bool(answers[-1].get("taken"))
        branches = guard_branches(texts or {}, str(answers[-1].get("patch_id")))
        branch = branches.branch_of(_first_command_source(rehearsal)) if branches is not None else None
        if branch is None and branches is not None:
            branch = branches.selected_by(taken)
        paths.append((path, f"{branch or ('new' if taken else 'old')} path"))
    return paths


def _first_command_source(rehearsal: dict[str, Any]) -> str | None:
    """``flow.py:12``: the line of the first command a rehearsal issued past the history (a patch marker left
    out): the command's own ``detail["source"]``, else the rehearsal's ``source`` (the first command's line)."""
    commands = [view for view in rehearsal.get("commands", []) if _patch_view(view) is None and view.get("kind") != "patch"]
    if not commands:
        return None
    source = (commands[0].get("detail") or {}).get("source")
    if isinstance(source, str):
        return source
    where = rehearsal.get("source")
    if isinstance(where, dict) and where.get("path") and where.get("line") is not None:
        return f"{str(where['path']).replace(chr(92), '/').rsplit('/', 1)[-1]}:{where['line']}"
    return None


def _patch_view(view: dict[str, Any]) -> str | None:
    """The patch id of a fresh run's command when it is a patch marker, else None."""
    detail = view.get("detail") or {}
    patch_id = detail.get("patch_id")
    return patch_id if view.get("kind") in ("patch", "marker") and isinstance(patch_id, str) else None


def _command_words(view: dict[str, Any]) -> str:
    """``activity 'charge' (flow.py:12)``: a fresh run's command as a report names it."""
    source = (view.get("detail") or {}).get("source")
    name = view.get("name")
    words = f"{view.get('kind')} {name!r}" if name else str(view.get("kind"))
    return f"{words} ({source})" if source else words


def _matches(view: dict[str, Any], commands: set[tuple[str, str]]) -> bool:
    """The command is one of ``commands``; a command a divergence names by kind alone (a Temporal timer: '' there,
    its sequence number in a rehearsal) matches by kind."""
    kind, name = str(view.get("kind")), str(view.get("name"))
    return (kind, name) in commands or (kind, "") in commands


def guard_branches(texts: dict[Path, str], patch_id: str) -> GuardBranches | None:
    """The blocks of the ``if`` statements whose test names ``patch_id`` (a string literal) in the guarded files;
    None when no file has one. The ``if`` body is the guard's new block whatever its test says, so a test that
    sends a new run elsewhere (``if not patched(...)``) shows as a new run issuing from the old block."""
    for path, text in texts.items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        new: list[tuple[int, int]] = []
        old: list[tuple[int, int]] = []
        selected: set[str | None] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and any(isinstance(part, ast.Constant) and part.value == patch_id
                                                for part in ast.walk(node.test)):
                new.append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno))
                if node.orelse:
                    old.append((node.orelse[0].lineno, node.orelse[-1].end_lineno or node.orelse[-1].lineno))
                selected.add(_block_when_taken(node.test))
        if new:
            return GuardBranches(path.name, tuple(new), tuple(old), selected.pop() if len(selected) == 1 else None)
    return None


def _block_when_taken(test: ast.expr) -> str | None:
    """The block a True answer runs under ``test``: ``new`` for a bare check (``patched(...)``, ``await
    DBOS.patch_async(...)``), ``old`` for a negated one (``not patched(...)``), None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _block_when_taken(test.operand)
        return None if inner is None else ("old" if inner == "new" else "new")
    if isinstance(test, ast.Await):
        test = test.value
    return "new" if isinstance(test, ast.Call) else None


def fresh_run_verdicts(
    choice: Sequence[tuple[ImpactGroup, Guard]], fresh_runs: dict[Path, dict[str, Any]],
    texts: dict[Path, str] | None = None,
) -> list[FreshRun]:
    """For each patch guard of ``choice``: the path its check sends a new run of the guarded code down, as the
    engine's fresh run (``ReplayResult.fresh_run``, by the history whose input started it) says. ``new path``
    only when the check answered True and the command right after it came from the guard's new block (its line
    in the ``if`` body of the guarded ``texts``), or, issued from elsewhere (a helper), is a covered group's
    ``issued`` command (when no group names one: any command the old branch did not issue there)."""
    verdicts = []
    for guard in _distinct([guard for _group, guard in choice]):
        if guard.kind != "patch":
            continue  # a kept name has no check: every run, old and new, calls it by the recorded name
        source, found = _fresh_run_for(fresh_runs, guard.patch_id)
        run = found.get("run") if found else None
        groups = [group for group, chosen in choice if chosen is guard]
        new = {(group.issued.kind, group.issued.name) for group in groups if group.issued is not None}
        old = {(view.kind, view.name) for group in groups for view in group.recorded if view is not None} - new
        patch_id = guard.patch_id
        if run is None:
            why = "; ".join(found.get("notes", [])) if found else ""
            verdicts.append(FreshRun(patch_id, "not rehearsed", None, "the engine's fresh run of the guarded code "
                                     f"could not be made{f' ({why})' if why else ''}", source))
            continue
        driver = str(run.get("driver") or "")
        answers = [decision for decision in run.get("patch_decisions", []) if decision.get("patch_id") == patch_id]
        if not answers:
            how = {"completes": "ended", "waits": "waited", "breaks": "broke", "continues": "stopped"}.get(
                str(run.get("outcome")), str(run.get("outcome")))
            detail = run.get("error") or run.get("note")
            verdicts.append(FreshRun(patch_id, "does not reach the guard", None,
                                     f"a new run {how} before the check `{patch_id}` was evaluated"
                                     + (f" ({detail})" if detail else ""), source, driver))
            continue
        if not answers[0].get("taken"):
            verdicts.append(FreshRun(patch_id, "old path", None, f"the check `{patch_id}` answered False in a new run",
                                     source, driver))
            continue
        commands = list(run.get("commands", []))
        marker = next((index for index, view in enumerate(commands) if _patch_view(view) == patch_id), None)
        after = None if marker is None else next(
            (view for view in commands[marker + 1:] if _patch_view(view) is None), None)
        if after is None:
            path = "new path" if not new else "does not reach the guard"
            what = ("the new branch issues nothing there" if not new else
                    f"it issued no command after it ({run.get('outcome')}), where the new branch issues "
                    + " or ".join(f"{kind} {name!r}" for kind, name in sorted(new)))
            verdicts.append(FreshRun(patch_id, path, None, f"the check `{patch_id}` answered True in a new run; {what}",
                                     source, driver))
            continue
        words = _command_words(after)
        branches = guard_branches(texts or {}, patch_id)
        branch = branches.branch_of((after.get("detail") or {}).get("source")) if branches is not None else None
        if branch == "new":
            verdicts.append(FreshRun(patch_id, "new path", words, f"the check `{patch_id}` answered True in a new run, "
                                     f"which then issued {words}, from the guard's new block", source, driver))
        elif branch == "old":
            verdicts.append(FreshRun(patch_id, "old path", words, f"the check `{patch_id}` answered True in a new run, "
                                     f"but the run then issued {words}, from the guard's old block: the guard sends "
                                     "new runs down the old path", source, driver))
        elif _matches(after, new) or (not new and not _matches(after, old)):
            verdicts.append(FreshRun(patch_id, "new path", words, f"the check `{patch_id}` answered True in a new run, "
                                     f"which then issued {words}, the new branch's first command", source, driver))
        elif _matches(after, old):
            verdicts.append(FreshRun(patch_id, "old path", words, f"the check `{patch_id}` answered True in a new run, "
                                     f"but the run then issued {words}, the old branch's command: the guard sends new "
                                     "runs down the old path", source, driver))
        else:
            expected = " or ".join(f"{kind} {name!r}" for kind, name in sorted(new))
            verdicts.append(FreshRun(patch_id, "old path", words, f"the check `{patch_id}` answered True in a new run, "
                                     f"but the run then issued {words}, not the new branch's {expected}", source, driver))
    return verdicts


def _fresh_run_for(fresh_runs: dict[Path, dict[str, Any]], patch_id: str) -> tuple[Path | None, dict[str, Any] | None]:
    """The fresh run (by the history whose input started it) that answered ``patch_id``, else the first one made."""
    for source, found in fresh_runs.items():
        run = found.get("run")
        if isinstance(run, dict) and any(decision.get("patch_id") == patch_id for decision in run.get("patch_decisions", [])):
            return source, found
    return next(iter(fresh_runs.items()), (None, None))


def _verification(
    choice: Sequence[tuple[ImpactGroup, Guard]], impact: WorkflowImpact, histories: Sequence[Path],
    outcome: dict[Path, str | None], unchecked: int = 0, rehearsals: dict[Path, dict[str, Any]] | None = None,
    in_flight: Sequence[Path] = (), copy_notes: Sequence[str] = (),
    fresh_runs: dict[Path, dict[str, Any]] | None = None, texts: dict[Path, str] | None = None,
) -> Verification:
    """Count the replays of ``histories`` with the guards of ``choice`` (group, the guard tried for it)
    applied; histories of groups no guard of the choice covers that still break are left out, with a note.
    ``copy_notes``: what the copy lacks that the replay read (``ProjectCopy.notes``)."""
    covered = {id(group) for group, _guard in choice}
    expected_to_break: set[Path] = set()
    for group in impact.groups:
        if id(group) not in covered:
            expected_to_break.update(r.history_path.resolve() for r in (*group.in_flight, *group.finished, *group.unknown_status))
    counted, passed, left_out = 0, 0, 0
    failing: list[tuple[Path, str]] = []
    for path in histories:
        why = outcome.get(path.resolve(), "the verification replay did not report it")
        if why is not None and path.resolve() in expected_to_break:
            left_out += 1
            continue
        counted += 1
        if why is None:
            passed += 1
        else:
            failing.append((path, why))
    notes = []
    if left_out:
        notes.append(f"{left_out} {'history' if left_out == 1 else 'histories'} of a change this guard does not cover "
                     "left out (they break at that change)")
    if unchecked:
        notes.append(f"{unchecked} {'history' if unchecked == 1 else 'histories'} of this workflow type could not be "
                     "checked before (error, stale) and were not replayed against the guard")
    notes.extend(copy_notes)
    resume = _resume_paths(choice, in_flight, rehearsals or {}, texts)
    fresh = fresh_run_verdicts(choice, fresh_runs or {}, texts) if fresh_runs is not None else []
    return Verification(histories=counted, passed=passed, failing=failing, notes=notes, resume=resume,
                        fresh_runs=fresh)


def _levels(impact: WorkflowImpact) -> list[list[tuple[ImpactGroup, Guard]]]:
    """The guards to try for a workflow type, narrowest first: level 0 is every group's own guard; each
    further level takes the next wider guard of each group (a group without one keeps its widest)."""
    guarded = [group for group in impact.groups if group.guard is not None]
    depth = max((len(group.wider_guards) for group in guarded), default=0)
    levels = []
    for level in range(depth + 1):
        choice = []
        for group in guarded:
            assert group.guard is not None
            ladder = [group.guard, *group.wider_guards]
            choice.append((group, ladder[min(level, len(ladder) - 1)]))
        levels.append(choice)
    return levels


def _distinct(guards: Sequence[Guard]) -> list[Guard]:
    unique: list[Guard] = []
    for guard in guards:
        if all(known is not guard for known in unique):
            unique.append(guard)
    return unique


def verify_impacts(
    impacts: Sequence[WorkflowImpact], results: Sequence[ReplayResult], *, root: Path,
    workflow_specs: Sequence[str], workflows_base: Path, timeout_s: float | None = None, reads: Collection[str] = (),
) -> None:
    """Set ``verification`` on every guard of ``impacts``. Per workflow type, all guards are replayed
    together against every history of that type; if that fails, the next wider guards of the same changes
    (the span of every changed statement, then the whole function body), until one level holds. If none
    does, each narrowest guard is replayed alone, so the report names what still fails. ``reads``: the files
    the replay of ``results`` read, which the copy takes too (``impact.project_copy``)."""
    pending = [impact for impact in impacts if _unique_guards(impact)]
    if not pending:
        return
    # SIGTERM (a cancelled CI job) unwinds like Ctrl-C while the copy exists: the copy is removed and the
    # running child replay ended before the process ends by the signal.
    with sigterm_as_interrupt():
        copy = ProjectCopy(root, (r.history_path for r in results), reads)
        try:
            _verify_each(pending, results, copy, workflow_specs, workflows_base, timeout_s)
        finally:
            copy.close()


def _verify_each(
    pending: Sequence[WorkflowImpact], results: Sequence[ReplayResult], copy: ProjectCopy,
    workflow_specs: Sequence[str], workflows_base: Path, timeout_s: float | None,
) -> None:
    copy_notes = copy.notes()
    for impact in pending:
        of_type = [r for r in results if r.workflow_type == impact.workflow_type and r.engine == impact.engine]
        # A history whose replay could not run before (error, stale) proves nothing about a guard.
        histories = [r.history_path for r in of_type if r.status in ("passed", "diverged")]
        in_flight = [r.history_path for r in of_type if r.status in ("passed", "diverged") and r.in_flight]
        unchecked = len(of_type) - len(histories)
        first_failure: Verification | None = None
        held = False
        for level, choice in enumerate(_levels(impact)):
            guards = _distinct([guard for _, guard in choice])
            texts = compose_guards(guards)
            copy.write(texts)
            rehearsals: dict[Path, dict[str, Any]] = {}
            fresh_runs: dict[Path, dict[str, Any]] = {}
            outcome = replay_in_copy(copy, histories, workflow_specs, workflows_base, timeout_s, rehearsals,
                                     _patch_ids(guards), fresh_runs)
            together = _verification(choice, impact, histories, outcome, unchecked, rehearsals, in_flight, copy_notes,
                                     fresh_runs, texts)
            if together.verified:
                if level and first_failure is not None:
                    together.notes.insert(0, _widened_note(first_failure))
                for group, guard in choice:
                    group.guard = guard
                    guard.verification = together
                held = True
                break
            first_failure = first_failure or together
        narrowest = _unique_guards(impact)
        if held:
            continue
        if len(narrowest) == 1 and first_failure is not None:
            narrowest[0].verification = first_failure  # already replayed alone, at level 0
            continue
        for guard in narrowest:
            texts = compose_guards([guard])
            copy.write(texts)
            rehearsals = {}
            fresh_runs = {}
            outcome = replay_in_copy(copy, histories, workflow_specs, workflows_base, timeout_s, rehearsals,
                                     _patch_ids([guard]), fresh_runs)
            alone = [(group, guard) for group in impact.groups if group.guard is guard]
            guard.verification = _verification(alone, impact, histories, outcome, unchecked, rehearsals, in_flight,
                                                copy_notes, fresh_runs, texts)


def _patch_ids(guards: Sequence[Guard]) -> list[str]:
    """The patch checks the child's fresh run is driven to: those of the patch guards (a kept name has none)."""
    return list(dict.fromkeys(guard.patch_id for guard in guards if guard.kind == "patch"))


def _widened_note(narrow: Verification) -> str:
    """Why the guard is wider than the changed block: what the narrowest guard left failing."""
    if not narrow.failing:
        return "widened: the changed block alone did not verify"
    path, why = narrow.failing[0]
    return f"widened: the changed block alone did not verify ({display_path(path)} still failed: {why})"
