"""Parsing sdk-core's failure texts, including the older spelling without the ``[TMPRL1100]`` code."""

from __future__ import annotations

import json

import pytest

from replaytest.plugins.temporal.failure import classify, core_message


def _events(histories):
    return json.loads((histories / "hello_timer_history.json").read_text())["events"]


def _wrapped(message: str) -> str:
    escaped = message.replace('"', '\\"')
    return (
        f'Workflow activation completion failed: Failure {{ failure: Some(Failure {{ message: "{escaped}", '
        'source: "", stack_trace: "", encoded_attributes: None, cause: None }), force_cause: NonDeterministicError }'
    )


@pytest.mark.parametrize(
    "text",
    [
        _wrapped("[TMPRL1100] Nondeterminism error: Timer machine does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)"),
        _wrapped("Nondeterminism error: Timer machine does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)"),
        "Timer machine does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)",
    ],
)
def test_old_and_new_message_spellings_give_the_same_divergence(histories, text):
    assert core_message(text) == "Timer machine does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)"
    divergence = classify(RuntimeError(text), _events(histories), None, nondeterminism=True).divergence
    assert divergence.kind == "command-mismatch"
    assert divergence.position == 5
    assert divergence.recorded.name == "say"
    assert divergence.issued.kind == "timer"


@pytest.mark.parametrize(
    ("machine", "kind"),
    [("UpsertWorkflowSearchAttributesMachine", "search-attributes"), ("ModifyWorkflowPropertiesMachine", "memo")],
)
def test_a_machine_named_by_its_type_is_read_like_the_others(histories, machine, kind):
    """The upsert machines print their type name and no "this event": ``…Machine does not handle HistoryEvent(…)``."""
    text = _wrapped(f"[TMPRL1100] Nondeterminism error: {machine} does not handle HistoryEvent(id: 5, ActivityTaskScheduled)")
    divergence = classify(RuntimeError(text), _events(histories), None, nondeterminism=True).divergence
    assert (divergence.kind, divergence.position, divergence.recorded.name) == ("command-mismatch", 5, "say")
    assert divergence.issued.kind == kind


def test_unknown_nondeterminism_text_is_still_a_divergence_with_the_raw_message(histories):
    divergence = classify(RuntimeError("Nondeterminism error: something new"), _events(histories), None,
                          nondeterminism=True).divergence
    assert divergence.kind == "command-mismatch"
    assert divergence.message == "something new"


def test_no_command_for_event_is_a_missing_command(histories):
    text = _wrapped("[TMPRL1100] Nondeterminism error: No command scheduled for event HistoryEvent(id: 16, ActivityTaskScheduled)")
    divergence = classify(RuntimeError(text), _events(histories), None, nondeterminism=True).divergence
    assert divergence.kind == "missing-command"
    assert divergence.position == 16
    assert divergence.issued is None


def test_task_failure_without_workflow_code_frames_is_an_error_not_a_divergence(histories):
    text = ('4: Workflow activation completion failed: Failure { failure: Some(Failure { message: "Failed decoding '
            'arguments", source: "", stack_trace: "  File \\"/site-packages/temporalio/worker/_workflow.py\\", line 3, '
            'in activate\\n", encoded_attributes: None, cause: None }) }')
    classified = classify(RuntimeError(text), _events(histories), None, nondeterminism=False)
    assert classified.divergence is None
    assert "Failed decoding arguments" in classified.error


def test_sandbox_violation_names_the_call_and_its_deterministic_replacement(histories):
    text = ('4: Workflow activation completion failed: Failure { failure: Some(Failure { message: "Cannot access '
            'uuid.uuid4.__call__ from inside a workflow. If this is code from a module not used in a workflow, mark '
            'the import as pass through.", source: "", stack_trace: "  File \\"/app/wf.py\\", line 12, in run\\n" }) }')
    divergence = classify(RuntimeError(text), _events(histories), None, nondeterminism=False).divergence
    assert divergence.kind == "nondeterministic-call"
    assert divergence.issued.name == "uuid.uuid4"
    assert "calls uuid.uuid4()" in divergence.message
    assert "use workflow.uuid4()" in divergence.message
    assert (divergence.source.path, divergence.source.line) == ("/app/wf.py", 12)


def test_a_timer_line_is_named_only_when_the_trace_lines_up_with_sdk_core(histories):
    """sdk-core says the code starts a timer where the history completed (event 22, after the timer at
    event 11): the code's second timer is that one. A trace holding fewer timers than that does not
    line up, and the line stays unknown rather than borrowed from another timer."""
    from replaytest.plugins.temporal.failure import with_traced_command
    from replaytest.plugins.temporal.trace import IssuedCommand
    from replaytest.replay.divergence import SourcePosition

    events = _events(histories)
    text = "Timer machine does not handle this event: HistoryEvent(id: 22, WorkflowExecutionCompleted)"
    divergence = classify(RuntimeError(text), events, None, nondeterminism=True).divergence
    assert (divergence.kind, divergence.position, divergence.source) == ("extra-command", 22, None)
    first = IssuedCommand("timer", "1", SourcePosition("app/hello.py", 14, "Hello.run"))
    second = IssuedCommand("timer", "2", SourcePosition("app/hello.py", 17, "Hello.run"))
    activity = IssuedCommand("activity", "say", SourcePosition("app/hello.py", 15, "Hello.run"))

    assert with_traced_command(divergence, [first, activity], events).source is None
    named = with_traced_command(divergence, [first, activity, second], events)
    assert named.source == SourcePosition("app/hello.py", 17, "Hello.run")
    assert named.issued.detail["source"] == "hello.py:17"
