"""Parking and resuming single runs of the Temporal dispute scenario on its dev server, for the tests that
compare what replaytest predicts for a parked run with what the server then does: a new v1 run parked at the
review wait on a task queue of its own (so tests never touch the scenario's recorded runs), resumed by a worker
running the code now in the kit's working tree."""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from impact_kit import ScenarioKit
from impact_temporal_kit import MODULE, WORKFLOW_TYPE, until_waiting

DISPUTE = {"invoice_id": "INV-300", "text": "charged twice again", "amount": 250.0}


async def _park(address: str, module: Any, run_id: str, queue: str) -> str:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=module.ACTIVITIES):
        handle = await client.start_workflow(WORKFLOW_TYPE, DISPUTE, id=run_id, task_queue=queue)
        await until_waiting(handle)
    return (await handle.fetch_history()).to_json()


async def _resume(address: str, module: Any, run_id: str, queue: str, decision: str, task_fails: bool) -> str:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=module.ACTIVITIES):
        handle = client.get_workflow_handle(run_id)
        await handle.signal("review", decision)
        if not task_fails:
            await asyncio.wait_for(handle.result(), 60)
            return (await handle.fetch_history()).to_json()
        for _ in range(600):  # the server retries a failed task for ever: wait for the first failure
            history = await handle.fetch_history()
            if any(event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for event in history.events):
                await handle.terminate("rehearsal test done")
                return history.to_json()
            await asyncio.sleep(0.1)
        raise AssertionError("the resumed run's workflow task did not fail within 60 s")


def _in_kit(kit: ScenarioKit, action: Any) -> Any:
    """Run ``action(module)`` with the code now in the kit's working tree imported (the sandbox re-imports
    the module by its name while the worker runs)."""
    sys.path.insert(0, str(kit.root))
    try:
        sys.modules.pop(MODULE, None)
        return action(importlib.import_module(MODULE))
    finally:
        sys.path.remove(str(kit.root))
        sys.modules.pop(MODULE, None)


def park(kit: ScenarioKit, code: str | None = None) -> tuple[str, str, Path]:
    """A new dispute run of v1 (or of ``code``) parked on the scenario's dev server once its third workflow task
    completed (at the review wait, in v1): its id, its task queue and its history file (outside the configured
    histories)."""
    run_id, queue = f"parked-{uuid.uuid4().hex[:8]}", f"rehearsal-{uuid.uuid4()}"
    if code is None:
        kit.switch(None)
    else:
        (kit.root / kit.code_file).write_text(code, encoding="utf-8")
    history = _in_kit(kit, lambda module: asyncio.run(_park(str(kit.extra["address"]), module, run_id, queue)))
    path = kit.root / "parked" / f"{run_id}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(history, encoding="utf-8")
    return run_id, queue, path


def resume(kit: ScenarioKit, run_id: str, queue: str, decision: str, task_fails: bool = False) -> dict:
    """Resume the parked run on the server with the code now in the working tree: send it the review signal
    and wait for it to finish (``task_fails``: for its workflow task to fail, then end it); its history."""
    address = str(kit.extra["address"])
    return json.loads(
        _in_kit(kit, lambda module: asyncio.run(_resume(address, module, run_id, queue, decision, task_fails)))
    )


def commands_after_signal(history: dict) -> list[tuple[str, str]]:
    """What the server recorded for the first workflow task after the review signal: its patch markers,
    scheduled activities and timers, and the run's close, in order."""
    events = history["events"]
    signal = next(i for i, event in enumerate(events) if event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED")
    completed = next(i for i in range(signal, len(events)) if events[i]["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED")
    commands = []
    for event in events[completed + 1:]:
        kind = event["eventType"]
        if kind == "EVENT_TYPE_MARKER_RECORDED":
            [payload] = event["markerRecordedEventAttributes"]["details"]["patch-data"]["payloads"]
            commands.append(("patch", json.loads(base64.b64decode(payload["data"]))["id"]))
        elif kind == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            commands.append(("activity", event["activityTaskScheduledEventAttributes"]["activityType"]["name"]))
        elif kind == "EVENT_TYPE_TIMER_STARTED":
            commands.append(("timer", event["timerStartedEventAttributes"]["timerId"]))
        elif kind == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED":
            commands.append(("complete", ""))
        elif kind == "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES":
            continue  # sdk-core's own TemporalChangeVersion upsert beside a patch marker: no command of the code
        else:
            break  # the task's commands end where the next event is not one of them
    return commands


async def _resume_until_settled(address: str, module: Any, run_id: str, queue: str, decision: str) -> str:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=module.ACTIVITIES):
        handle = client.get_workflow_handle(run_id)
        await handle.signal("review", decision)
        for _ in range(600):
            history = await handle.fetch_history()
            kinds = {event.event_type for event in history.events}
            if EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in kinds:
                await handle.terminate("differential test done")  # the server would retry it for ever
                return (await handle.fetch_history()).to_json()
            if kinds & {EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED}:
                return history.to_json()
            await asyncio.sleep(0.1)
        raise AssertionError("the resumed run neither finished nor failed a workflow task within 60 s")


def resume_until_settled(kit: ScenarioKit, run_id: str, queue: str, decision: str) -> dict:
    """Resume the parked run on the server with the code in the working tree and the review ``decision``:
    its history once it finished or its workflow task failed (then it is terminated)."""
    address = str(kit.extra["address"])
    return json.loads(_in_kit(kit, lambda module: asyncio.run(_resume_until_settled(address, module, run_id, queue, decision))))


def server_outcome(history: dict, changed: tuple[str, str]) -> str:
    """What the server did with a resumed run: ``breaks`` (a workflow task failed: the SDK's nondeterminism
    error or the code's own), ``new`` (it scheduled the ``changed`` command after the signal), else ``old``."""
    events = history["events"]
    if any(event["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_FAILED" for event in events):
        return "breaks"
    signal = next(i for i, event in enumerate(events) if event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED")
    kind, name = changed
    for event in events[signal:]:
        if kind == "activity" and event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            if event["activityTaskScheduledEventAttributes"]["activityType"]["name"] == name:
                return "new"
        if kind == "timer" and event["eventType"] == "EVENT_TYPE_TIMER_STARTED":
            return "new"
        if kind == "child-workflow" and event["eventType"] == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED":
            if event["startChildWorkflowExecutionInitiatedEventAttributes"]["workflowType"]["name"] == name:
                return "new"
    return "old"


async def _signal_until(address: str, module: Any, run_id: str, queue: str, decision: str, event_type: str) -> str:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.worker import Worker

    wanted = EventType.Value(event_type)
    client = await Client.connect(address)
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=module.ACTIVITIES):
        handle = client.get_workflow_handle(run_id)
        before = len((await handle.fetch_history()).events)
        await handle.signal("review", decision)
        for _ in range(600):
            events = (await handle.fetch_history()).events[before:]
            if any(event.event_type in (wanted, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) for event in events):
                return (await handle.fetch_history()).to_json()
            await asyncio.sleep(0.1)
        raise AssertionError(f"no {event_type} after the signal within 60 s")


def signal_until(kit: ScenarioKit, run_id: str, queue: str, decision: str, event_type: str) -> dict:
    """Send the parked run the review ``decision`` with a worker running the code in the working tree, and wait
    until the server records ``event_type`` (an ``EventType`` name) after the signal, or a failed workflow task:
    its history (the run goes on, for a timer the server keeps)."""
    address = str(kit.extra["address"])
    return json.loads(_in_kit(kit, lambda module: asyncio.run(_signal_until(address, module, run_id, queue, decision, event_type))))


def timer_durations(history: dict) -> list[str]:
    """The duration of every timer the server started for the run, in order (``"3600s"``)."""
    return [event["timerStartedEventAttributes"]["startToFireTimeout"] for event in history["events"]
            if event["eventType"] == "EVENT_TYPE_TIMER_STARTED"]
