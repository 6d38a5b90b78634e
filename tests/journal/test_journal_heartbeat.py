"""The lease heartbeat: a step far longer than the lease keeps its run against a second worker; a
heartbeat that finds the run taken over stops, and the slow worker records nothing and starts no further
effect; an execution that ends (even by a crash) stops renewing.

These tests use real clocks and threads. A renewal may be late by two thirds of a lease before the lease
lapses, waits for a condition poll with a deadline of seconds, and nothing asserts that something
happened *within* a short time — only after it, or never.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from journal_clock import FakeClock

from replaytest.history import Event
from replaytest.journal import NO_RETRY, Heartbeat, Journal, RetryPolicy, StaleLeaseError, Worker, workflow
from replaytest.journal.retry import Timing

LEASE_S = 0.75  # renewed every 0.25 s; it lapses only if a renewal is 0.5 s late
STEP_S = 3.2 * LEASE_S


class Crash(BaseException):
    """Stands in for the process dying mid-step."""


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _lease_row(path: Path, run_id: str) -> tuple[int, str | None, float | None]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT lease_epoch, lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        db.close()


def _event_epochs(path: Path, run_id: str) -> list[tuple[int, str, int]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT seq, name, epoch FROM events WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    finally:
        db.close()


def _take_over(path: Path, run_id: str) -> None:
    """What another worker's claim does to the run, minus the claim: a newer epoch. The lease is left
    expired (0) so a later worker can claim the run, and so any renewal that got through would show."""
    db = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        db.execute("UPDATE runs SET lease_epoch = lease_epoch + 1, lease_owner = 'intruder', lease_expires = 0 WHERE run_id = ?", (run_id,))
    finally:
        db.close()


class InThread:
    """``worker.run_once(run_id)`` on another thread."""

    def __init__(self, worker: Worker, run_id: str) -> None:
        self.worker = worker
        self.outcome: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(run_id,), daemon=True)
        self.thread.start()

    def _run(self, run_id: str) -> None:
        try:
            self.outcome = self.worker.run_once(run_id)
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            self.error = error

    def join(self) -> Any:
        self.thread.join(30)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.outcome


class Contender(threading.Thread):
    """A second worker, on its own connection, that tries to execute the run every 20 ms until stopped."""

    def __init__(self, path: Path, workflows: list[Any], run_id: str) -> None:
        super().__init__(daemon=True)
        self.path, self.workflows, self.run_id = path, workflows, run_id
        self.attempts: list[float] = []
        self.executions: list[Any] = []
        self.abandoned = 0
        self.stop = threading.Event()
        self.start()

    def run(self) -> None:
        with Journal(self.path) as journal, Worker(journal, self.workflows, "w2", lease_s=LEASE_S) as worker:
            while not self.stop.is_set():
                self.attempts.append(time.monotonic())
                outcome = worker.run_once(self.run_id)
                if outcome is not None:
                    self.executions.append(outcome)
                self.stop.wait(0.02)
            self.abandoned = worker.abandoned

    def finish(self) -> None:
        self.stop.set()
        self.join(30)
        assert not self.is_alive()


def _long_sync_step(calls: list[str], started: list[float]) -> Callable[[int], int]:
    """A step of about STEP_S including a retry: a slow failing attempt, a backoff pause, a slow success."""

    def step(value: int) -> int:
        calls.append(threading.current_thread().name)
        started.append(time.monotonic())
        time.sleep(STEP_S * 0.35)
        if len(calls) == 1:
            raise ConnectionError("first attempt fails")
        return value * 2

    return step


def _long_async_step(calls: list[str], started: list[float]) -> Callable[[int], Any]:
    async def step(value: int) -> int:
        calls.append(threading.current_thread().name)
        started.append(time.monotonic())
        await asyncio.sleep(STEP_S)
        return value * 2

    return step


@pytest.mark.parametrize("kind", ["sync-with-retry", "async"])
def test_a_step_three_leases_long_keeps_its_run_from_a_second_worker(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "journal.db"
    journal = Journal(path)
    calls: list[str] = []
    started: list[float] = []
    # Backoff pause of 0.3 * STEP_S between the two attempts: attempts plus pause make up STEP_S.
    retry = RetryPolicy(max_attempts=2, initial_interval=STEP_S * 0.3, jitter=0.0)

    if kind == "async":
        slow = _long_async_step(calls, started)

        @workflow(name="long-step")
        async def long_step(ctx, value):
            await ctx.step("quick", lambda: 1)
            return await ctx.step("slow", slow, value, retry=NO_RETRY)
    else:
        slow = _long_sync_step(calls, started)

        @workflow(name="long-step")
        def long_step(ctx, value):
            ctx.step("quick", lambda: 1)
            return ctx.step("slow", slow, value, retry=retry)

    run_id = journal.start(long_step, 21)
    with Worker(journal, [long_step], "w1", lease_s=LEASE_S, timing=Timing()) as worker:
        first = InThread(worker, run_id)
        assert _wait_for(lambda: bool(started))
        contender = Contender(path, [long_step], run_id)
        outcome = first.join()
        ended = time.monotonic()
        contender.finish()
        assert worker.abandoned == 0

    assert outcome is not None and outcome.status == "completed" and outcome.result == 42
    # The second worker kept trying well after an un-renewed lease would have run out, and never got in.
    assert any(started[0] + 2 * LEASE_S < moment < ended for moment in contender.attempts)
    assert contender.executions == [] and contender.abandoned == 0
    expected_calls = 1 if kind == "async" else 2  # the retry is the same execution's second attempt
    assert calls == [first.thread.name] * expected_calls
    assert journal.status(run_id) == "completed" and journal.result(run_id) == 42
    epoch, owner, _ = _lease_row(path, run_id)
    assert (epoch, owner) == (1, None)  # claimed once, released on completion
    assert _event_epochs(path, run_id) == [(1, "quick", 1), (2, "slow", 1)]
    journal.close()


def test_a_heartbeat_that_finds_the_run_taken_over_stops_and_the_slow_worker_records_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = Journal(path)
    calls: list[str] = []
    running, finish = threading.Event(), threading.Event()

    def slow() -> str:
        calls.append(threading.current_thread().name)
        running.set()
        finish.wait(30)
        return f"call {len(calls)}"

    @workflow(name="taken-over")
    def taken_over(ctx, _):
        ctx.step("quick", lambda: 1)
        return ctx.step("slow", slow, retry=NO_RETRY)

    run_id = journal.start(taken_over)
    with Worker(journal, [taken_over], "w1", lease_s=LEASE_S) as stale:
        first = InThread(stale, run_id)
        assert running.wait(10)
        assert stale.heartbeat is not None and stale.heartbeat.holding == 1
        _take_over(path, run_id)
        # The next renewal is fenced off: the heartbeat stops renewing, changing nothing.
        assert _wait_for(lambda: stale.heartbeat.holding == 0)
        assert _lease_row(path, run_id) == (2, "intruder", 0)
        finish.set()
        assert first.join() is None  # the slow worker's append was rejected: it gave the run up
        assert stale.abandoned == 1
    assert [event.name for event in journal.export(run_id).events] == ["quick"]
    assert _lease_row(path, run_id) == (2, "intruder", 0)

    # The run's new holder (here: whoever claims it next) performs the step again and records it once.
    with Journal(path) as other, Worker(other, [taken_over], "w2", lease_s=LEASE_S) as successor:
        outcome = successor.run_once(run_id)
    assert outcome is not None and outcome.result == "call 2"
    assert len(calls) == 2
    assert [(e.name, e.result) for e in journal.export(run_id).events] == [("quick", 1), ("slow", "call 2")]
    assert _event_epochs(path, run_id) == [(1, "quick", 1), (2, "slow", 3)]
    journal.close()


def test_a_worker_that_knows_it_lost_the_run_starts_no_further_effect(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = Journal(path)
    effects: list[str] = []
    between, proceed = threading.Event(), threading.Event()

    @workflow(name="two-effects")
    def two_effects(ctx, _):
        ctx.step("a", effects.append, "a")
        between.set()  # orchestration code that takes a while between two steps
        proceed.wait(30)
        ctx.step("b", effects.append, "b")

    run_id = journal.start(two_effects)
    with Worker(journal, [two_effects], "w1", lease_s=LEASE_S) as stale:
        first = InThread(stale, run_id)
        assert between.wait(10)
        _take_over(path, run_id)
        assert _wait_for(lambda: stale.heartbeat.holding == 0)
        proceed.set()
        assert first.join() is None
        assert stale.abandoned == 1
    assert effects == ["a"]  # without the check, "b" would be performed and then rejected
    assert [event.name for event in journal.export(run_id).events] == ["a"]
    journal.close()


def test_a_crashed_execution_stops_renewing_so_its_lease_runs_out(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = Journal(path)
    crash = {"armed": True}

    def fragile() -> str:
        if crash["armed"]:
            crash["armed"] = False
            raise Crash
        return "done"

    @workflow(name="fragile")
    def fragile_flow(ctx, _):
        ctx.step("quick", lambda: 1)
        return ctx.step("fragile", fragile)

    run_id = journal.start(fragile_flow)
    crashed = Worker(journal, [fragile_flow], "w1", lease_s=LEASE_S)
    with pytest.raises(Crash):
        crashed.run_once(run_id)
    assert crashed.heartbeat is not None and crashed.heartbeat.holding == 0
    # The crashed worker object (and its heartbeat thread) lives on; the lease must lapse regardless.
    with Journal(path) as other, Worker(other, [fragile_flow], "w2", lease_s=LEASE_S) as successor:
        outcomes: list[Any] = []
        assert _wait_for(lambda: outcomes.append(successor.run_once(run_id)) or outcomes[-1] is not None)
    assert outcomes[-1].result == "done"
    crashed.close()
    journal.close()


def test_renew_is_fenced_and_does_not_revive_a_released_lease(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="idle")
    def idle(ctx, _):
        return None

    run_id = journal.start(idle)
    first = journal.claim("w1", 10)
    clock.advance(5)
    assert journal.renew(first, 10) is True
    assert journal._run_row(run_id)["lease_expires"] == clock.now + 10
    journal.park(first, clock.now + 100, "go")
    assert journal.renew(first, 10) is False  # released by its holder: a late renewal changes nothing
    assert journal._run_row(run_id)["lease_expires"] is None
    journal.signal(run_id, "go")
    second = journal.claim("w2", 10)
    assert second is not None
    journal.append(second, Event(seq=1, kind="step", name="s", result=1), lease_s=10)
    with pytest.raises(StaleLeaseError):
        journal.renew(first, 10)


def test_heartbeat_thread_renews_exits_when_idle_and_restarts(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = Journal(path)

    @workflow(name="idle")
    def idle(ctx, _):
        return None

    run_id = journal.start(idle)
    claim = journal.claim("w1", LEASE_S)
    heartbeat = Heartbeat(journal, idle_exit_s=0.05)
    with heartbeat.hold(claim, LEASE_S) as lease:
        assert heartbeat.running
        assert _wait_for(lambda: lease.renewals >= 2)
    assert heartbeat.holding == 0
    assert _wait_for(lambda: not heartbeat.running)
    renewed_to = _lease_row(path, run_id)[2]
    with heartbeat.hold(claim, LEASE_S) as again:
        assert heartbeat.running
        assert _wait_for(lambda: again.renewals >= 1)
    assert _lease_row(path, run_id)[2] > renewed_to
    heartbeat.close()
    assert not heartbeat.running
    with pytest.raises(RuntimeError):
        heartbeat.hold(claim, LEASE_S)
    journal.close()


def test_in_memory_journal_and_heartbeat_off_have_no_thread(tmp_path: Path) -> None:
    @workflow(name="idle")
    def idle(ctx, _):
        return ctx.step("one", lambda: 1)

    with Journal(":memory:") as memory:
        worker = Worker(memory, [idle], "w")
        assert worker.heartbeat is None
        memory.start(idle)
        assert worker.run_once().result == 1
        with pytest.raises(ValueError):
            memory.reopen()
    with Journal(tmp_path / "journal.db") as journal:
        assert Worker(journal, [idle], "w", heartbeat=False).heartbeat is None
        with pytest.raises(ValueError):
            Worker(journal, [idle], "w", lease_s=0)
