"""Journal test fixtures: a controllable clock and a journal on it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from journal_clock import FakeClock

from replaytest.journal import Journal

# The crash experiment lives in fixtures/ (run as ``python -m fixtures.crash_experiment`` from the root);
# make it importable however pytest was started.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def journal(tmp_path: Path, clock: FakeClock) -> Journal:
    with Journal(tmp_path / "journal.db", clock=clock) as opened:
        yield opened
