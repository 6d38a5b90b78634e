"""The LangGraph resume rehearsal judged by LangGraph itself.

The order agent's threads are recorded for real on a SqliteSaver (``approved``: resumed with
``{"approved": True}`` and completed; ``waiting``: parked at the approval interrupt) and imported. Each
test replays the histories with ``rehearse`` against a version of the code, then really resumes the
parked thread with LangGraph on a copy of the recorded database, with that version and the answer the
rehearsal delivered: the first task body LangGraph runs (the effects file) must be the one the rehearsal
named. Task bodies append to the effects file whenever they really run, so a rehearsal that ran one shows."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import effect_lines, import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import agent, agent_second_review, counter, agent_stock_after_review, agent_stock_before_review, tasks

from replaytest.history import load_history
from replaytest.plugins.langgraph import PLUGIN
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.rehearsal import NEUTRAL_ANSWER, rehearse
from replaytest.plugins.langgraph.replayer import LangGraphReplayer
from replaytest.replay import rehearsal as samples
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.batch import replay_many
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.runner import load_workflows

# What the ``approved`` thread answered: the answer the rehearsal of ``waiting`` delivers.
ANSWER = {"approved": True}


def rehearsed(paths: list[Path], version: ModuleType) -> dict[str, ReplayResult]:
    assert PLUGIN.replayer is not None
    workflows = load_workflows((), None, [version.order_agent])
    results = replay_many(sorted(paths), [PLUGIN.replayer], workflows, ReplayOptions(rehearse=True))
    return {str(result.workflow_id): result for result in results}


def histories(recorded: Any) -> list[Path]:
    return sorted(recorded.histories.glob("*.json"))


def waiting_history(recorded: Any) -> Path:
    [path] = [p for p in histories(recorded) if json.loads(p.read_text())["workflow"]["id"] == "waiting"]
    return path


def really_resumed(recorded: Any, tmp_path: Path, version: ModuleType, answer: Any) -> tuple[Any, Any]:
    """LangGraph itself resumes ``waiting`` with ``version`` on a copy of the recorded database: (its output, or
    the exception it raised)."""
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(recorded.db, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        graph = version.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        try:
            return graph.invoke(Command(resume=answer), thread("waiting")), None
        except Exception as error:  # noqa: BLE001 - what LangGraph raised is the observation
            return None, error
    finally:
        conn.close()


def test_unchanged_code_continues_into_the_notification_as_langgraph_does(recorded, effects: Path, tmp_path: Path) -> None:
    results = rehearsed(histories(recorded), agent)
    assert results["approved"].rehearsal is None  # finished: nothing to resume
    rehearsal = results["waiting"].rehearsal
    assert rehearsal is not None, results["waiting"].notes
    assert rehearsal.outcome == "continues"
    assert [(c.kind, c.name) for c in rehearsal.commands] == [("step", "notify")]
    assert rehearsal.delivered.startswith('Command(resume={"approved": true}): the answer another thread recorded')
    assert rehearsal.source is not None and rehearsal.source.path.endswith("agent.py")
    assert "InMemorySaver" in rehearsal.driver
    assert effect_lines(effects) == []  # no task body ran
    output, error = really_resumed(recorded, tmp_path, agent, ANSWER)
    assert error is None and output["receipt"]["sent"] is True
    # LangGraph ran no recorded task again: the first (and only) body it ran is the one the rehearsal named.
    assert effect_lines(effects) == ["notify intro about the desk / body about the desk"]


def test_a_task_inserted_after_the_interrupt_is_what_langgraph_runs_next(recorded, effects: Path, tmp_path: Path) -> None:
    results = rehearsed(histories(recorded), agent_stock_after_review)
    waiting = results["waiting"]
    assert waiting.status == "passed"
    assert waiting.rehearsal is not None and waiting.rehearsal.outcome == "continues"
    assert [c.name for c in waiting.rehearsal.commands] == ["check_stock"]
    assert effect_lines(effects) == []
    really_resumed(recorded, tmp_path, agent_stock_after_review, ANSWER)
    assert effect_lines(effects)[0] == "check_stock desk"


def test_a_task_inserted_before_the_interrupt_runs_first_on_resume(recorded, effects: Path, tmp_path: Path) -> None:
    """The replay already refuses it (extra-command: LangGraph would run it before the answer is read), so the
    batch rehearses nothing; rehearsed directly, LangGraph schedules the inserted task first, and so does the
    real resume."""
    results = rehearsed(histories(recorded), agent_stock_before_review)
    waiting = results["waiting"]
    assert waiting.status == "diverged" and waiting.divergence is not None
    assert waiting.divergence.kind == "extra-command"
    assert waiting.rehearsal is None
    graph = agent_stock_before_review.order_agent
    node = lg.entrypoint_node(graph)
    assert node is not None
    rehearsal, note = rehearse(load_history(waiting_history(recorded)), graph, node[1], "order_agent",
                               [vars(agent_stock_before_review)])
    assert note is None and rehearsal is not None
    assert rehearsal.outcome == "continues" and [c.name for c in rehearsal.commands] == ["check_stock"]
    assert effect_lines(effects) == []
    really_resumed(recorded, tmp_path, agent_stock_before_review, ANSWER)
    assert effect_lines(effects)[0] == "check_stock desk"


def test_a_second_interrupt_waits_again_as_langgraph_does(recorded, effects: Path, tmp_path: Path) -> None:
    results = rehearsed(histories(recorded), agent_second_review)
    rehearsal = results["waiting"].rehearsal
    assert rehearsal is not None and rehearsal.outcome == "waits" and rehearsal.commands == ()
    output, error = really_resumed(recorded, tmp_path, agent_second_review, ANSWER)
    assert error is None and "__interrupt__" in output
    assert output["__interrupt__"][0].value == {"item": "desk", "confirm": ANSWER}
    assert effect_lines(effects) == []  # no task ran, in the rehearsal or the real resume


def test_without_a_recorded_answer_the_neutral_one_is_delivered_and_said(recorded, effects: Path, tmp_path: Path) -> None:
    """Only the parked thread in the batch: no other thread answered. The agent reads ``decision["approved"]``
    from the neutral answer and fails, in the rehearsal as in LangGraph's own resume."""
    results = rehearsed([waiting_history(recorded)], agent)
    rehearsal = results["waiting"].rehearsal
    assert rehearsal is not None and rehearsal.outcome == "completes"
    assert "no thread of the batch recorded an answer to interrupt #1" in rehearsal.delivered
    assert rehearsal.note.startswith("the run fails on resume: TypeError")
    output, error = really_resumed(recorded, tmp_path, agent, NEUTRAL_ANSWER)
    assert isinstance(error, TypeError)
    assert effect_lines(effects) == []


def test_no_task_body_runs_and_the_tasks_are_restored(recorded, effects: Path) -> None:
    bodies = {name: getattr(tasks, name).func for name in ("fetch_price", "draft", "notify", "check_stock")}
    for version in (agent, agent_stock_after_review, agent_stock_before_review, agent_second_review):
        rehearsed(histories(recorded), version)
    assert effect_lines(effects) == []
    assert {name: getattr(tasks, name).func for name in bodies} == bodies


def test_a_history_langgraph_would_read_differently_is_not_rehearsed(recorded, tmp_path: Path) -> None:
    """A recorded task id the restored checkpoint does not derive: LangGraph would not find that result and
    would run the task again, so the rehearsal says it cannot restore the thread instead of guessing."""
    document = json.loads(waiting_history(recorded).read_text())
    document["events"][0]["task_id"] = "00000000-0000-0000-0000-000000000001"
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    [result] = rehearsed([path], agent).values()
    assert result.status == "passed" and result.rehearsal is None
    assert any(note.startswith("resume not rehearsed: the thread's checkpoint could not be restored faithfully")
               for note in result.notes), result.notes


@pytest.mark.parametrize("status", ["running"])
def test_a_thread_not_parked_at_an_interrupt_gets_a_note(recorded, tmp_path: Path, status: str) -> None:
    document = json.loads(waiting_history(recorded).read_text())
    document["status"] = status
    document["events"] = [event for event in document["events"] if event["kind"] == "step"]
    path = tmp_path / "running.json"
    path.write_text(json.dumps(document))
    [result] = rehearsed([path], agent).values()
    assert result.rehearsal is None
    assert "resume not rehearsed: the thread is not parked at a recorded interrupt" in " ".join(result.notes)


def test_a_thread_parked_at_its_second_interrupt_resumes_past_it_as_langgraph_does(tmp_path: Path, effects: Path) -> None:
    """The first interrupt's answer is restored too (LangGraph's ``__resume__`` write): LangGraph re-runs the
    entrypoint, answers the first interrupt from it and the second from the delivered answer. (The importer
    does not record the last answer of a completed two-interrupt thread — LangGraph keeps it under the null
    task id — so the batch's answer to interrupt #2 is offered here directly.)"""
    db = tmp_path / "two.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent_second_review.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        graph.invoke({"item": "desk"}, thread("second"))
        graph.invoke(Command(resume={"approved": True}), thread("second"))  # parked at the confirmation
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.agent_second_review:order_agent")
    assert code == 0, output
    [path] = (tmp_path / "histories").glob("*.json")
    effects.unlink()
    samples.clear()
    samples.remember_signal("langgraph", "order_agent", "interrupt #2", True)
    try:
        result = LangGraphReplayer().replay_history(load_history(path), load_workflows((), None, [agent_second_review.order_agent]),
                                                    ReplayOptions(rehearse=True))
    finally:
        samples.clear()
    rehearsal = result.rehearsal
    assert rehearsal is not None, result.notes
    assert rehearsal.outcome == "continues" and [c.name for c in rehearsal.commands] == ["notify"]
    assert rehearsal.delivered.startswith("Command(resume=true): the answer another thread recorded for interrupt #2")
    assert effect_lines(effects) == []
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent_second_review.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        output = graph.invoke(Command(resume=True), thread("second"))
    finally:
        conn.close()
    assert output["receipt"]["sent"] is True
    assert effect_lines(effects) == ["notify intro about the desk / body about the desk"]


def test_a_later_invocation_of_a_thread_is_restored_with_its_previous_value(tmp_path: Path, effects: Path) -> None:
    """The latest invocation's input checkpoint has a later step and a ``__previous__`` value: the step is the
    one whose task ids are the recorded ones, and LangGraph resumes it as it resumes the real thread."""
    db = tmp_path / "counter.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = counter.counter.copy(update={"checkpointer": SqliteSaver(conn)})
        for thread_id, answers in (("kept", [True]), ("again", [False])):
            graph.invoke(5, thread(thread_id))
            graph.invoke(Command(resume=answers[0]), thread(thread_id))
        graph.invoke(7, thread("kept"))  # second invocation, parked at its interrupt
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "histories", "--workflows", "lg_apps.counter:counter")
    assert code == 0, output
    kept = json.loads(next((tmp_path / "histories").glob("*kept*.json")).read_text())
    assert kept["events"][0]["name"] == "previous" and kept["status"] == "parked"
    effects.unlink()
    assert PLUGIN.replayer is not None
    results = {str(r.workflow_id): r for r in replay_many(
        sorted((tmp_path / "histories").glob("*.json")), [PLUGIN.replayer], load_workflows((), None, [counter.counter]),
        ReplayOptions(rehearse=True))}
    rehearsal = results["kept"].rehearsal
    assert rehearsal is not None, results["kept"].notes
    # The batch's other answers: "kept" answered True to its first invocation's interrupt, but a thread's latest
    # invocation is its history; "again" answered False.
    assert rehearsal.delivered.startswith("Command(resume=false)")
    assert rehearsal.outcome == "completes"
    assert effect_lines(effects) == []
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = counter.counter.copy(update={"checkpointer": SqliteSaver(conn)})
        assert graph.invoke(Command(resume=False), thread("kept")) == 12  # previous 5 + 7, no task run
    finally:
        conn.close()
    assert effect_lines(effects) == []
