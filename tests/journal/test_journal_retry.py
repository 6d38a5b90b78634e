"""Step retries: backoff with jitter, exhaustion, non-retryable errors, total and per-attempt timeouts."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from journal_clock import FakeClock

from replaytest.journal import Journal, RetryPolicy, StepFailed, Worker, workflow
from replaytest.journal.retry import Timing, call_with_retry


class Flaky:
    def __init__(self, failures: int, error: type[Exception] = ConnectionError) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self, value: int) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error(f"attempt {self.calls} failed")
        return value * 10


def _run(journal: Journal, clock: FakeClock, fn, policy: RetryPolicy):
    @workflow(name="retrying")
    def retrying(ctx, value):
        return ctx.step("flaky", fn, value, retry=policy)

    run_id = journal.start(retrying, 4)
    Worker(journal, [retrying], "w", timing=clock.timing()).run_until_idle()
    return run_id


def test_retries_until_success_with_exponential_backoff(journal: Journal, clock: FakeClock) -> None:
    flaky = Flaky(failures=3)
    policy = RetryPolicy(max_attempts=5, initial_interval=1.0, backoff=2.0, jitter=0.0)
    run_id = _run(journal, clock, flaky, policy)
    assert journal.status(run_id) == "completed"
    assert journal.result(run_id) == 40
    assert flaky.calls == 4
    assert clock.sleeps == [1.0, 2.0, 4.0]
    assert journal.export(run_id).events[0].result == 40


def test_exhausted_retries_fail_the_run_with_the_recorded_error(journal: Journal, clock: FakeClock) -> None:
    flaky = Flaky(failures=10)
    run_id = _run(journal, clock, flaky, RetryPolicy(max_attempts=3, jitter=0.0))
    assert flaky.calls == 3
    assert journal.status(run_id) == "failed"
    history = journal.export(run_id)
    assert history.events[0].error is not None
    assert (history.events[0].error.type, history.events[0].error.message) == ("ConnectionError", "attempt 3 failed")
    assert history.error is not None and history.error.type == "StepFailed"
    assert history.error.message == "step 'flaky' failed: ConnectionError: attempt 3 failed"


def test_non_retryable_error_stops_at_first_attempt(journal: Journal, clock: FakeClock) -> None:
    flaky = Flaky(failures=10, error=PermissionError)
    run_id = _run(journal, clock, flaky, RetryPolicy(max_attempts=5, non_retryable=(PermissionError,)))
    assert flaky.calls == 1
    assert clock.sleeps == []
    assert journal.status(run_id) == "failed"


def test_total_timeout_caps_elapsed_time(journal: Journal, clock: FakeClock) -> None:
    flaky = Flaky(failures=100)
    policy = RetryPolicy(max_attempts=100, initial_interval=1.0, backoff=2.0, jitter=0.0, total_timeout=10.0)
    _run(journal, clock, flaky, policy)
    # pauses 1, 2, 4 (elapsed 7); the next pause of 8 would end past 10 s
    assert clock.sleeps == [1.0, 2.0, 4.0]
    assert flaky.calls == 4


def test_jitter_and_max_interval_bound_the_pause() -> None:
    policy = RetryPolicy(initial_interval=1.0, backoff=3.0, max_interval=5.0, jitter=0.2)
    rng = random.Random(1)
    pauses = [policy.pause(attempt, rng) for attempt in (1, 2, 3, 4) for _ in range(50)]
    assert all(0.8 <= p <= 1.2 for p in pauses[:50])
    assert all(2.4 <= p <= 3.6 for p in pauses[50:100])
    assert all(4.0 <= p <= 6.0 for p in pauses[100:])
    assert len(set(pauses[:50])) > 1


def test_attempt_timeout_abandons_a_slow_sync_attempt() -> None:
    calls = []

    def slow() -> str:
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.5)
        return "fast"

    timing = Timing(sleep=lambda _: None)
    started = time.monotonic()
    assert call_with_retry("slow", slow, (), {}, RetryPolicy(max_attempts=2, attempt_timeout=0.05), timing) == "fast"
    assert time.monotonic() - started < 0.4
    with pytest.raises(StepFailed) as caught:
        call_with_retry("slow", lambda: time.sleep(0.3), (), {}, RetryPolicy(max_attempts=1, attempt_timeout=0.02), timing)
    assert caught.value.error_type == "StepTimeout"


def test_async_step_retries_and_times_out(journal: Journal, clock: FakeClock) -> None:
    attempts = []

    async def sometimes_slow(value: int) -> int:
        attempts.append(value)
        if len(attempts) == 1:
            await asyncio.sleep(1.0)
        return value + 1

    @workflow(name="async-retry")
    async def async_retry(ctx, value):
        return await ctx.step("slow", sometimes_slow, value, retry=RetryPolicy(max_attempts=2, attempt_timeout=0.05))

    run_id = journal.start(async_retry, 1)
    Worker(journal, [async_retry], "w", timing=clock.timing()).run_until_idle()
    assert journal.result(run_id) == 2
    assert attempts == [1, 1]


def test_code_that_catches_step_failed_sees_the_same_failure_on_resume(journal: Journal, clock: FakeClock) -> None:
    flaky = Flaky(failures=10, error=ValueError)

    @workflow(name="catching")
    def catching(ctx, _):
        try:
            ctx.step("bad", flaky, 1, retry=RetryPolicy(max_attempts=1))
        except StepFailed as failure:
            outcome = failure.error_type
        ctx.sleep(60)
        return outcome

    run_id = journal.start(catching, None)
    worker = Worker(journal, [catching], "w", timing=clock.timing())
    worker.run_until_idle()
    assert journal.status(run_id) == "parked"
    clock.advance(61)
    worker.run_until_idle()
    assert journal.result(run_id) == "ValueError"
    assert flaky.calls == 1  # the failure was answered from the journal on resume
