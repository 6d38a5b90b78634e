"""RT105 against the real engine (LangGraph's graph API): a node named with a value that differs between runs
(a fresh UUID at import) is reported by lint at the ``add_node`` name, and a thread paused in that node by
``interrupt()`` and resumed by a process that imported the module again (another name) does not run the node
at all: LangGraph ends the run without the node's update, and no error says so."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from langgraph.checkpoint.memory import MemorySaver
from langgraph.types import Command

GRAPH = '''\
import uuid
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict):
    text: str


def review(state: State) -> State:
    answer = interrupt("approve?")
    return {"text": state["text"] + answer}


REVIEW = f"review_{uuid.uuid4().hex[:8]}"
builder = StateGraph(State)
builder.add_node(REVIEW, review)
builder.add_edge(START, REVIEW)
builder.add_edge(REVIEW, END)
'''
NAMING_LINE = GRAPH.splitlines().index("builder.add_node(REVIEW, review)") + 1


def _import_fresh(path: Path, tag: str):
    """The module as a new process would import it: its import-time values made anew."""
    spec = importlib.util.spec_from_file_location(f"graph_step_names_{tag}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lint_reports_the_node_name_made_at_import(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "graph.py").write_text(GRAPH)
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    [finding] = json.loads(run.stdout)["diagnostics"]
    assert (finding["rule"], finding["line"], finding["column"]) == ("RT105", NAMING_LINE, len("builder.add_node(") + 1)
    assert finding["message"].startswith("REVIEW names the graph node with a value that differs between runs "
                                         "(uuid.uuid4())")


def test_a_thread_resumed_by_another_import_skips_the_renamed_node(tmp_path: Path) -> None:
    path = tmp_path / "graph.py"
    path.write_text(GRAPH)
    saver = MemorySaver()
    config = {"configurable": {"thread_id": "t-1"}}
    first = _import_fresh(path, "first")
    paused = first.builder.compile(checkpointer=saver).invoke({"text": "draft"}, config)
    assert paused["__interrupt__"], paused
    again = _import_fresh(path, "again")
    assert again.REVIEW != first.REVIEW
    graph = again.builder.compile(checkpointer=saver)
    resumed = graph.invoke(Command(resume=" approved"), config)
    assert resumed == {"text": "draft"}  # the review never ran: its update is lost, silently
    assert graph.get_state(config).next == ()
    # The same resume against the module as first imported applies the update: the name is the cause.
    assert first.builder.compile(checkpointer=(fresh := MemorySaver())).invoke({"text": "draft"}, config)
    assert first.builder.compile(checkpointer=fresh).invoke(Command(resume=" approved"), config) == {
        "text": "draft approved"}
