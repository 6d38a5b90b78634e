"""The journal runtime: commit-per-step, parking on timers and signals, patches, idempotency keys,
continue-as-new, async workflows, and a resumed run whose code changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from journal_clock import FakeClock

from replaytest.journal import Journal, Prompt, RetryPolicy, Worker, workflow


class Crash(BaseException):
    """Stands in for the process dying: not an Exception, so nothing in the runtime handles it."""


def test_committed_steps_are_not_re_executed_after_a_crash(journal: Journal, clock: FakeClock) -> None:
    calls: list[str] = []
    crash_at = {"c"}

    def effect(name: str) -> str:
        calls.append(name)
        if name in crash_at:
            crash_at.discard(name)
            raise Crash
        return name.upper()

    @workflow(name="abc")
    def abc(ctx, _):
        return [ctx.step(name, effect, name) for name in "abcd"]

    run_id = journal.start(abc)
    worker = Worker(journal, [abc], "w1", lease_s=10)
    with pytest.raises(Crash):
        worker.run_once()
    assert [event.name for event in journal.export(run_id).events] == ["a", "b"]
    assert Worker(journal, [abc], "w2").run_once() is None  # lease still held by the dead worker
    clock.advance(11)
    outcome = Worker(journal, [abc], "w2").run_once()
    assert outcome is not None and outcome.result == ["A", "B", "C", "D"]
    assert calls == ["a", "b", "c", "c", "d"]


def test_sleep_parks_until_due_then_resumes(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="sleeper")
    def sleeper(ctx, seconds):
        ctx.step("before", lambda: 1)
        ctx.sleep(seconds, name="cool down")
        return ctx.step("after", lambda: 2)

    run_id = journal.start(sleeper, 3600)
    worker = Worker(journal, [sleeper], "w")
    outcome = worker.run_once()
    assert outcome is not None and outcome.status == "parked" and outcome.park.wake_at == clock.now + 3600
    assert journal.status(run_id) == "parked"
    clock.advance(3599)
    assert worker.run_once() is None  # not due: nothing to claim, nothing held
    clock.advance(1)
    assert worker.run_once().status == "completed"
    history = journal.export(run_id)
    assert [(e.kind, e.name, e.duration_s) for e in history.events] == [
        ("step", "before", None), ("timer", "cool down", 3600.0), ("step", "after", None)
    ]


def test_wait_signal_parks_and_resumes_with_payloads_in_order(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="approver")
    def approver(ctx, _):
        first = ctx.wait_signal("approved")
        second = ctx.wait_signal("approved")
        return [first, second]

    run_id = journal.start(approver)
    worker = Worker(journal, [approver], "w")
    assert worker.run_once().status == "parked"
    clock.advance(10**6)
    assert worker.run_once() is None  # no timeout: only a signal wakes it
    journal.signal(run_id, "approved", {"by": "ann"})
    journal.signal(run_id, "approved", {"by": "bob"})
    assert journal.status(run_id) == "running"
    assert worker.run_once().result == [{"by": "ann"}, {"by": "bob"}]


def test_signal_sent_before_the_wait_is_consumed_without_parking(journal: Journal) -> None:
    @workflow(name="early")
    def early(ctx, _):
        ctx.step("notify", lambda: journal.signal(ctx.run_id, "go", 7))
        return ctx.wait_signal("go")

    run_id = journal.start(early)
    assert Worker(journal, [early], "w").run_once().result == 7
    assert journal.status(run_id) == "completed"


def test_signal_arriving_while_parking_is_not_lost(journal: Journal) -> None:
    @workflow(name="racy")
    def racy(ctx, _):
        return ctx.wait_signal("go")

    run_id = journal.start(racy)
    claim = journal.claim("w", 30)
    journal.signal(run_id, "go", "payload")  # arrives after the wait found nothing, before the park commits
    journal.park(claim, None, "go")
    assert journal.status(run_id) == "running"
    assert Worker(journal, [racy], "w").run_once().result == "payload"


def test_wait_signal_timeout_returns_none(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="impatient")
    def impatient(ctx, _):
        return {"got": ctx.wait_signal("go", timeout=60)}

    run_id = journal.start(impatient)
    worker = Worker(journal, [impatient], "w")
    assert worker.run_once().park.wake_at == clock.now + 60
    clock.advance(60)
    assert worker.run_once().result == {"got": None}
    journal.signal(run_id, "go", "late")  # after the timeout: recorded but never consumed
    assert journal.result(run_id) == {"got": None}


def _patchable(with_patch: bool):
    @workflow(name="patchable", version="v2" if with_patch else "v1")
    def patchable(ctx, _):
        ctx.step("one", lambda: 1)
        if with_patch and ctx.patched("add-two"):
            ctx.step("two", lambda: 2)
        ctx.step("three", lambda: 3)
        ctx.sleep(5)
        return ctx.step("four", lambda: 4)

    return patchable


def test_patched_is_true_on_new_runs_and_false_when_resuming_old_ones(journal: Journal, clock: FakeClock) -> None:
    old, new = _patchable(False), _patchable(True)
    old_run = journal.start(old)
    Worker(journal, [old], "old").run_once()  # passes the patch point under the old code, parks at the timer
    new_run = journal.start(new)
    worker = Worker(journal, [new], "new")
    worker.run_until_idle()  # the new run parks at its timer (the old one is not due yet)
    clock.advance(5)
    worker.run_until_idle()
    assert journal.status(old_run) == journal.status(new_run) == "completed"
    old_events = [(e.kind, e.name) for e in journal.export(old_run).events]
    new_events = [(e.kind, e.name, e.patch_id) for e in journal.export(new_run).events]
    assert old_events == [("step", "one"), ("step", "three"), ("timer", "sleep"), ("step", "four")]
    assert new_events == [
        ("step", "one", None), ("marker", "patched", "add-two"), ("step", "two", None), ("step", "three", None),
        ("timer", "sleep", None), ("step", "four", None),
    ]
    assert journal.export(new_run).code_version == "v2"


def test_idempotency_key_is_stable_across_attempts_and_resumes(journal: Journal, clock: FakeClock) -> None:
    seen: list[str] = []

    def send(to: str, key: str) -> str:
        seen.append(key)
        if len(seen) == 1:
            raise ConnectionError("flaky")  # retried: same key
        if len(seen) == 2:
            raise Crash  # process dies after the effect: resumed, same key
        return "sent"

    @workflow(name="mailer")
    def mailer(ctx, to):
        ctx.step("prepare", lambda: None)
        return ctx.step("send", send, to, key=ctx.idempotency_key(), retry=RetryPolicy(initial_interval=0))

    run_id = journal.start(mailer, "ann@example.com", run_id="run-7")
    with pytest.raises(Crash):
        Worker(journal, [mailer], "w1", lease_s=1).run_once()
    clock.advance(2)
    assert Worker(journal, [mailer], "w2").run_once().result == "sent"
    assert seen == ["run-7:2", "run-7:2", "run-7:2"]
    assert journal.export(run_id).events[1].idempotency_key == "run-7:2"
    assert journal.export(run_id).events[0].idempotency_key is None


def test_model_calls_record_prompt_versions(journal: Journal) -> None:
    planner = Prompt("planner", "Plan the reply to: {ticket}")

    @workflow(name="agent")
    def agent(ctx, ticket):
        return ctx.model("plan", str.upper, planner.render(ticket=ticket), prompt=planner)

    run_id = journal.start(agent, "refund")
    assert Worker(journal, [agent], "w").run_once().result == "PLAN THE REPLY TO: REFUND"
    history = journal.export(run_id)
    assert history.events[0].prompt == planner.ref
    assert planner.version.startswith("sha256:") and planner.version != Prompt("planner", "other").version
    assert history.prompt_versions == {"planner": planner.version}


def test_now_random_uuid_are_recorded_and_replayed(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="stamps")
    def stamps(ctx, _):
        values = [ctx.now().isoformat(), ctx.random(), str(ctx.uuid())]
        ctx.sleep(1)
        return values

    run_id = journal.start(stamps)
    worker = Worker(journal, [stamps], "w")
    worker.run_once()
    recorded = [e.result for e in journal.export(run_id).events[:3]]
    clock.advance(1)
    assert worker.run_once().result == recorded
    assert [e.kind for e in journal.export(run_id).events[:3]] == ["side-effect"] * 3


def test_step_results_are_json_round_tripped_live_as_on_resume(journal: Journal) -> None:
    @workflow(name="tuples")
    def tuples(ctx, _):
        return ctx.step("pair", lambda: (1, 2))

    journal.start(tuples)
    assert Worker(journal, [tuples], "w").run_once().result == [1, 2]


def test_non_json_step_result_fails_the_run(journal: Journal) -> None:
    @workflow(name="setty")
    def setty(ctx, _):
        return ctx.step("set", lambda: {1, 2})

    run_id = journal.start(setty)
    Worker(journal, [setty], "w").run_once()
    assert journal.status(run_id) == "failed"
    assert "cannot be recorded as JSON" in journal.error(run_id).message


def test_continue_as_new_starts_a_successor(journal: Journal) -> None:
    @workflow(name="counter")
    def counter(ctx, n):
        ctx.step("tick", lambda: n)
        if n < 3:
            ctx.continue_as_new(n + 1)
        return n

    first = journal.start(counter, 1, workflow_id="counter-1")
    Worker(journal, [counter], "w").run_until_idle()
    chain = [first]
    while journal.successor(chain[-1]):
        chain.append(journal.successor(chain[-1]))
    assert len(chain) == 3
    assert journal.result(chain[-1]) == 3
    history = journal.export(first)
    assert history.status == "completed"
    assert history.events[-1].kind == "continue-as-new" and history.events[-1].result == 2
    assert journal.export(chain[1]).workflow.id == "counter-1"


def test_async_workflow_end_to_end(journal: Journal, clock: FakeClock) -> None:
    async def fetch(n: int) -> int:
        return n * 2

    @workflow(name="async-agent")
    async def agent(ctx, n):
        doubled = await ctx.step("fetch", fetch, n)
        await ctx.sleep(10)
        extra = await ctx.step("sync", lambda: 1)
        return doubled + extra + (await ctx.wait_signal("bonus"))

    run_id = journal.start(agent, 5)
    worker = Worker(journal, [agent], "w")
    worker.run_once()
    clock.advance(10)
    worker.run_once()
    journal.signal(run_id, "bonus", 100)
    assert worker.run_once().result == 111


def test_resumed_run_with_changed_code_fails_with_a_divergence(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="changing")
    def before(ctx, _):
        ctx.step("a", lambda: 1)
        ctx.sleep(1)

    @workflow(name="changing")
    def after(ctx, _):
        ctx.step("b", lambda: 1)
        ctx.sleep(1)

    run_id = journal.start(before)
    Worker(journal, [before], "w").run_once()
    clock.advance(1)
    Worker(journal, [after], "w").run_once()
    assert journal.status(run_id) == "failed"
    error = journal.error(run_id)
    assert error.type == "JournalDivergence"
    assert "holds step 'a' but the code now issues step 'b'" in error.message
    assert "test_journal_runtime.py:" in error.message


def test_unknown_workflow_fails_the_run(journal: Journal) -> None:
    run_id = journal.start("nobody-knows")
    Worker(journal, [], "w").run_once()
    assert journal.error(run_id).type == "UnknownWorkflow"


def test_start_with_existing_run_id_is_idempotent(journal: Journal) -> None:
    @workflow(name="once")
    def once(ctx, _):
        return 1

    assert journal.start(once, run_id="r") == journal.start(once, run_id="r") == "r"
    assert journal.run_ids() == ["r"]


def test_commands_carry_the_orchestration_source_line(tmp_path: Path) -> None:
    from replaytest.journal import Context, RunInfo

    issued = []

    class Recorder:
        def execute(self, command, thunk):
            issued.append(command)
            return thunk()

    ctx = Context(RunInfo("wf", "w", "r"), Recorder())
    ctx.step("s", lambda: 1); line = __import__("sys")._getframe().f_lineno  # noqa: E702
    assert issued[0].source is not None
    assert issued[0].source.path == __file__ and issued[0].source.line == line
    assert issued[0].source.function == "test_commands_carry_the_orchestration_source_line"


def test_concurrent_async_steps_keep_their_positions_across_a_crash(journal: Journal, clock: FakeClock) -> None:
    import asyncio

    calls: list[str] = []
    crash = {"armed": True}

    async def slow(name: str, delay: float) -> str:
        calls.append(name)
        await asyncio.sleep(delay)
        if name == "a" and crash["armed"]:
            crash["armed"] = False
            raise Crash  # dies after "b" (the faster one) has been committed
        return name.upper()

    @workflow(name="fan-out")
    async def fan_out(ctx, _):
        return list(await asyncio.gather(ctx.step("a", slow, "a", 0.05), ctx.step("b", slow, "b", 0.0)))

    run_id = journal.start(fan_out)
    with pytest.raises(Crash):
        Worker(journal, [fan_out], "w1", lease_s=1).run_once()
    history = journal.export(run_id)
    assert history.status == "running" and history.events == ()  # position 2 is done, position 1 is not
    clock.advance(2)
    assert Worker(journal, [fan_out], "w2").run_once().result == ["A", "B"]
    assert calls == ["a", "b", "a"]
    assert [(e.seq, e.name, e.result) for e in journal.export(run_id).events] == [(1, "a", "A"), (2, "b", "B")]


def test_worker_run_serves_until_stopped_sleeping_until_the_next_wake(journal: Journal, clock: FakeClock) -> None:
    @workflow(name="napper")
    def napper(ctx, seconds):
        ctx.sleep(seconds)
        return seconds

    short, long = journal.start(napper, 2), journal.start(napper, 10)
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        clock.advance(seconds)

    executions = Worker(journal, [napper], "w").run(stop=lambda: journal.status(long) == "completed", poll_s=5, sleep=sleep)
    assert (journal.result(short), journal.result(long)) == (2, 10)
    assert executions == 4
    assert pauses == [2, 5, 3]  # to the short timer, one poll interval, then to the long timer
