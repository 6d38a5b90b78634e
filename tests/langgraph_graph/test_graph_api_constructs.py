"""Graph-API forms no other desk uses, recorded on real LangGraph into a SqliteSaver and checked: a node
routing with ``Command(goto=…, update=…)`` to the node that parks at ``interrupt()``, a thread stopped
by ``interrupt_before`` (no ``interrupt()`` call: LangGraph leaves it with the node still to run), a
``MessagesState`` thread whose parked node reads its messages, and a thread waiting in an ``async def`` node."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from graph_apps import async_desk, chat_desk, effects, goto_desk, goto_desk_pay_renamed
from graph_kit import effect_lines, effects_log, import_histories, run_cli, thread
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.plugins.langgraph.importer import histories_from_saver

__all__ = ["effects_log"]  # a fixture the tests use by name


def record(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        routed = goto_desk.graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in routed.invoke({"order_id": "A-17"}, thread("goto"))
        stopped = goto_desk.before_pay.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in stopped.invoke({"order_id": "B-90"}, thread("before"))
        assert stopped.invoke(Command(resume="approve"), thread("before")) == {
            "order_id": "B-90", "refund": 900.0, "approved": True
        }  # stopped before pay
    finally:
        conn.close()


def imported(tmp_path: Path, effects: Path) -> tuple[Path, Path, Path]:
    db = tmp_path / "desk.sqlite"
    record(db)
    folders: list[Path] = []
    for spec, thread_id in (("graph", "goto"), ("before_pay", "before")):
        out = tmp_path / thread_id
        code, output = import_histories(db, out, "--workflows", f"graph_apps.goto_desk:{spec}", "--thread-id", thread_id)
        assert code == 0, output
        folders.append(out)
    effects.unlink()
    return db, folders[0], folders[1]


def check(histories: Path, module: str, graph: str) -> dict[str, Any]:
    code, stdout, stderr = run_cli("replay", str(histories), "--workflows", f"graph_apps.{module}:{graph}", "--format", "json")
    assert code in (0, 1), stderr
    [result] = json.loads(stdout)["results"]
    return result


def test_a_node_routing_with_command_goto_parks_where_it_sent_the_thread_and_is_checked_there(
    tmp_path: Path, effects_log: Path
) -> None:
    _, routed, _ = imported(tmp_path, effects_log)
    [history] = routed.glob("*.json")
    recorded = json.loads(history.read_text())
    triage = next(e for e in recorded["events"] if e.get("name") == "triage")
    assert (triage["goes_to"], triage["writes"]) == (["human_review"], {"refund": "number"})
    assert recorded["graph"]["next"] == ["human_review"]
    assert check(routed, "goto_desk", "graph")["status"] == "passed"
    reworded = check(routed, "goto_desk_reworded", "graph")
    assert reworded["status"] == "diverged"
    assert reworded["divergence"]["kind"] == "interrupt-mismatch"
    assert "approve this refund, and why?" in reworded["divergence"]["message"]
    assert effect_lines(effects_log) == []  # no node body ran


def test_a_thread_stopped_by_interrupt_before_checks_the_node_it_stopped_before(tmp_path: Path, effects_log: Path) -> None:
    db, _, stopped = imported(tmp_path, effects_log)
    [history] = stopped.glob("*.json")
    recorded = json.loads(history.read_text())
    assert (recorded["status"], recorded["graph"]["next"]) == ("running", ["pay"])
    result = check(stopped, "goto_desk", "before_pay")
    assert result["status"] == "passed"
    assert result["notes"][0].startswith("running thread: the nodes still to run (pay) were checked to exist")
    renamed = check(stopped, "goto_desk_pay_renamed", "before_pay")
    assert (renamed["status"], renamed["divergence"]["kind"]) == ("diverged", "graph-node-missing")
    assert renamed["divergence"]["recorded"]["name"] == "pay"
    assert effect_lines(effects_log) == []
    # What LangGraph does on resume: the recorded code pays; under the renamed node the thread ends unpaid.
    assert resume(db, tmp_path, goto_desk) == ["pay B-90"]
    effects_log.unlink()
    assert resume(db, tmp_path, goto_desk_pay_renamed) == []


def resume(db: Path, tmp_path: Path, module: Any) -> list[str]:
    """The effects of resuming a copy of the stopped thread with ``module``'s ``before_pay`` graph."""
    copy = tmp_path / f"resume-{module.__name__.rsplit('.', 1)[-1]}.sqlite"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        module.before_pay.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(None, thread("before"))
    finally:
        conn.close()
    return effect_lines(effects.EFFECTS) if effects.EFFECTS else []


def test_a_messages_state_thread_is_re_run_with_its_messages_revived(tmp_path: Path, effects_log: Path) -> None:
    db = tmp_path / "chat.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = chat_desk.graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke({"messages": [("user", "where is my parcel?")]}, thread("chat"))
    finally:
        conn.close()
    out = tmp_path / "chat"
    code, output = import_histories(db, out, "--workflows", "graph_apps.chat_desk:graph")
    assert code == 0, output
    effects_log.unlink()
    # The parked node reads the last message's .content: it gets message objects back, not plain data.
    assert check(out, "chat_desk", "graph")["status"] == "passed"
    shouting = check(out, "chat_desk_shouting", "graph")
    assert (shouting["status"], shouting["divergence"]["kind"]) == ("diverged", "interrupt-mismatch")
    assert "YOU ASKED: WHERE IS MY PARCEL?" in shouting["divergence"]["message"]
    assert effect_lines(effects_log) == []


# LangGraph reads the run's config inside asyncio tasks (interrupt() in an async node) on Python 3.11+ only.
@pytest.mark.skipif(sys.version_info < (3, 11), reason="LangGraph runs interrupt() in async nodes on Python 3.11+ only")
def test_an_async_node_a_thread_waits_in_is_checked_to_exist_only(tmp_path: Path, effects_log: Path) -> None:
    saver = InMemorySaver()
    graph = async_desk.graph.copy(update={"checkpointer": saver})
    assert "__interrupt__" in asyncio.run(graph.ainvoke({"order_id": "A-17"}, thread("async")))
    out = tmp_path / "async"
    written, refused = histories_from_saver(saver, out, workflows=[async_desk.graph])
    assert refused == [] and len(written) == 1
    effects_log.unlink()
    result = check(out, "async_desk", "graph")
    assert result["status"] == "passed"
    assert "node 'review' is not a plain function node: it was checked to exist, not re-run" in result["notes"]
    # Its question is not compared (the note says so): another one passes too.
    assert check(out, "async_desk_reworded", "graph")["status"] == "passed"
    renamed = check(out, "async_desk_renamed", "graph")
    assert (renamed["status"], renamed["divergence"]["kind"]) == ("diverged", "graph-node-missing")
    assert effect_lines(effects_log) == []
