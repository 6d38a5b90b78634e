"""The run status of a Temporal history, read from its events (``temporal.history.run_status``): closed runs
by their close event, open ones as parked when they wait (for a timer, a signal, an update or a
condition) and running otherwise; and real runs on a dev server — completed, failed, parked waiting for a
signal, running with an activity nobody serves — replayed with the real Replayer carry that status."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_devserver import DevServer, running_dev_server

from replaytest.plugins.temporal.history import run_status
from replaytest.plugins.temporal.replayer import TemporalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.report import diverged_by_run_status, run_status_lines

START = ["WorkflowExecutionStarted", "WorkflowTaskScheduled", "WorkflowTaskStarted", "WorkflowTaskCompleted"]
TASK = ["WorkflowTaskScheduled", "WorkflowTaskStarted", "WorkflowTaskCompleted"]


@pytest.mark.parametrize(("events", "expected"), [
    (START + ["WorkflowExecutionCompleted"], "completed"),
    (START + ["WorkflowExecutionContinuedAsNew"], "completed"),
    (START + ["WorkflowExecutionFailed"], "failed"),
    (START + ["WorkflowExecutionTimedOut"], "failed"),
    (START + ["ActivityTaskScheduled", "WorkflowExecutionTerminated"], "failed"),
    (START + ["WorkflowExecutionCancelRequested", "WorkflowTaskScheduled", "WorkflowTaskStarted",
              "WorkflowTaskCompleted", "WorkflowExecutionCanceled"], "failed"),
    # Waiting for a signal or condition: the last task completed and nothing is outstanding.
    (START, "parked"),
    (START + ["ActivityTaskScheduled", "ActivityTaskStarted", "ActivityTaskCompleted"] + TASK, "parked"),
    # Waiting for a durable timer.
    (START + ["TimerStarted"], "parked"),
    # Work outstanding, a task pending or failing, or never picked up by a worker.
    (START + ["ActivityTaskScheduled"], "running"),
    (START + ["ActivityTaskScheduled", "ActivityTaskStarted"], "running"),
    (START + ["TimerStarted", "ActivityTaskScheduled"], "running"),
    (START + ["StartChildWorkflowExecutionInitiated", "ChildWorkflowExecutionStarted"], "running"),
    (START + ["TimerStarted", "TimerFired", "WorkflowTaskScheduled"], "running"),
    (START + ["WorkflowExecutionSignaled", "WorkflowTaskScheduled", "WorkflowTaskStarted", "WorkflowTaskFailed"], "running"),
    (["WorkflowExecutionStarted", "WorkflowTaskScheduled"], "running"),
    (["EVENT_TYPE_WORKFLOW_EXECUTION_STARTED", "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED", "EVENT_TYPE_WORKFLOW_TASK_STARTED",
      "EVENT_TYPE_WORKFLOW_TASK_COMPLETED", "EVENT_TYPE_TIMER_STARTED"], "parked"),
])
def test_run_status_from_event_types(events: list[str], expected: str) -> None:
    assert run_status(events) == expected


def test_shared_histories_are_completed(temporal_replayer: TemporalReplayer, histories: Path) -> None:
    import temporal_wf_hello as hello

    result = temporal_replayer.replay(histories / "hello_timer_history.json", WorkflowSet((hello.Hello,)), ReplayOptions())
    assert (result.status, result.run_status, result.in_flight) == ("passed", "completed", False)


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("temporal-server")) as server:
        yield server


async def _record_runs(address: str, target: Path) -> None:
    """One run per status, each history written as ``<status>.json`` the way ``temporal workflow show``
    and ``replaytest import temporal`` write it (``WorkflowHistory.to_json``)."""
    import temporal_wf_restock as restock
    from temporalio.client import Client, WorkflowFailureError
    from temporalio.worker import Worker

    client = await Client.connect(address)
    served, unserved = f"restock-{uuid.uuid4()}", f"restock-unserved-{uuid.uuid4()}"
    async with Worker(client, task_queue=served, workflows=[restock.Restock], activities=[restock.count_stock]):
        done = await client.start_workflow("Restock", "kettle", id=f"completed-{uuid.uuid4()}", task_queue=served)
        await _until(done, lambda types: types.count("WorkflowTaskCompleted") >= 2)
        await done.signal("approve", True)
        assert await done.result() == "ordered more kettle"
        failed = await client.start_workflow("Restock", "toaster", id=f"failed-{uuid.uuid4()}", task_queue=served)
        with pytest.raises(WorkflowFailureError):
            await failed.result()
        parked = await client.start_workflow("Restock", "lamp", id=f"parked-{uuid.uuid4()}", task_queue=served)
        await _until(parked, lambda types: types.count("WorkflowTaskCompleted") >= 2)
    # A worker that runs workflow code but serves no activities: the stock check stays scheduled.
    async with Worker(client, task_queue=unserved, workflows=[restock.Restock]):
        running = await client.start_workflow("Restock", "kettle", id=f"running-{uuid.uuid4()}", task_queue=unserved)
        await _until(running, lambda types: "ActivityTaskScheduled" in types)
    for name, handle in (("completed", done), ("failed", failed), ("parked", parked), ("running", running)):
        history = await handle.fetch_history()
        (target / f"{name}.json").write_text(history.to_json(), encoding="utf-8")
    await running.terminate("test over")
    await parked.terminate("test over")


async def _until(handle: object, ready: object, timeout_s: float = 30.0) -> None:
    from temporalio.api.enums.v1 import EventType

    for _ in range(int(timeout_s / 0.1)):
        history = await handle.fetch_history()  # type: ignore[attr-defined]
        types = [EventType.Name(event.event_type)[len("EVENT_TYPE_"):].title().replace("_", "") for event in history.events]
        if ready(types):  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the run did not get there in {timeout_s} s")


@pytest.mark.temporal_server
@pytest.mark.slow
def test_recorded_runs_carry_their_status_through_replay(dev_server: DevServer, tmp_path: Path,
                                                         temporal_replayer: TemporalReplayer) -> None:
    import temporal_wf_restock as restock

    asyncio.run(_record_runs(dev_server.address, tmp_path))
    same = WorkflowSet((restock.Restock,))
    replayed = {name: temporal_replayer.replay(tmp_path / f"{name}.json", same, ReplayOptions())
                for name in ("completed", "failed", "parked", "running")}
    assert {name: (r.status, r.run_status, r.in_flight) for name, r in replayed.items()} == {
        "completed": ("passed", "completed", False),
        "failed": ("passed", "failed", False),
        "parked": ("passed", "parked", True),
        "running": ("passed", "running", True),
    }
    renamed = WorkflowSet((restock.RestockRenamed,))
    diverged = [temporal_replayer.replay(tmp_path / f"{name}.json", renamed, ReplayOptions())
                for name in ("completed", "failed", "parked", "running")]
    assert [(r.status, r.run_status) for r in diverged] == [
        ("diverged", "completed"), ("diverged", "failed"), ("diverged", "parked"), ("diverged", "running"),
    ]
    assert run_status_lines(diverged_by_run_status(diverged)) == [
        "in-flight runs that break: 2 (1 running, 1 parked)",
        "finished runs that diverge: 2 (1 completed, 1 failed)",
    ]
