"""A controllable clock for journal tests: leases, timers and retry backoff without waiting."""

from __future__ import annotations

import random

from replaytest.journal import Timing


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
        return Timing(clock=self, sleep=self.sleep, rng=random.Random(0))
