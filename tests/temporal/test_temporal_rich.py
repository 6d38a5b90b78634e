"""A history with a local activity, a child workflow and a signal (``histories/rich_history.json``)."""

from __future__ import annotations

import temporal_wf_rich as rich

from replaytest.replay.report import render_text

SUPPORT = (rich.Child, rich.Audit)


def _source_line(divergence) -> str:
    return open(divergence.source.path, encoding="utf-8").read().splitlines()[divergence.source.line - 1]


def test_recorded_code_passes_under_the_recorded_workflow_id(replay):
    # The child's id derives from workflow.info().workflow_id: replay must use the recorded id, not the file name.
    result = replay("rich_history.json", rich.Rich, *SUPPORT)
    assert result.status == "passed", render_text(result)
    assert result.workflow_id == "rich-1"


def test_changed_child_workflow_type_names_both_and_the_calling_line(replay):
    divergence = replay("rich_history.json", rich.RichOtherChild, *SUPPORT).divergence
    assert divergence.kind == "command-mismatch"
    assert divergence.position == 6
    assert (divergence.recorded.kind, divergence.recorded.name) == ("child-workflow", "Child")
    assert (divergence.issued.kind, divergence.issued.name) == ("child-workflow", "Audit")
    assert "execute_child_workflow(Audit.run" in _source_line(divergence)


def test_changed_local_activity_is_found_at_its_marker(replay):
    divergence = replay("rich_history.json", rich.RichOtherLocalActivity, *SUPPORT).divergence
    assert divergence.kind == "command-mismatch"
    assert divergence.position == 5
    assert divergence.recorded.detail["event_type"] == "MarkerRecorded"
    assert (divergence.recorded.kind, divergence.recorded.name) == ("local-activity", "lookup")
    assert (divergence.issued.kind, divergence.issued.name) == ("local-activity", "find")
    assert "execute_local_activity(find" in _source_line(divergence)


def test_dropped_child_workflow_is_a_missing_command(replay):
    divergence = replay("rich_history.json", rich.RichWithoutChild, *SUPPORT).divergence
    assert divergence.kind == "missing-command"
    assert divergence.position == 6
    assert divergence.recorded.name == "Child"
    assert "history event 6 started child workflow 'Child', the code now issues no command there" in divergence.message


def test_signals_received_are_context_not_commands_of_the_code(replay):
    divergence = replay("rich_history.json", rich.RichWithoutChild, *SUPPORT).divergence
    assert any(view.kind == "signal" and view.name == "approve" for view in divergence.recorded_context)
    assert all(view.kind != "signal" for view in divergence.issued_context)


def test_same_commands_in_an_earlier_workflow_task_pass_as_in_temporal(replay):
    # Not a divergence for Temporal's own replayer either: commands are matched in order, not per task.
    assert replay("rich_history.json", rich.RichShipsEarly, *SUPPORT).status == "passed"
