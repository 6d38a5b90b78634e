"""Graph-API forms recorded on real LangGraph into a SqliteSaver and checked, each against what LangGraph itself
does when it resumes a copy of the recorded checkpoint under the changed code: a thread stopped by
``interrupt_after`` (after a node, the next one still to run), an agent loop of ``ToolNode`` and
``tools_condition`` parked at an ``interrupt()`` inside a tool (no tool body runs during replay: a tool is an
effect), and a graph compiled with a store (no checkpoint keeps its values; replay never writes to it)."""

from __future__ import annotations

import importlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from graph_apps import effects, goto_desk, memory_graph, tool_desk
from graph_kit import effect_lines, effects_log, import_histories, run_cli, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

__all__ = ["effects_log"]  # a fixture the tests use by name


def record(db: Path, graph: Any, thread_id: str, *inputs: Any) -> Any:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        running = graph.copy(update={"checkpointer": SqliteSaver(conn)})
        return [running.invoke(value, thread(thread_id)) for value in inputs][-1]
    finally:
        conn.close()


def imported(db: Path, out: Path, spec: str) -> Path:
    code, output = import_histories(db, out, "--workflows", spec, "--no-redact")
    assert code == 0, output
    return out


def check(histories: Path, module: str, graph: str, *options: str) -> dict[str, Any]:
    code, stdout, stderr = run_cli("replay", str(histories), "--workflows", f"graph_apps.{module}:{graph}",
                                   "--format", "json", *options)
    assert code in (0, 1), stderr
    [result] = json.loads(stdout)["results"]
    return result


def resume(db: Path, module: str, graph: str, thread_id: str, value: Any) -> tuple[Any, list[str]]:
    """What LangGraph returns and which node bodies it runs when it resumes a copy of the thread under
    ``module``'s ``graph``."""
    copy = db.with_name(f"resume-{module}-{graph}.sqlite")
    shutil.copy(db, copy)
    log = db.with_name(f"effects-{module}-{graph}.log")
    kept, effects.EFFECTS = effects.EFFECTS, log
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        compiled = getattr(importlib.import_module(f"graph_apps.{module}"), graph)
        returned = compiled.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(value, thread(thread_id))
    finally:
        conn.close()
        effects.EFFECTS = kept
    return returned, effect_lines(log)


def test_a_thread_stopped_by_interrupt_after_checks_the_node_still_to_run(tmp_path: Path, effects_log: Path) -> None:
    db = tmp_path / "after.sqlite"
    stopped = record(db, goto_desk.after_review, "after", {"order_id": "C-5"}, Command(resume="approve"))
    assert stopped == {"order_id": "C-5", "refund": 900.0, "approved": True}  # stopped after human_review, unpaid
    out = imported(db, tmp_path / "after", "graph_apps.goto_desk:after_review")
    [history] = out.glob("*.json")
    recorded = json.loads(history.read_text())
    assert (recorded["status"], recorded["graph"]["next"]) == ("running", ["pay"])
    assert [e["name"] for e in recorded["events"]] == ["__start__", "triage", "human_review"]
    effects_log.unlink()
    result = check(out, "goto_desk", "after_review")
    assert result["status"] == "passed"
    assert result["notes"][0].startswith("running thread: the nodes still to run (pay) were checked to exist")
    # The node it stopped after already ran: LangGraph does not run it again, so its new question passes.
    assert check(out, "goto_desk_reworded", "after_review")["status"] == "passed"
    renamed = check(out, "goto_desk_pay_renamed", "after_review")
    assert (renamed["status"], renamed["divergence"]["kind"], renamed["divergence"]["recorded"]["name"]) == (
        "diverged", "graph-node-missing", "pay")
    assert effect_lines(effects_log) == []
    # What LangGraph does on resume: pays under the recorded and the reworded code, ends unpaid under the renamed node.
    assert resume(db, "goto_desk", "after_review", "after", None)[1] == ["pay C-5"]
    assert resume(db, "goto_desk_reworded", "after_review", "after", None)[1] == ["pay C-5"]
    assert resume(db, "goto_desk_pay_renamed", "after_review", "after", None)[1] == []


def recorded_tools(tmp_path: Path) -> tuple[Path, Path]:
    """Thread ``tool``: the agent looked the order up, asked for the refund, and waits in ``tools`` at the refund
    tool's ``interrupt()``."""
    db = tmp_path / "tools.sqlite"
    parked = record(db, tool_desk.graph, "tool", {"messages": [("user", "refund A-17")]})
    assert parked["__interrupt__"][0].value == {"question": tool_desk.QUESTION, "order_id": "A-17", "amount": 40.0}
    return db, imported(db, tmp_path / "tool", "graph_apps.tool_desk:graph")


def test_a_thread_parked_in_a_tool_node_is_checked_without_running_a_tool(tmp_path: Path, effects_log: Path) -> None:
    db, out = recorded_tools(tmp_path)
    assert effect_lines(effects_log) == ["agent", "lookup_order A-17", "agent", "issue_refund asked A-17"]
    effects_log.unlink()
    result = check(out, "tool_desk", "graph", "--rehearse")
    assert result["status"] == "passed"
    assert ("node 'tools' runs LangGraph's ToolNode, whose tools are effects: it was checked to exist, not re-run (an "
            "interrupt() inside a tool was not compared)") in result["notes"]
    # LangGraph's own resume (the rehearsal): the ToolNode is not run, the thread goes back to the agent.
    rehearsal = result["rehearsal"]
    assert (rehearsal["outcome"], [c["name"] for c in rehearsal["commands"]]) == ("continues", ["agent"])
    assert "it runs LangGraph's ToolNode, whose tools are effects" in rehearsal["note"]
    assert effect_lines(effects_log) == []  # neither the check nor the rehearsal ran a tool (or a node)
    # What LangGraph does on resume: runs the refund tool from its top with the answer, then the agent.
    returned, ran = resume(db, "tool_desk", "graph", "tool", Command(resume="approve"))
    assert ran == ["issue_refund asked A-17", "issue_refund A-17 approve", "agent"]
    assert returned["messages"][-1].content == "done: refunded 40.00"


def test_a_tool_the_pending_call_names_missing_from_the_tool_node_is_graph_tool_missing(
    tmp_path: Path, effects_log: Path
) -> None:
    db, out = recorded_tools(tmp_path)
    effects_log.unlink()
    result = check(out, "tool_desk_refund_renamed", "graph")
    assert result["status"] == "diverged"
    found = result["divergence"]
    assert (found["kind"], found["recorded"]["kind"], found["recorded"]["name"]) == ("graph-tool-missing", "tool", "issue_refund")
    assert found["message"] == (
        "the thread waits in node 'tools' (a ToolNode), whose pending call names tool 'issue_refund', which the node no "
        "longer has (its tools: lookup_order, refund_order); on resume LangGraph answers the call with an error message "
        "instead of running a tool: the reviewer's answer is dropped, and the graph goes on"
    )
    assert effect_lines(effects_log) == []
    # What LangGraph does on resume: no tool runs, the call is answered with an error, the approval is lost.
    returned, ran = resume(db, "tool_desk_refund_renamed", "graph", "tool", Command(resume="approve"))
    assert ran == ["agent"]
    assert returned["messages"][-2].content.startswith("Error: issue_refund is not a valid tool")


def test_a_tool_node_still_to_run_after_interrupt_before_is_checked_for_its_tools(tmp_path: Path, effects_log: Path) -> None:
    db = tmp_path / "approving.sqlite"
    record(db, tool_desk.approving, "before", {"messages": [("user", "refund A-17")]})
    out = imported(db, tmp_path / "before", "graph_apps.tool_desk:approving")
    effects_log.unlink()
    assert check(out, "tool_desk", "approving")["status"] == "passed"
    assert check(out, "tool_desk_refund_renamed", "approving")["status"] == "passed"  # lookup_order is still there
    assert effect_lines(effects_log) == []
    assert resume(db, "tool_desk_refund_renamed", "approving", "before", None)[1] == ["lookup_order A-17", "agent"]


def stored() -> list[tuple[tuple[str, ...], str, dict]]:
    return sorted((tuple(i.namespace), i.key, i.value) for ns in (("asked",), ("profiles",))
                  for i in memory_graph.STORE.search(ns, limit=100))


def empty_store() -> None:
    for namespace, key, _ in stored():
        memory_graph.STORE.delete(namespace, key)


def test_a_graph_with_a_store_is_checked_without_writing_to_it(tmp_path: Path, effects_log: Path) -> None:
    empty_store()
    memory_graph.STORE.put(("profiles",), "ann", {"tone": "warm"})
    db = tmp_path / "memory.sqlite"
    parked = record(db, memory_graph.graph, "ann", {"customer": "ann"})
    assert parked["__interrupt__"][0].value == {"question": memory_graph.QUESTION, "customer": "ann", "tone": "warm"}
    assert stored() == [(("asked",), "ann", {"question": memory_graph.QUESTION}), (("profiles",), "ann", {"tone": "warm"})]
    out = imported(db, tmp_path / "memory", "graph_apps.memory_graph:graph")
    empty_store()  # what replay would write shows from here on
    effects_log.unlink()
    result = check(out, "memory_graph", "graph", "--rehearse")
    assert result["status"] == "passed"
    assert ("node 'human_review' wrote to LangGraph's store before its interrupt(): the re-run discarded the write (replay "
            "never writes to a store); store values were not compared") in result["notes"]
    assert ("the graph has a store (compile(store=...)): what it holds is in no checkpoint, so store values were not "
            "compared") in result["notes"]
    assert result["rehearsal"]["outcome"] == "continues"
    reworded = check(out, "memory_graph_reworded", "graph")
    assert (reworded["status"], reworded["divergence"]["kind"]) == ("diverged", "interrupt-mismatch")
    assert "refund this customer in full?" in reworded["divergence"]["message"]
    # A store read before the interrupt: no checkpoint keeps what it read, so the question is not compared.
    reads = check(out, "memory_graph_reads_first", "graph", "--rehearse")
    assert reads["status"] == "passed"
    assert ("node 'human_review' reads LangGraph's store (get) before its interrupt(): no checkpoint keeps store values, "
            "so the re-run stopped there and its interrupt was not compared") in reads["notes"]
    assert effect_lines(effects_log) == []
    assert stored() == []  # neither the checks nor the rehearsals wrote to the graph's store
    # What LangGraph does on resume: re-runs human_review from its top (writing the store again, asking the
    # reworded question, answered by the reply meant for the recorded one), then replies and writes the profile.
    returned, ran = resume(db, "memory_graph_reworded", "graph", "ann", Command(resume="approve"))
    assert (returned["approved"], ran) == (True, ["human_review approve", "reply ann"])
    assert stored() == [(("asked",), "ann", {"question": "refund this customer in full?"}), (("profiles",), "ann", {"tone": "warm"})]
