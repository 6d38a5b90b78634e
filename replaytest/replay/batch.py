"""Replaying many history files in one run: what the CLI's ``replay`` and ``check`` share around
``runner.replay_file`` — the incremental cache, a coverage context per history and a progress callback."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from replaytest.replay import rehearsal
from replaytest.replay.adapter import HistoryReplayer, LoadedHistory, ReplayOptions, WorkflowSet
from replaytest.replay.cache import ReplayCache
from replaytest.replay.coverage import ReplayCoverage
from replaytest.replay.divergence import FRESH_RUN_NOTE_PREFIX, ReplayResult
from replaytest.replay.report import display_path
from replaytest.replay.runner import replay_file


def replay_many(
    files: Sequence[Path],
    replayers: Sequence[HistoryReplayer],
    workflows: WorkflowSet,
    options: ReplayOptions,
    *,
    measure: ReplayCoverage | None = None,
    cache: ReplayCache | None = None,
    advance: Callable[[ReplayResult | None], None] | None = None,
) -> list[ReplayResult]:
    """Replay ``files`` in order. ``measure`` (started by the caller) attributes each replay to its
    history's display path; ``cache`` skips histories green before with nothing changed (they get no
    result; ``cache.skipped`` counts them), watches what each replay reads and remembers new green ones;
    ``advance`` is called after each file (progress bars), with None for a skipped one."""
    results = []
    if options.rehearse:
        rehearsal.clear()
    for path in files:
        # With a cache the file is read here, once, for its key and its replay.
        loaded = _read(path, options) if cache is not None else None
        if cache is not None and cache.fresh(path, loaded):
            if advance is not None:
                advance(None)
            continue
        with cache.watching(path) if cache is not None else nullcontext():
            if measure is not None:
                with measure.history(display_path(path)):
                    result = replay_file(path, replayers, workflows, options, loaded)
            else:
                result = replay_file(path, replayers, workflows, options, loaded)
        results.append(result)
        if cache is not None:
            cache.remember(path, result, loaded)
        if advance is not None:
            advance(result)
    if options.rehearse:
        _rehearse_in_flight(results, replayers, workflows, options)
    if options.fresh_run:
        _rehearse_fresh_runs(results, replayers, workflows, options)
    return results


def _rehearse_in_flight(
    results: list[ReplayResult], replayers: Sequence[HistoryReplayer], workflows: WorkflowSet, options: ReplayOptions,
) -> None:
    """Rehearse the resume of every in-flight run that replayed green again, now that every history of the
    batch has been seen: a parked run gets a signal payload another run of its type recorded
    (``replay.rehearsal``). Only in-flight green runs replay twice."""
    for index, result in enumerate(results):
        if result.in_flight and result.status == "passed":
            results[index] = replay_file(result.history_path, replayers, workflows, options)


# The most histories of one workflow type whose input a fresh run is tried from, until one reaches the checks.
MAX_FRESH_SOURCES = 4


def fresh_run_sources(results: Sequence[ReplayResult], patch_ids: Sequence[str]) -> list[list[int]]:
    """Per workflow type, the indexes of the histories a fresh run may start from, best first: of those that
    replayed (green or diverged), the ones whose replay met one of ``patch_ids`` (their input leads to the
    guard), finished before in-flight (a finished input led to a whole run), green before diverged."""
    wanted = set(patch_ids)
    ranked: dict[tuple[str, str], list[tuple[tuple[int, int, int], int]]] = {}
    for index, result in enumerate(results):
        if result.status not in ("passed", "diverged"):
            continue
        reaches = any(decision.patch_id in wanted for decision in result.patch_decisions)
        score = (0 if reaches else 1, 0 if result.in_flight is False else 1, 0 if result.status == "passed" else 1)
        ranked.setdefault((result.engine, result.workflow_type), []).append((score, index))
    return [[index for _score, index in sorted(entries)][:MAX_FRESH_SOURCES] for entries in ranked.values()]


def _rehearse_fresh_runs(
    results: list[ReplayResult], replayers: Sequence[HistoryReplayer], workflows: WorkflowSet, options: ReplayOptions,
) -> None:
    """Rehearse one fresh run per workflow type (``ReplayOptions.fresh_run``) from the input of a history
    ``fresh_run_sources`` offers: the first whose fresh run answers every patch check asked for (else the
    first tried) is kept on that history's result. An engine with no patch API leaves it None."""
    starting = replace(options, fresh_start=True, rehearse=False)
    wanted = set(options.fresh_run)
    for candidates in fresh_run_sources(results, options.fresh_run):
        kept: tuple[int, ReplayResult] | None = None
        for index in candidates:
            again = replay_file(results[index].history_path, replayers, workflows, starting)
            if kept is None:
                kept = (index, again)
            fresh = again.fresh_run
            if fresh is not None and wanted <= {decision.patch_id for decision in fresh.patch_decisions}:
                kept = (index, again)
                break
            if fresh is None and not any(note.startswith(FRESH_RUN_NOTE_PREFIX) for note in again.notes) \
                    and again.status != "error":
                break  # an engine with no patch API: no other history would do better
        assert kept is not None
        index, again = kept
        results[index].fresh_run = again.fresh_run
        results[index].notes.extend(note for note in again.notes if note.startswith(FRESH_RUN_NOTE_PREFIX))
        if again.status == "error" and again.fresh_run is None:
            results[index].notes.append(f"{FRESH_RUN_NOTE_PREFIX}: the replay could not run ({again.error})")


def _read(path: Path, options: ReplayOptions) -> LoadedHistory | None:
    """The file read for the cache and the replay; None when it cannot be read or is over the size limit
    (the replay says why)."""
    try:
        return LoadedHistory.read(path, options)
    except OSError:
        return None
