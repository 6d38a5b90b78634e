"""Fixtures for the Temporal plugin tests: the recorded histories and a replay helper.

The workflow modules (``temporal_wf_*.py``) sit next to the tests and must be importable by their own
name, because the Temporal sandbox re-imports a workflow's module when it runs it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

HERE = Path(__file__).resolve().parent
HISTORIES = HERE / "histories"

if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# No guard for a missing temporalio here: it is part of the test extra, and in this project's own suite
# a missing test dependency must fail (each test module then fails to import), never shrink the suite.
# tests/test_test_dependencies.py names the missing distribution.

from replaytest.plugins.temporal.replayer import TemporalReplayer  # noqa: E402
from replaytest.replay.adapter import ReplayOptions, WorkflowSet  # noqa: E402
from replaytest.replay.divergence import ReplayResult  # noqa: E402


@pytest.fixture(scope="session")
def histories() -> Path:
    return HISTORIES


@pytest.fixture(scope="session")
def temporal_replayer() -> Iterator[TemporalReplayer]:
    replayer = TemporalReplayer()
    yield replayer
    replayer.close()


@pytest.fixture
def replay(temporal_replayer: TemporalReplayer) -> Callable[..., ReplayResult]:
    """``replay("hello_timer_history.json", Hello)``: replay one shared history against the objects."""

    def run(history: str | Path, *objects: Any, details: bool = False) -> ReplayResult:
        path = history if isinstance(history, Path) else HISTORIES / history
        return temporal_replayer.replay(path, WorkflowSet(tuple(objects)), ReplayOptions(details=details))

    return run


@pytest.fixture
def sdk_verdict() -> Callable[[Path, type], str]:
    """``sdk_verdict(path, Workflow)``: ``passed`` or ``diverged``, as temporalio's own ``Replayer`` judges the
    history against the class — the truth replaytest's verdict is checked against."""

    def judge(path: Path, workflow: type) -> str:
        import asyncio

        from temporalio.client import WorkflowHistory
        from temporalio.worker import Replayer
        from temporalio.workflow import NondeterminismError

        history = WorkflowHistory.from_json("sdk-verdict", path.read_text(encoding="utf-8"))
        result = asyncio.run(Replayer(workflows=[workflow]).replay_workflow(history, raise_on_replay_failure=False))
        if result.replay_failure is None:
            return "passed"
        assert isinstance(result.replay_failure, NondeterminismError), result.replay_failure
        return "diverged"

    return judge
