"""A LangGraph task that calls a model and records no prompt version is named in a note, on a thread
recorded for real (SqliteSaver) with per-call records: ``sort_ticket`` renders a ``Prompt`` (recorded),
``follow_up`` sends a registry text as a plain string (nothing to compare)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import fetch_agent

from replaytest.cli import cli
from replaytest.plugins.langgraph.prompts import with_prompts
from replaytest.prompts import fetched_ahead_note
from replaytest.replay.engine import UNRECORDED_MODEL_CALL_NOTE, uncompared_prompt_note

SPEC = "lg_apps.fetch_agent:fetch_agent"
SOURCE = Path(fetch_agent.__file__).read_text()


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("langgraph-prompt-notes")
    conn = sqlite3.connect(root / "threads.sqlite", check_same_thread=False)
    try:
        graph = fetch_agent.fetch_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        config = with_prompts({"configurable": {"thread_id": "t-1"}}, graph)
        assert graph.invoke("my invoice was charged twice", config) == {"queue": "billing", "follow_up": "billing"}
    finally:
        conn.close()
    out = root / "histories"
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{root / 'threads.sqlite'}",
                                      "--out", str(out), "--workflows", SPEC])
    assert result.exit_code == 0, result.output
    return out


def replay(histories: Path) -> dict:
    result = CliRunner().invoke(cli, ["replay", str(histories), "--workflows", SPEC, "--format", "json"])
    [found] = json.loads(result.output)["results"]
    return found


def test_a_model_task_with_no_recorded_prompt_is_named_in_a_note(histories: Path) -> None:
    document = json.loads(next(histories.glob("*.json")).read_text())
    assert [(e["name"], (e.get("prompt") or {}).get("name")) for e in document["events"]] == [
        ("sort_ticket", "triage"), ("follow_up", None),
    ]
    result = replay(histories)
    assert result["status"] == "passed", result
    [line] = [n for n, text in enumerate(SOURCE.splitlines(), 1) if "return str(MODEL.invoke(text).content)" in text]
    expected = UNRECORDED_MODEL_CALL_NOTE.format(what="task 'follow_up'", site=f"MODEL.invoke at fetch_agent.py:{line}")
    # Only the task that sent an unrecorded prompt: sort_ticket's prompt was recorded and compared.
    assert [note for note in result["notes"] if "recorded no prompt version:" in note] == [expected]


def test_without_per_call_records_no_such_note(histories: Path, tmp_path: Path) -> None:
    """A thread recorded before per-call records lacks a record for every task: the note would be noise."""
    document = json.loads(next(histories.glob("*.json")).read_text())
    for event in document["events"]:
        event.pop("prompt", None)
        event.get("extra", {}).pop("prompts", None)
        event.pop("prompts", None)
    (tmp_path / "old.json").write_text(json.dumps(document))
    result = replay(tmp_path)
    assert not [note for note in result["notes"] if "recorded no prompt version:" in note]


def test_a_parked_threads_next_task_that_fetches_its_prompt_is_named_in_a_note(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    try:
        graph = fetch_agent.review_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke("my invoice", with_prompts({"configurable": {"thread_id": "t-2"}}, graph))
    finally:
        conn.close()
    spec = "lg_apps.fetch_agent:review_agent"
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{tmp_path / 'threads.sqlite'}",
                                      "--out", str(tmp_path / "histories"), "--workflows", spec])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "histories"), "--workflows", spec, "--format", "json"])
    [found] = json.loads(result.output)["results"]
    assert found["status"] == "passed", found
    [line] = [n for n, text in enumerate(SOURCE.splitlines(), 1) if 'prompt = Prompt.fetched("answer"' in text]
    assert fetched_ahead_note("task 'answer'", ("fetch_agent.py", line), "parked") in found["notes"]
    # sort_ticket, already run, renders a Prompt of the code: no such note for it.
    assert [n for n in found["notes"] if "fetched at run time" in n] == [
        fetched_ahead_note("task 'answer'", ("fetch_agent.py", line), "parked")
    ]


def test_a_recorded_task_whose_prompt_is_fetched_at_run_time_is_named_as_not_compared(tmp_path: Path) -> None:
    """The reviewed thread ran ``answer``, which recorded the version of the prompt it fetched; the current code
    fetches it again at run time, so replay has no version to compare it with and says so."""
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    try:
        graph = fetch_agent.review_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke("my invoice", with_prompts({"configurable": {"thread_id": "t-3"}}, graph))
        graph.invoke(Command(resume="approved"), {"configurable": {"thread_id": "t-3"}})
    finally:
        conn.close()
    spec = "lg_apps.fetch_agent:review_agent"
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{tmp_path / 'threads.sqlite'}",
                                      "--out", str(tmp_path / "histories"), "--workflows", spec])
    assert result.exit_code == 0, result.output
    [document] = [json.loads(path.read_text()) for path in (tmp_path / "histories").glob("*.json")]
    [recorded] = [event["prompt"] for event in document["events"] if event["name"] == "answer"]
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "histories"), "--workflows", spec, "--format", "json"])
    [found] = json.loads(result.output)["results"]
    assert found["status"] == "passed", found
    [line] = [n for n, text in enumerate(SOURCE.splitlines(), 1) if 'prompt = Prompt.fetched("answer"' in text]
    expected = uncompared_prompt_note("task 'answer'", "task", "answer", recorded["version"], ("fetch_agent.py", line))
    assert [n for n in found["notes"] if "renders no Prompt of" in n] == [expected]
