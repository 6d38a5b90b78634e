"""Journal test fixtures: a controllable clock and a journal on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from journal_clock import FakeClock

from replaytest.journal import Journal


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def journal(tmp_path: Path, clock: FakeClock) -> Journal:
    with Journal(tmp_path / "journal.db", clock=clock) as opened:
        yield opened
