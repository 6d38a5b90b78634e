"""The runtime guards on LangGraph replays: a clock read in the entrypoint is reported and the comparison
goes on to the renamed task; a ``@task``'s function called directly is stopped before its body runs."""

from __future__ import annotations

from pathlib import Path

from conftest import effect_lines
from test_langgraph_replay import line_of, replay


def test_a_clock_read_is_reported_beside_a_renamed_task(recorded) -> None:
    for history in ("order_agent-waiting.json", "order_agent-approved.json"):
        code, report = replay([recorded.histories / history], "lg_apps.agent_clock_renamed:order_agent")
        assert code == 1, report
        [result] = report["results"]
        divergence = result["divergence"]
        assert (divergence["kind"], divergence["position"]) == ("command-mismatch", 2)
        assert (divergence["recorded"]["name"], divergence["issued"]["name"]) == ("draft", "compose")
        [hazard] = result["hazards"]
        assert (hazard["kind"], hazard["severity"], hazard["position"]) == ("nondeterministic-call", "error", 1)
        assert hazard["source"]["line"] == line_of("agent_clock_renamed", "started at %s")
        assert "called time.time() during replay (it returned a real value" in hazard["message"]
        assert "LangGraph has no version guard" in hazard["message"]


def test_a_task_function_called_directly_is_stopped_at_its_line(recorded, effects: Path) -> None:
    code, report = replay([recorded.histories / "order_agent-waiting.json"], "lg_apps.agent_task_body:order_agent")
    assert code == 1, report
    [result] = report["results"]
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call"
    assert divergence["message"].startswith("stopped the step body lg_apps.tasks.draft()")
    assert divergence["source"]["line"] == line_of("agent_task_body", "draft.func(")
    assert effect_lines(effects) == []  # the body did not run
