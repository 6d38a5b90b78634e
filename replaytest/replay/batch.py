"""Replaying many history files in one run: what the CLI's ``replay`` and ``check`` share around
``runner.replay_file`` — the incremental cache, a coverage context per history and a progress callback."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

from replaytest.replay import rehearsal
from replaytest.replay.adapter import HistoryReplayer, LoadedHistory, ReplayOptions, WorkflowSet
from replaytest.replay.cache import ReplayCache
from replaytest.replay.coverage import ReplayCoverage
from replaytest.replay.divergence import ReplayResult
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


def _read(path: Path, options: ReplayOptions) -> LoadedHistory | None:
    """The file read for the cache and the replay; None when it cannot be read or is over the size limit
    (the replay says why)."""
    try:
        return LoadedHistory.read(path, options)
    except OSError:
        return None
