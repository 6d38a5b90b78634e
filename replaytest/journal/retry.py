"""Per-step retry policy and the loops that apply it (sync and async).

Retries belong to steps, not to orchestration code: the loop runs inside the step's thunk, so the
journal records one outcome per step — the result of the attempt that succeeded, or the error that
ended the loop (``StepFailed``). Backoff jitter and attempt timing are the step executor's business;
orchestration code never sees them, so they need not be deterministic.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from replaytest.journal.errors import StepFailed, StepTimeout


@dataclass(frozen=True)
class RetryPolicy:
    """How a step is retried.

    Attempt ``n`` (1-based) that fails with a retryable error is followed by a pause of
    ``min(initial_interval * backoff ** (n - 1), max_interval)``, spread by ±``jitter`` (a fraction).
    Retrying stops after ``max_attempts``, at the first error that is an instance of one of
    ``non_retryable``, or when the next pause would end beyond ``total_timeout`` seconds after the first
    attempt started. ``attempt_timeout`` bounds one attempt (a sync step keeps running in its thread
    after timing out — Python cannot stop it — but its result is discarded).
    """

    max_attempts: int = 3
    initial_interval: float = 1.0
    backoff: float = 2.0
    max_interval: float = 60.0
    jitter: float = 0.1
    non_retryable: tuple[type[BaseException], ...] = ()
    total_timeout: float | None = None
    attempt_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be at least 1")
        if not 0 <= self.jitter < 1:
            raise ValueError("RetryPolicy.jitter must be in [0, 1)")

    def pause(self, attempt: int, rng: random.Random) -> float:
        """The pause after failed attempt ``attempt`` (1-based)."""
        base = min(self.initial_interval * self.backoff ** (attempt - 1), self.max_interval)
        return max(0.0, base * (1 + rng.uniform(-self.jitter, self.jitter)))


NO_RETRY = RetryPolicy(max_attempts=1)
DEFAULT_RETRY = RetryPolicy()


@dataclass
class Timing:
    """Injected clock and sleep, so tests can run backoff without waiting."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random | None = None

    def random(self) -> random.Random:
        if self.rng is None:
            self.rng = random.Random()
        return self.rng


def _should_stop(policy: RetryPolicy, error: BaseException, attempt: int, started: float, pause: float, now: float) -> bool:
    if isinstance(error, policy.non_retryable) or attempt >= policy.max_attempts:
        return True
    return policy.total_timeout is not None and now + pause - started > policy.total_timeout


def _failed(step: str, error: BaseException, attempts: int) -> StepFailed:
    failure = StepFailed(step, type(error).__name__, str(error), attempts)
    failure.__cause__ = error
    return failure


def call_with_retry(step: str, fn: Callable[..., Any], args: tuple, kwargs: dict, policy: RetryPolicy, timing: Timing) -> Any:
    """Run ``fn(*args, **kwargs)`` under ``policy``; raise ``StepFailed`` when it gives up."""
    started = timing.clock()
    attempt = 0
    while True:
        attempt += 1
        try:
            if policy.attempt_timeout is None:
                return fn(*args, **kwargs)
            return _call_with_timeout(fn, args, kwargs, policy.attempt_timeout)
        except Exception as error:
            pause = policy.pause(attempt, timing.random())
            if _should_stop(policy, error, attempt, started, pause, timing.clock()):
                raise _failed(step, error, attempt) from error
            timing.sleep(pause)


def _call_with_timeout(fn: Callable[..., Any], args: tuple, kwargs: dict, timeout: float) -> Any:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="replaytest-step")
    try:
        future = pool.submit(fn, *args, **kwargs)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise StepTimeout(f"attempt exceeded {timeout} s") from None
    finally:
        pool.shutdown(wait=False)


async def call_with_retry_async(
    step: str, fn: Callable[..., Awaitable[Any]], args: tuple, kwargs: dict, policy: RetryPolicy, timing: Timing
) -> Any:
    """The async twin of ``call_with_retry``: ``fn`` returns an awaitable; pauses use ``asyncio.sleep``
    unless the timing's sleep was replaced (tests)."""
    started = timing.clock()
    attempt = 0
    while True:
        attempt += 1
        try:
            if policy.attempt_timeout is None:
                return await fn(*args, **kwargs)
            try:
                return await asyncio.wait_for(fn(*args, **kwargs), policy.attempt_timeout)
            except asyncio.TimeoutError:
                raise StepTimeout(f"attempt exceeded {policy.attempt_timeout} s") from None
        except Exception as error:
            pause = policy.pause(attempt, timing.random())
            if _should_stop(policy, error, attempt, started, pause, timing.clock()):
                raise _failed(step, error, attempt) from error
            if timing.sleep is time.sleep:
                await asyncio.sleep(pause)
            else:
                timing.sleep(pause)
