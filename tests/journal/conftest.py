"""Journal test helpers: a controllable clock and a journal on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from replaytest.journal import Journal, Timing


class FakeClock:
    """Epoch seconds that move only when told; ``sleep`` advances them (for retry backoff)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def timing(self) -> Timing:
        import random

        return Timing(clock=self, sleep=self.sleep, rng=random.Random(0))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def journal(tmp_path: Path, clock: FakeClock) -> Journal:
    with Journal(tmp_path / "journal.db", clock=clock) as opened:
        yield opened
