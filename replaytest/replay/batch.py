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


# The most histories per patch id of one workflow type whose input a fresh run is tried from.
MAX_FRESH_SOURCES = 2


def fresh_run_sources(results: Sequence[ReplayResult], patch_ids: Sequence[str]) -> list[list[int]]:
    """Per workflow type, the indexes of the histories a fresh run may start from, in the order to try them: for
    each of ``patch_ids`` in turn, the (at most ``MAX_FRESH_SOURCES``) histories whose replay met that check (their
    input leads to the guard), then any history; within each, finished before in-flight (a finished input led to
    a whole run), green before diverged. Only histories that replayed (green or diverged) start one."""
    ranked: dict[tuple[str, str], list[tuple[tuple[int, int], int]]] = {}
    for index, result in enumerate(results):
        if result.status in ("passed", "diverged"):
            score = (0 if result.in_flight is False else 1, 0 if result.status == "passed" else 1)
            ranked.setdefault((result.engine, result.workflow_type), []).append((score, index))
    orders = []
    for entries in ranked.values():
        best = [index for _score, index in sorted(entries)]
        order: list[int] = []
        for patch_id in dict.fromkeys(patch_ids):
            reaching = [index for index in best
                        if any(decision.patch_id == patch_id for decision in results[index].patch_decisions)]
            order.extend(index for index in reaching[:MAX_FRESH_SOURCES] if index not in order)
        order.extend(index for index in best[:MAX_FRESH_SOURCES] if index not in order)
        orders.append(order)
    return orders


def _rehearse_fresh_runs(
    results: list[ReplayResult], replayers: Sequence[HistoryReplayer], workflows: WorkflowSet, options: ReplayOptions,
) -> None:
    """Rehearse fresh runs of each workflow type (``ReplayOptions.fresh_run``) from the inputs
    ``fresh_run_sources`` offers, until every patch id asked for has been answered by one: each fresh run that
    answers an id no earlier one did is kept on its history's result (guards on paths no one input takes, a
    paid and an unpaid branch, get one each); when none answers any, the first tried is kept, to say so. An
    engine with no patch API leaves them None."""
    starting = replace(options, fresh_start=True, rehearse=False)
    for candidates in fresh_run_sources(results, options.fresh_run):
        unanswered = set(options.fresh_run)
        first: tuple[int, ReplayResult] | None = None
        kept = False
        for index in candidates:
            if not unanswered:
                break
            reached = {decision.patch_id for decision in results[index].patch_decisions}
            if kept and not reached & unanswered:
                continue  # its input never met an unanswered check: a later candidate's may
            again = replay_file(results[index].history_path, replayers, workflows, starting)
            fresh = again.fresh_run
            answered = {decision.patch_id for decision in fresh.patch_decisions} & unanswered if fresh else set()
            if answered:
                _keep(results[index], again)
                unanswered -= answered
                kept = True
            elif first is None:
                first = (index, again)
            if fresh is None and again.status != "error" and not _fresh_note(again):
                break  # an engine with no patch API: no other history would do better
        if not kept and first is not None:
            _keep(results[first[0]], first[1])


def _fresh_note(result: ReplayResult) -> list[str]:
    return [note for note in result.notes if note.startswith(FRESH_RUN_NOTE_PREFIX)]


def _keep(result: ReplayResult, again: ReplayResult) -> None:
    """Put the fresh run ``again`` made from ``result``'s input on ``result``, with its notes."""
    result.fresh_run = again.fresh_run
    result.notes.extend(_fresh_note(again))
    if again.status == "error" and again.fresh_run is None:
        result.notes.append(f"{FRESH_RUN_NOTE_PREFIX}: the replay could not run ({again.error})")


def _read(path: Path, options: ReplayOptions) -> LoadedHistory | None:
    """The file read for the cache and the replay; None when it cannot be read or is over the size limit
    (the replay says why)."""
    try:
        return LoadedHistory.read(path, options)
    except OSError:
        return None
