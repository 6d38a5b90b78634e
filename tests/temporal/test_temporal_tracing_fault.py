"""A fault in replaytest's own tracing of a replayed Temporal workflow is an error at once, never a stall
until the replay timeout and never a pass (the report would rest on an incomplete trace)."""

from __future__ import annotations

import pytest
import temporal_wf_sayhello as sayhello

from replaytest.plugins.temporal import replayer as temporal_replayer
from replaytest.plugins.temporal import trace


@pytest.mark.parametrize("hook", ["activation_done", "command_added"])
def test_a_tracing_fault_is_reported_as_an_error_without_waiting_for_the_timeout(replay, monkeypatch, hook):
    def broken(self, *args, **options):
        raise RuntimeError("tracing fault")

    monkeypatch.setattr(trace.WorkflowTrace, hook, broken)
    # Before, the fault ended the SDK's activation thread and the replay waited out this timeout; with it
    # this short, a stall would read as "did not finish within 5 s" instead of the fault.
    monkeypatch.setattr(temporal_replayer, "REPLAY_TIMEOUT_S", 5.0)
    monkeypatch.setattr(temporal_replayer, "REPLAY_TIMEOUT_PER_1000_EVENTS_S", 0.0, raising=False)
    result = replay("test_replayer_complete_history.json", sayhello.SayHelloWorkflow)
    assert result.status == "error"
    assert "could not be traced: RuntimeError: tracing fault" in result.error
    assert "within" not in result.error


def test_the_same_history_passes_with_tracing_intact(replay):
    result = replay("test_replayer_complete_history.json", sayhello.SayHelloWorkflow)
    assert result.status == "passed"
