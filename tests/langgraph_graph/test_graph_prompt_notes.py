"""A StateGraph node that calls a model and records no prompt version is named in a note, on a thread
recorded for real (SqliteSaver) with per-call records: ``triage`` renders a ``Prompt`` (recorded),
``follow_up`` sends a registry text as a plain string (nothing to compare)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from graph_apps import fetch_graph
from graph_kit import import_histories, run_cli, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.plugins.langgraph.prompts import with_prompts
from replaytest.prompts import fetched_ahead_note
from replaytest.replay.engine import UNRECORDED_MODEL_CALL_NOTE, uncompared_prompt_note

SPEC = "graph_apps.fetch_graph:graph"
SOURCE = Path(fetch_graph.__file__).read_text()


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("graph-prompt-notes")
    conn = sqlite3.connect(root / "threads.sqlite", check_same_thread=False)
    try:
        graph = fetch_graph.graph.copy(update={"checkpointer": SqliteSaver(conn)})
        done = graph.invoke({"ticket": "my invoice was charged twice"}, with_prompts(thread("t-1"), graph))
        assert done["follow_up"] == "billing"
    finally:
        conn.close()
    code, output = import_histories(root / "threads.sqlite", root / "histories", "--workflows", SPEC)
    assert code == 0, output
    return root / "histories"


def test_a_model_node_with_no_recorded_prompt_is_named_in_a_note(histories: Path) -> None:
    code, stdout, stderr = run_cli("replay", str(histories), "--workflows", SPEC, "--format", "json")
    [result] = json.loads(stdout)["results"]
    assert result["status"] == "passed", result
    [line] = [n for n, text in enumerate(SOURCE.splitlines(), 1) if 'return {"follow_up": str(MODEL.invoke(text)' in text]
    expected = UNRECORDED_MODEL_CALL_NOTE.format(what="node 'follow_up'", site=f"MODEL.invoke at fetch_graph.py:{line}")
    # Only the node that sent an unrecorded prompt: triage's prompt was recorded and compared.
    assert [note for note in result["notes"] if "recorded no prompt version:" in note] == [expected]


def test_a_parked_threads_next_node_that_fetches_its_prompt_is_named_in_a_note(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    try:
        graph = fetch_graph.review_graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke({"ticket": "my invoice"}, with_prompts(thread("t-2"), graph))
    finally:
        conn.close()
    spec = "graph_apps.fetch_graph:review_graph"
    code, output = import_histories(tmp_path / "threads.sqlite", tmp_path / "histories", "--workflows", spec)
    assert code == 0, output
    code, stdout, stderr = run_cli("replay", str(tmp_path / "histories"), "--workflows", spec, "--format", "json")
    [result] = json.loads(stdout)["results"]
    assert result["status"] == "passed", result
    [line] = [n for n, text in enumerate(SOURCE.splitlines(), 1) if 'prompt = Prompt.fetched("answer"' in text]
    expected = fetched_ahead_note("node 'answer'", ("fetch_graph.py", line), "parked")
    assert [n for n in result["notes"] if "fetched at run time" in n] == [expected]


def test_a_recorded_node_whose_prompt_is_fetched_at_run_time_is_named_as_not_compared(tmp_path: Path) -> None:
    """The reviewed thread ran ``answer``, which recorded the version of the prompt it fetched; the current code
    fetches it again at run time, so replay has no version to compare it with and says so."""
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    try:
        graph = fetch_graph.review_graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke({"ticket": "my invoice"}, with_prompts(thread("t-3"), graph))
        graph.invoke(Command(resume="approved"), thread("t-3"))
    finally:
        conn.close()
    spec = "graph_apps.fetch_graph:review_graph"
    code, output = import_histories(tmp_path / "threads.sqlite", tmp_path / "histories", "--workflows", spec)
    assert code == 0, output
    [document] = [json.loads(path.read_text()) for path in (tmp_path / "histories").glob("*.json")]
    [recorded] = [event["prompt"] for event in document["events"] if event["name"] == "answer"]
    code, stdout, stderr = run_cli("replay", str(tmp_path / "histories"), "--workflows", spec, "--format", "json")
    [result] = json.loads(stdout)["results"]
    assert result["status"] == "passed", result
    [line] = [n for n, text in enumerate(SOURCE.splitlines(), 1) if 'prompt = Prompt.fetched("answer"' in text]
    expected = uncompared_prompt_note("node 'answer'", "node", "answer", recorded["version"], ("fetch_graph.py", line))
    assert [n for n in result["notes"] if "renders no Prompt of" in n] == [expected]
