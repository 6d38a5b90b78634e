"""Replaying imported LangGraph threads against the current ``@entrypoint``: unchanged code passes;
reordered, added, removed and renamed task calls are caught with the position, both sides and the
line — including the reorder LangGraph's own resume accepts while handing a task another call's
result. No task body runs during replay."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import AGENT_SPEC, ASYNC_NEEDS_311, effect_lines, import_histories, record_order_runs, thread
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import agent, agent_reordered, more
from test_langgraph_import import record_async

from replaytest.cli import cli
from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import histories_from_saver

APPS = Path(__file__).parent / "lg_apps"


def replay(paths: list[Path], spec: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["replay", *map(str, paths), "--workflows", spec, "--format", "json"])
    return result.exit_code, json.loads(result.output)


def line_of(module: str, text: str) -> int:
    lines = (APPS / f"{module}.py").read_text().splitlines()
    [number] = [n for n, line in enumerate(lines, start=1) if text in line]
    return number


def divergence(recorded, history: str, module: str) -> dict:
    code, report = replay([recorded.histories / history], f"lg_apps.{module}:order_agent")
    assert code == 1, report
    [result] = report["results"]
    assert result["status"] == "diverged"
    return result["divergence"]


def test_unchanged_code_replays_every_imported_thread(recorded) -> None:
    code, report = replay([recorded.histories], AGENT_SPEC)
    assert code == 0, report
    assert [(r["workflow"]["id"], r["status"]) for r in report["results"]] == [("approved", "passed"), ("waiting", "passed")]
    # "passed" says what it could not check: LangGraph stores neither task inputs nor prompt versions.
    assert report["summary"]["notes"] == [
        "2 histories: LangGraph stores no task inputs: task arguments were not compared",
        "2 histories: no prompt versions recorded: prompt drift was not checked",
    ]


@pytest.mark.parametrize("history", ["order_agent-approved.json", "order_agent-waiting.json"])
def test_reordered_tasks_are_a_command_mismatch_at_the_first_call(recorded, history: str) -> None:
    found = divergence(recorded, history, "agent_reordered")
    assert (found["kind"], found["position"]) == ("command-mismatch", 1)
    assert (found["recorded"]["name"], found["issued"]["name"]) == ("fetch_price", "draft")
    assert found["source"]["path"].endswith("agent_reordered.py")
    assert found["source"]["line"] == line_of("agent_reordered", 'intro = draft("intro"')


@pytest.mark.parametrize("history", ["order_agent-approved.json", "order_agent-waiting.json"])
def test_an_added_task_is_caught_where_it_is_called(recorded, history: str) -> None:
    found = divergence(recorded, history, "agent_added")
    assert (found["kind"], found["position"]) == ("command-mismatch", 2)
    assert (found["recorded"]["name"], found["issued"]["name"]) == ("draft", "check_stock")
    assert found["source"]["line"] == line_of("agent_added", "check_stock(request")


def test_a_removed_task_is_a_missing_command(recorded) -> None:
    found = divergence(recorded, "order_agent-approved.json", "agent_removed")
    assert (found["kind"], found["position"]) == ("missing-command", 4)
    assert found["recorded"]["name"] == "notify" and found["issued"] is None
    assert "the history continues with step 'notify'" in found["message"]
    assert found["source"]["line"] == line_of("agent_removed", 'body = draft("body"')  # where notify used to follow


def test_a_removed_task_after_the_interrupt_does_not_affect_a_thread_parked_before_it(recorded) -> None:
    code, report = replay([recorded.histories / "order_agent-waiting.json"], "lg_apps.agent_removed:order_agent")
    assert code == 0, report


def test_a_task_added_after_the_end_of_a_completed_run_is_an_extra_command(recorded) -> None:
    found = divergence(recorded, "order_agent-approved.json", "agent_extra_end")
    assert found["kind"] == "extra-command" and found["issued"]["name"] == "notify" and found["recorded"] is None
    assert found["source"]["line"] == line_of("agent_extra_end", 'notify("again")')
    # A parked thread would run it on resume, long after its interrupt: nothing to report there.
    assert replay([recorded.histories / "order_agent-waiting.json"], "lg_apps.agent_extra_end:order_agent")[0] == 0


@pytest.mark.parametrize("history", ["order_agent-approved.json", "order_agent-waiting.json"])
def test_a_renamed_task_names_both_sides(recorded, history: str) -> None:
    found = divergence(recorded, history, "agent_renamed")
    assert (found["kind"], found["position"]) == ("command-mismatch", 2)
    assert (found["recorded"]["name"], found["issued"]["name"]) == ("draft", "compose")
    assert "the code issued step 'compose' where the history recorded step 'draft'" in found["message"]
    assert found["source"]["line"] == line_of("agent_renamed", 'intro = compose("intro"')


def test_the_text_report_shows_both_sides_and_the_line(recorded) -> None:
    result = CliRunner().invoke(
        cli, ["replay", str(recorded.histories / "order_agent-waiting.json"), "--workflows", "lg_apps.agent_renamed:order_agent"]
    )
    assert result.exit_code == 1
    assert "command-mismatch at event #2: the code issued step 'compose' where the history recorded step 'draft'" in result.output
    assert f"agent_renamed.py:{line_of('agent_renamed', 'intro = compose(')} in order_agent" in result.output


def test_langgraph_resumes_reordered_code_with_the_wrong_result_and_replay_catches_it(tmp_path: Path, effects: Path) -> None:
    db = tmp_path / "demo.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        original = agent.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in original.invoke({"item": "lamp"}, thread("demo"))
        code, output = import_histories(db, tmp_path / "histories", "--workflows", AGENT_SPEC)
        assert code == 0, output
        effects.unlink()
        # The deploy: the two drafts moved before the price lookup; LangGraph resumes the parked thread.
        reordered = agent_reordered.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        resumed = reordered.invoke(Command(resume={"approved": True}), thread("demo"))
    finally:
        conn.close()
    # No error from LangGraph, but draft("body") got the result recorded for draft("intro"), and
    # draft("intro") and fetch_price ran again.
    assert resumed["intro"] == "intro about the lamp"
    assert resumed["body"] == "intro about the lamp"
    assert effect_lines(effects) == ["draft intro lamp", "fetch_price lamp", "notify intro about the lamp / intro about the lamp"]
    # replaytest, given the history imported before the deploy, refuses the reordered code.
    code, report = replay([tmp_path / "histories/order_agent-demo.json"], "lg_apps.agent_reordered:order_agent")
    assert code == 1
    found = report["results"][0]["divergence"]
    assert (found["kind"], found["position"], found["recorded"]["name"], found["issued"]["name"]) == (
        "command-mismatch", 1, "fetch_price", "draft",
    )


def test_replay_runs_no_task_body(recorded, effects: Path) -> None:
    # The effects file is real: running the agent for real writes to it.
    agent.order_agent.copy(update={"checkpointer": InMemorySaver()}).invoke({"item": "lamp"}, thread("control"))
    assert effect_lines(effects) == ["fetch_price lamp", "draft intro lamp", "draft body lamp"]
    effects.unlink()
    for module in ("agent", "agent_reordered", "agent_added", "agent_removed", "agent_renamed"):
        replay([recorded.histories], f"lg_apps.{module}:order_agent")
    assert not effects.exists()


def test_a_thread_with_several_invocations_replays_with_its_previous_value(tmp_path: Path, effects: Path) -> None:
    saver = InMemorySaver()
    graph = more.tally.copy(update={"checkpointer": saver})
    graph.invoke(5, thread("t"))
    graph.invoke(7, thread("t"))
    [(path, _)], _ = histories_from_saver(saver, tmp_path, workflows=[more.tally])
    effects.unlink()
    assert replay([path], "lg_apps.more:tally")[0] == 0
    code, report = replay([path], "lg_apps.more_edited:tally")
    assert code == 1
    found = report["results"][0]["divergence"]
    # The recorded add() result (12) is fed back and previous is the recorded 5: 17 instead of 12.
    assert found["kind"] == "result-mismatch"
    assert found["message"] == "the code now returns 17; the history recorded 12"
    assert not effects.exists()


def test_nested_tasks_and_failed_runs_replay(tmp_path: Path) -> None:
    db = tmp_path / "more.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        more.nested_agent.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(3, thread("n"))
        with pytest.raises(ValueError):
            more.failing_agent.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(4, thread("f"))
    finally:
        conn.close()
    import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:nested_agent")
    assert replay([tmp_path / "out/nested_agent-n.json"], "lg_apps.more:nested_agent")[0] == 0
    assert replay([tmp_path / "out/failing_agent-f.json"], "lg_apps.more:failing_agent")[0] == 0


@ASYNC_NEEDS_311
def test_async_entrypoints_replay_and_diverge(tmp_path: Path, effects: Path) -> None:
    db = tmp_path / "async.sqlite"
    record_async(db)
    import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:async_agent")
    effects.unlink()
    code, report = replay([tmp_path / "out"], "lg_apps.more:async_agent")
    assert code == 0, report
    code, report = replay([tmp_path / "out"], "lg_apps.more_edited:async_agent")
    assert code == 1
    assert {(r["divergence"]["recorded"]["name"], r["divergence"]["issued"]["name"]) for r in report["results"]} == {
        ("lookup", "confirm")
    }
    assert not effects.exists()


def test_a_history_of_an_entrypoint_the_code_no_longer_has_is_stale(recorded) -> None:
    code, report = replay([recorded.histories / "order_agent-waiting.json"], "lg_apps.more:tally")
    assert code == 2
    assert report["results"][0]["status"] == "stale"
    assert "no current @entrypoint named 'order_agent'" in report["results"][0]["error"]


@pytest.mark.slow
def test_the_pytest_plugin_replays_langgraph_histories(recorded, pytester: pytest.Pytester) -> None:
    (pytester.path / "histories").mkdir()
    for path in recorded.histories.iterdir():
        (pytester.path / "histories" / path.name).write_bytes(path.read_bytes())
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["lg_apps.agent:order_agent"]\n'
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["lg_apps.agent_renamed:order_agent"]\n'
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*command-mismatch at event #2: the code issued step 'compose' where the history recorded step 'draft'*"])


def test_recording_twice_gives_the_same_histories(tmp_path: Path, recorded) -> None:
    """Task ids depend on checkpoint ids, which are fresh per run: the import must not."""
    record_order_runs(tmp_path / "again.sqlite")
    import_histories(tmp_path / "again.sqlite", tmp_path / "out", "--workflows", AGENT_SPEC)
    for name in ("order_agent-approved.json", "order_agent-waiting.json"):
        again, first = load_history(tmp_path / "out" / name), load_history(recorded.histories / name)
        assert [(e.kind, e.name, e.result) for e in again.events] == [(e.kind, e.name, e.result) for e in first.events]


@pytest.mark.parametrize(
    ("installed", "message"),
    [
        ("1.3.0", "langgraph 1.3.0 is installed but replaytest's LangGraph support relies on its internals and is tested with langgraph>=1.0.2,<1.3"),
        (None, "langgraph is not installed; install replaytest[langgraph]"),
    ],
)
def test_an_untested_or_missing_langgraph_is_refused_not_guessed(
    recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: str | None, message: str
) -> None:
    from replaytest.plugins.langgraph import internals as langgraph_internals

    monkeypatch.setattr(langgraph_internals, "installed_version", lambda: installed)
    code, report = replay([recorded.histories / "order_agent-waiting.json"], AGENT_SPEC)
    assert code == 2 and report["results"][0]["status"] == "error" and report["results"][0]["error"] == message
    code, output = import_histories(recorded.db, tmp_path, "--workflows", AGENT_SPEC)
    assert code == 2 and message in output


def test_code_that_now_fails_before_the_interrupt_a_thread_waits_at_diverges(recorded) -> None:
    found = divergence(recorded, "order_agent-waiting.json", "agent_raising")  # desk: 250.0
    assert found["kind"] == "result-mismatch"
    assert found["message"] == (
        "the code now fails with ValueError: price 250.0 needs a manager; the recorded run went on to wait at an interrupt"
    )
    assert found["source"]["line"] == line_of("agent_raising", "raise ValueError")
    code, _ = replay([recorded.histories / "order_agent-approved.json"], "lg_apps.agent_raising:order_agent")
    assert code == 0  # lamp: 40.0, the same path as recorded


def test_a_clock_read_in_the_entrypoint_is_a_nondeterministic_call(recorded) -> None:
    found = divergence(recorded, "order_agent-waiting.json", "agent_clock")
    assert (found["kind"], found["position"]) == ("nondeterministic-call", 2)
    assert "orchestration code called time.time() during replay" in found["message"]
    assert found["source"]["line"] == line_of("agent_clock", "started = time.time()")
