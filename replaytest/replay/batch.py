"""Replaying many history files in one run: what the CLI's ``replay`` and ``check`` share around
``runner.replay_file`` — a coverage context per history and a progress callback after each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from replaytest.replay.adapter import HistoryReplayer, ReplayOptions, WorkflowSet
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
    advance: Callable[[ReplayResult], None] | None = None,
) -> list[ReplayResult]:
    """Replay ``files`` in order. ``measure`` (started by the caller) attributes each replay to its
    history's display path; ``advance`` is called after each file (progress bars)."""
    results = []
    for path in files:
        if measure is not None:
            with measure.history(display_path(path)):
                result = replay_file(path, replayers, workflows, options)
        else:
            result = replay_file(path, replayers, workflows, options)
        results.append(result)
        if advance is not None:
            advance(result)
    return results
