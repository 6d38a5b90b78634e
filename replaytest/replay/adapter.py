"""The interface a framework implements to replay its histories: ``HistoryReplayer``.

A replayer replays one history file against the current code. Neutral histories reach the replayer
whose ``engine`` equals their ``workflow.engine`` (the runner reads it); an engine's native format is
recognised by the replayer's ``sniff`` on the first bytes (cheap enough for collecting thousands of
files; a replayer of neutral histories only returns False). The current code is a
``WorkflowSet``: the objects named by ``replay_workflows`` / ``[tool.replaytest.replay] workflows`` and
returned by the ``pytest_replaytest_workflows`` hook; each replayer picks the objects it understands.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from replaytest.config import HazardPolicy, PromptPolicy
from replaytest.history import History, HistoryError, load_history
from replaytest.replay.divergence import IN_FLIGHT_STATUSES, ReplayResult


@dataclass(frozen=True)
class ReplayOptions:
    """How strict a replay is. Prompt policy is per history status: a running or parked task would resume
    under the new prompt (fail by default); a completed one only documents the change (warn)."""

    prompts_running: PromptPolicy = "fail"
    prompts_completed: PromptPolicy = "warn"
    # A prompt a running/parked run has not reached yet whose version differs from the run's manifest.
    prompts_pending: PromptPolicy = "fail"
    strict_args: bool = False
    details: bool = False
    # A clock/random/uuid read in orchestration code (``nondeterministic-call``): fail, or warn.
    hazards: HazardPolicy = "fail"

    def prompt_policy(self, status: str) -> PromptPolicy:
        return self.prompts_running if status in IN_FLIGHT_STATUSES else self.prompts_completed


@dataclass(frozen=True)
class WorkflowSet:
    """The current code to replay against: any objects (functions, classes, configuration objects)."""

    objects: Sequence[Any] = field(default_factory=tuple)
    origins: Sequence[str] = field(default_factory=tuple)  # the module:attr each object came from


@runtime_checkable
class HistoryReplayer(Protocol):
    engine: str

    def sniff(self, head: bytes) -> bool:
        """True if a file starting with ``head`` (up to 64 KiB) is in this engine's native history format."""

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        """Replay one history file; never raises for a divergence or a stale type (see ReplayResult)."""


def replay_neutral_file(
    path: Path, engine: str, replay_history: Callable[[History, Path], ReplayResult]
) -> ReplayResult:
    """Load a neutral history and replay it with ``replay_history``, timed, the result carrying the run's
    recorded ``status``; a file that does not load is an ``error`` result naming the loader's reason (file
    and JSON path), never an exception."""
    started = time.perf_counter()
    try:
        history = load_history(path)
    except HistoryError as error:
        return ReplayResult(path, engine, "?", status="error", error=str(error))
    result = replay_history(history, path)
    result.run_status = history.status
    result.duration_s = time.perf_counter() - started
    return result
