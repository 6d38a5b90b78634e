"""Leases and fencing (a taken-over worker cannot append), and export of runs in every status."""

from __future__ import annotations

from pathlib import Path

import pytest
from journal_clock import FakeClock

from replaytest.history import Event, load_history, save_history
from replaytest.journal import Journal, StaleLeaseError, Worker, workflow


def test_append_from_a_taken_over_worker_is_rejected(tmp_path: Path, clock: FakeClock) -> None:
    journal = Journal(tmp_path / "j.db", clock=clock)
    other = Journal(tmp_path / "j.db", clock=clock)  # a second worker, own connection
    takeover: dict[str, object] = {}

    def slow_step() -> str:
        # The first worker stalls past its lease; the second claims the run and finishes it.
        clock.advance(31)
        takeover["started"] = True
        takeover["outcome"] = Worker(other, [job], "w2").run_once()
        return "late"

    @workflow(name="job")
    def job(ctx, _):
        if ctx.step("first", lambda: "w-any") and not takeover:
            ctx.step("slow", slow_step)
            return "w1"
        ctx.step("slow", lambda: "fast")
        return "w2"

    run_id = journal.start(job)
    stale = Worker(journal, [job], "w1", lease_s=30)
    assert stale.run_once() is None
    assert stale.abandoned == 1
    assert takeover["outcome"].result == "w2"
    assert journal.status(run_id) == "completed" and journal.result(run_id) == "w2"
    assert [e.result for e in journal.export(run_id).events] == ["w-any", "fast"]


def test_fencing_is_checked_for_every_kind_of_write(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="idle")
    def idle(ctx, _):
        return None

    run_id = journal.start(idle)
    first = journal.claim("w1", 10)
    clock.advance(11)
    second = journal.claim("w2", 10)
    assert (first.epoch, second.epoch) == (1, 2)
    event = Event(seq=1, kind="step", name="s", result=1)
    for write in (
        lambda: journal.append(first, event),
        lambda: journal.finish(first, "completed", result=1),
        lambda: journal.park(first, clock.now + 5, None),
        lambda: journal.renew(first, 10),
        lambda: journal.continue_as_new(first, 2),
        lambda: journal.take_signal(first, Event(seq=1, kind="signal", name="x")),
    ):
        with pytest.raises(StaleLeaseError, match=f"run {run_id}: append with lease epoch 1 rejected; current epoch is 2"):
            write()
    journal.append(second, event)
    assert journal.export(run_id).events == (event,)


def test_live_lease_blocks_other_workers_until_expiry(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="idle")
    def idle(ctx, _):
        return None

    journal.start(idle)
    assert journal.claim("w1", 10) is not None
    assert journal.claim("w2", 10) is None
    clock.advance(10)
    assert journal.claim("w2", 10) is not None


@workflow(name="every-status", version="2026-11-30.1")
def every_status(ctx, mode):
    ctx.step("load", lambda: {"mode": mode})
    if mode == "fail":
        raise RuntimeError("gave up")
    if mode == "park":
        ctx.wait_signal("go")
    return "ok"


@pytest.mark.parametrize(
    ("mode", "execute", "status", "events"),
    [
        ("done", True, "completed", ["load"]),
        ("fail", True, "failed", ["load"]),
        ("park", True, "parked", ["load"]),
        ("done", False, "running", []),
    ],
)
def test_export_of_each_status_round_trips(tmp_path: Path, journal: Journal, mode: str, execute: bool, status: str, events: list[str]) -> None:
    run_id = journal.start(every_status, mode, workflow_id=f"task-{mode}")
    if execute:
        Worker(journal, [every_status], "w").run_once()
    history = journal.export(run_id)
    assert history.status == status
    assert [e.name for e in history.events] == events
    assert history.workflow.type == "every-status" and history.workflow.id == f"task-{mode}" and history.workflow.run_id == run_id
    assert history.workflow.engine == "journal"
    assert history.input == mode
    if execute:
        assert history.code_version == "2026-11-30.1"
    if status == "failed":
        assert (history.error.type, history.error.message) == ("RuntimeError", "gave up")
    if status == "completed":
        assert history.result == "ok"
    target = tmp_path / f"{status}.json"
    save_history(history, target)
    assert load_history(target) == history


def test_export_of_a_run_crashed_mid_step_is_running_with_committed_steps(journal: Journal) -> None:
    class Crash(BaseException):
        pass

    def boom() -> None:
        raise Crash

    @workflow(name="crashy")
    def crashy(ctx, _):
        ctx.step("one", lambda: 1)
        ctx.step("two", boom)

    run_id = journal.start(crashy)
    with pytest.raises(Crash):
        Worker(journal, [crashy], "w").run_once()
    history = journal.export(run_id)
    assert history.status == "running"
    assert [(e.seq, e.name, e.result) for e in history.events] == [(1, "one", 1)]
