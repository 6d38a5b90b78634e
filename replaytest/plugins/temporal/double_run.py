"""The double-run tracer of Temporal workflows: one run of a workflow class, with no server, driven by
temporalio's own ``Replayer`` one workflow task at a time, every activity stubbed.

The run starts from a history holding only the start (the case's input, encoded by the workers' data
converter) and a first workflow task. Each replay runs the last task as a live worker would (sdk-core
replays the earlier ones), and the commands it issues are read from the trace (``temporal.trace``). The
history is then extended as the server would record them — activities scheduled, started and completed
with the case's stub value, timers started and fired, patch markers recorded — followed by a new workflow
task, until the workflow completes, fails, continues as new, or waits for something a stub cannot give
(a signal, a condition, a child workflow): that ending is recorded and compared too. No activity runs: a
Replayer never executes one. Event times are the same fixed instant in every run, so ``workflow.now()``
and ``workflow.random()`` answer alike, as they do on every replay. Imported when temporalio is installed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from temporalio.api.common.v1 import ActivityType, Payload, Payloads, WorkflowType
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskScheduledEventAttributes,
    ActivityTaskStartedEventAttributes,
    HistoryEvent,
    MarkerRecordedEventAttributes,
    TimerFiredEventAttributes,
    TimerStartedEventAttributes,
    WorkflowExecutionStartedEventAttributes,
    WorkflowTaskCompletedEventAttributes,
    WorkflowTaskScheduledEventAttributes,
    WorkflowTaskStartedEventAttributes,
)
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.client import WorkflowHistory

from replaytest.plugins.temporal.replayer import REPLAY_TIMEOUT_S, TemporalReplayer, _data_converter, _loop
from replaytest.plugins.temporal.trace import IssuedCommand
from replaytest.replay.adapter import WorkflowSet
from replaytest.replay.double_run import DoubleRunCase, RunConditions, Trace, TracedCommand

_E = EventType
_TASK_QUEUE = "double-run"
# A workflow that keeps taking tasks is stopped here (a loop with no end under the stubs).
MAX_WORKFLOW_TASKS = 2000
# The same instant in every run: workflow.now() reads the task's event time.
_EVENT_SECONDS = 1_767_225_600  # 2026-01-01T00:00:00Z
_ENDINGS = {"complete": "completed", "fail": "failed", "continue-as-new": "continued", "cancel": "cancelled"}

_replayer: TemporalReplayer | None = None


def trace_temporal(workflows: WorkflowSet, case: DoubleRunCase, conditions: RunConditions) -> Trace:
    """One stubbed run of the case's workflow type under ``conditions``."""
    global _replayer
    if _replayer is None:
        _replayer = TemporalReplayer()
    group, defn = _replayer._definition(workflows, case.workflow)
    if group is None:
        return Trace(error=f"no workflow class for Temporal workflow type {case.workflow!r} in the current code")
    converter = _data_converter(group)
    session = _replayer._session(group)
    recorder = session.recorder

    def encode(values: list[Any]) -> list[Payload]:
        return list(_loop().submit(converter.encode(values)).result(REPLAY_TIMEOUT_S))

    history = _History()
    started = WorkflowExecutionStartedEventAttributes(
        workflow_type=WorkflowType(name=case.workflow), task_queue=TaskQueue(name=_TASK_QUEUE),
        original_execution_run_id="double-run", first_execution_run_id="double-run", attempt=1,
    )
    started.input.CopyFrom(Payloads(payloads=encode([case.input])))
    history.add(_E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, "workflow_execution_started_event_attributes", started)
    history.new_task()
    trace = Trace()
    with conditions.applied():
        _drive(case, session, history, trace, encode)
    # The outbound interceptor digests each activity's and child's arguments as it is scheduled; the last
    # replay ran the whole history, so it saw every one, in order.
    digests = iter([command.digest for command in recorder.commands if command.kind == "activity"])
    trace.commands = [replace(command, args_digest=next(digests, None)) if command.kind == "activity" else command
                      for command in trace.commands]
    return trace


def _drive(case: DoubleRunCase, session: Any, history: _History, trace: Trace,
           encode: Callable[[list[Any]], list[Payload]]) -> None:
    """Replay, read the new task's commands, extend the history; until the run ends or waits."""
    recorder = session.recorder
    activities = 0
    for _ in range(MAX_WORKFLOW_TASKS):
        recorder.clear()
        outcome = session.replay(WorkflowHistory(case.workflow_id or "double-run", list(history.events)))
        if outcome.replay_failure is not None:
            failure = outcome.replay_failure
            trace.ending, trace.result = "broke", f"{type(failure).__name__}: {failure}"
            return
        failed = [text for replaying, text in recorder.trace.failed_activations if replaying is False]
        if failed:
            trace.ending, trace.result = "failed", f"the workflow task failed: {failed[0]}"
            return
        new = [command for command in recorder.trace.commands if command.replaying is False]
        first = len(trace.commands)
        trace.commands.extend(_traced(command) for command in new if command.kind not in _ENDINGS)
        ending = next((command for command in new if command.kind in _ENDINGS), None)
        if ending is not None:
            trace.ending = _ENDINGS[ending.kind]
            return
        steps = [command for command in new if command.kind in ("activity", "timer", "patch")]
        others = [command.kind for command in new if command.kind not in ("activity", "timer", "patch")]
        if others or not steps:
            trace.ending = "waits" if not others else "stopped"
            trace.result = (f"on {', '.join(sorted(set(others)))}, which the double run does not answer" if others
                            else "for a signal, update or condition")
            return
        completed = history.task_completed()
        for offset, command in enumerate(steps):
            if command.kind == "activity":
                activities += 1
                value = case.stub_value(first + offset + 1, "activity", command.name)
                history.activity(command.activity_id or str(activities), command.name, completed, encode([value]))
            elif command.kind == "timer":
                history.timer(command.name, command.duration_s or 0.0, completed)
            else:
                history.patch_marker(command.name, completed)
        history.new_task()
    trace.ending, trace.result = "stopped", f"still taking workflow tasks after {MAX_WORKFLOW_TASKS}"


def _traced(command: IssuedCommand) -> TracedCommand:
    source = command.source
    return TracedCommand(kind=command.kind, name=command.name, args_digest=command.digest,
                         path=source.path if source else None, line=source.line if source else None,
                         function=source.function if source else None)


class _History:
    """The events of the run so far, numbered as the server numbers them."""

    def __init__(self) -> None:
        self.events: list[HistoryEvent] = []
        self.task_scheduled = 0
        self.task_started = 0

    def add(self, kind: int, field: str, attributes: Any) -> int:
        event = HistoryEvent(event_type=kind, event_id=len(self.events) + 1)  # type: ignore[arg-type]
        event.event_time.FromSeconds(_EVENT_SECONDS)
        getattr(event, field).CopyFrom(attributes)
        self.events.append(event)
        return event.event_id

    def new_task(self) -> None:
        self.task_scheduled = self.add(_E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, "workflow_task_scheduled_event_attributes",
                                       WorkflowTaskScheduledEventAttributes(task_queue=TaskQueue(name=_TASK_QUEUE)))
        self.task_started = self.add(_E.EVENT_TYPE_WORKFLOW_TASK_STARTED, "workflow_task_started_event_attributes",
                                     WorkflowTaskStartedEventAttributes(scheduled_event_id=self.task_scheduled))

    def task_completed(self) -> int:
        return self.add(_E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, "workflow_task_completed_event_attributes",
                        WorkflowTaskCompletedEventAttributes(scheduled_event_id=self.task_scheduled,
                                                             started_event_id=self.task_started))

    def activity(self, activity_id: str, activity_type: str, completed: int, result: Sequence[Payload]) -> None:
        scheduled = self.add(_E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "activity_task_scheduled_event_attributes",
                             ActivityTaskScheduledEventAttributes(
                                 activity_id=activity_id, activity_type=ActivityType(name=activity_type),
                                 task_queue=TaskQueue(name=_TASK_QUEUE), workflow_task_completed_event_id=completed))
        started = self.add(_E.EVENT_TYPE_ACTIVITY_TASK_STARTED, "activity_task_started_event_attributes",
                           ActivityTaskStartedEventAttributes(scheduled_event_id=scheduled, attempt=1))
        done = ActivityTaskCompletedEventAttributes(scheduled_event_id=scheduled, started_event_id=started)
        done.result.CopyFrom(Payloads(payloads=list(result)))
        self.add(_E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, "activity_task_completed_event_attributes", done)

    def timer(self, timer_id: str, seconds: float, completed: int) -> None:
        attributes = TimerStartedEventAttributes(timer_id=timer_id, workflow_task_completed_event_id=completed)
        attributes.start_to_fire_timeout.FromNanoseconds(int(seconds * 1e9))
        started = self.add(_E.EVENT_TYPE_TIMER_STARTED, "timer_started_event_attributes", attributes)
        self.add(_E.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                 TimerFiredEventAttributes(timer_id=timer_id, started_event_id=started))

    def patch_marker(self, patch_id: str, completed: int) -> None:
        attributes = MarkerRecordedEventAttributes(marker_name="core_patch", workflow_task_completed_event_id=completed)
        data = json.dumps({"id": patch_id, "deprecated": False}).encode()
        attributes.details["patch-data"].CopyFrom(
            Payloads(payloads=[Payload(metadata={"encoding": b"json/plain"}, data=data)]))
        self.add(_E.EVENT_TYPE_MARKER_RECORDED, "marker_recorded_event_attributes", attributes)
