"""Graph-API forms no other desk uses, recorded on real LangGraph into a SqliteSaver and checked: a node
routing with ``Command(goto=…, update=…)`` to the node that parks at ``interrupt()``, a thread stopped
by ``interrupt_before`` (no ``interrupt()`` call: LangGraph leaves it with the node still to run), and a
``MessagesState`` thread whose parked node reads its messages."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from graph_apps import chat_desk, effects, goto_desk, goto_desk_pay_renamed
from graph_kit import effect_lines, effects_log, import_histories, run_cli, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

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
