"""``replaytest import langgraph`` on graph-API threads: each becomes a graph history (super-steps, the
parked node and its interrupt value, the state's channels and shapes, the graph at import time), where
it used to be a "running, 0 events" ``__start__`` history. Expected documents are written by hand."""

from __future__ import annotations

import json
import sqlite3
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
from graph_apps import research, support
from graph_kit import (
    NO_TASK_PATHS,
    SUPPORT_SPEC,
    Recorded,
    import_histories,
    recorded,
    recorded_research,
    sqlite_saver_stores_task_paths,
    thread,
    ticket,
)
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import histories_from_saver

SUPPORT_CODE = {
    "name": "LangGraph",
    "nodes": ["classify", "draft_refund", "human_review", "pay"],
    "channels": ["ticket", "category", "refund", "approved", "receipt"],
}


def document(histories: Path, thread_id: str) -> dict[str, Any]:
    return json.loads((histories / f"LangGraph-{thread_id}.json").read_text(encoding="utf-8"))


def without_ids(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{key: value for key, value in event.items() if key != "task_id"} for event in doc["events"]]


def test_a_parked_graph_thread_is_a_graph_history_waiting_in_its_node(recorded: Recorded) -> None:
    doc = document(recorded.histories, "refund-A-17")
    assert doc["workflow"]["type"] == "LangGraph"
    assert doc["workflow"]["engine"] == "langgraph"
    assert doc["status"] == "parked"
    assert doc["input"] == {"ticket": {"order_id": "A-17", "text": "It arrived broken, I want a refund"},
                            "category": "refund", "refund": 900.0}
    assert without_ids(doc) == [
        {"seq": 1, "kind": "step", "name": "__start__", "super_step": 0, "writes": {"ticket": "object"}, "goes_to": ["classify"]},
        {"seq": 2, "kind": "step", "name": "classify", "super_step": 1, "writes": {"category": "string"},
         "goes_to": ["draft_refund"]},
        {"seq": 3, "kind": "step", "name": "draft_refund", "super_step": 2, "writes": {"refund": "number"},
         "goes_to": ["human_review"]},
        {"seq": 4, "kind": "step", "name": "human_review", "super_step": 3},
        {"seq": 5, "kind": "signal", "name": "interrupt", "pending": True, "node": "human_review",
         "interrupt_value": {"question": "approve this refund?", "order_id": "A-17", "amount": 900.0}},
    ]
    schema = json.loads(files("replaytest.history").joinpath("schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(doc)
    kept = doc["graph"].pop("checkpoint")
    assert doc["graph"] == {
        "api": "graph",
        "next": ["human_review"],
        "channels": {"ticket": "object", "category": "string", "refund": "number"},
        "nodes_seen": ["classify", "draft_refund", "human_review"],
        "recorded_code": SUPPORT_CODE,
    }
    # What LangGraph schedules the resume from, for the rehearsal: versions, edge channels and the parked task's
    # interrupt write, and no payload (the values are in ``input`` and the interrupt event, which redaction sees).
    assert (kept["step"], kept["edge_channels"]) == (2, {"branch:to:human_review": None})
    assert sorted(kept["channel_versions"]) == ["__start__", "branch:to:classify", "branch:to:draft_refund",
                                                "branch:to:human_review", "category", "refund", "ticket"]
    assert sorted(kept["versions_seen"]) == ["__input__", "__start__", "classify", "draft_refund"]
    assert kept["writes"] == [{"task_id": doc["events"][3]["task_id"], "task_path": kept["writes"][0]["task_path"],
                               "idx": kept["writes"][0]["idx"], "channel": "__interrupt__"}]
    assert "A-17" not in json.dumps(kept) and "refund?" not in json.dumps(kept)


def test_completed_graph_threads_record_every_super_step_and_the_final_state(recorded: Recorded) -> None:
    doc = document(recorded.histories, "refund-B-90")
    assert doc["status"] == "completed"
    assert [(e["name"], e["super_step"], e.get("writes")) for e in doc["events"]] == [
        ("__start__", 0, {"ticket": "object"}),
        ("classify", 1, {"category": "string"}),
        ("draft_refund", 2, {"refund": "number"}),
        ("human_review", 3, {"approved": "boolean"}),  # resumed: its interrupt is answered, not pending
        ("pay", 4, {"receipt": "string"}),
    ]
    assert doc["graph"]["next"] == []
    assert doc["graph"]["channels"] == {"ticket": "object", "category": "string", "refund": "number",
                                        "approved": "boolean", "receipt": "string"}
    short = document(recorded.histories, "question-C-3")
    assert short["status"] == "completed"
    assert [e["name"] for e in short["events"]] == ["__start__", "classify"]
    assert short["graph"]["nodes_seen"] == ["classify"]


def test_the_import_says_what_it_wrote_and_no_start_history_is_left(recorded: Recorded, tmp_path: Path) -> None:
    code, output = import_histories(recorded.db, tmp_path, "--workflows", SUPPORT_SPEC, "--no-redact")
    assert code == 0, output
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [
        "LangGraph-question-C-3.json", "LangGraph-refund-A-17.json", "LangGraph-refund-B-90.json",
    ]
    assert f"{tmp_path / 'LangGraph-refund-A-17.json'}: LangGraph thread 'refund-A-17' parked, 5 event(s)" in output
    assert "note: parked in human_review" in output
    for path in tmp_path.glob("*.json"):  # each one is a valid history the loader reads back
        assert load_history(path).graph is not None


def test_without_the_graph_the_history_has_no_recorded_code(recorded: Recorded, tmp_path: Path) -> None:
    code, output = import_histories(recorded.db, tmp_path, "--task-name", "unused", "--no-redact")
    assert code == 0, output
    doc = document(tmp_path, "refund-A-17")
    assert "recorded_code" not in doc["graph"]
    assert doc["graph"]["next"] == ["human_review"]


def test_a_thread_that_is_neither_a_graph_nor_an_entrypoint_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "odd.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:  # a thread someone created with an empty checkpoint: no input, no node ever ran
        saver = SqliteSaver(conn)
        saver.put({"configurable": {"thread_id": "blank", "checkpoint_ns": ""}}, empty_checkpoint(),
                  {"source": "update", "step": 0}, {})
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "out", "--task-name", "unused")
    assert code == 2
    assert "error: thread 'blank': no input checkpoint (not a functional-API thread?)" in output
    assert list((tmp_path / "out").glob("*.json")) == []


def test_a_send_fan_out_and_a_subgraph_are_imported(recorded_research: Recorded) -> None:
    doc = document(recorded_research.histories, "desks")
    assert doc["status"] == "parked"
    # The subgraph the parked node runs: its own history, from its checkpoint namespace, on the pending interrupt.
    subgraph = doc["events"][-1].pop("subgraph")
    assert (subgraph["status"], subgraph["graph"]["next"], subgraph["graph"]["nodes_seen"]) == (
        "parked", ["sign_off"], ["draft_answer", "sign_off"])
    assert [(e["kind"], e["name"]) for e in subgraph["events"]] == [
        ("step", "__start__"), ("step", "draft_answer"), ("step", "sign_off"), ("signal", "interrupt")]
    assert subgraph["events"][-1]["interrupt_value"] == {
        "sign off": "notes on standing desks (pricing); notes on standing desks (reviews)"}
    assert subgraph["input"]["answer"] == "notes on standing desks (pricing); notes on standing desks (reviews)"
    assert without_ids(doc) == [
        {"seq": 1, "kind": "step", "name": "__start__", "super_step": 0, "writes": {"question": "string"}, "goes_to": ["plan"]},
        {"seq": 2, "kind": "step", "name": "plan", "super_step": 1, "writes": {"queries": "array"},
         "goes_to": ["search", "search"]},
        {"seq": 3, "kind": "step", "name": "search", "super_step": 2, "send": True, "writes": {"findings": "array"},
         "goes_to": ["review"]},
        {"seq": 4, "kind": "step", "name": "search", "super_step": 2, "send": True, "writes": {"findings": "array"},
         "goes_to": ["review"]},
        {"seq": 5, "kind": "step", "name": "review", "super_step": 3},
        {"seq": 6, "kind": "signal", "name": "interrupt", "pending": True, "node": "review",
         "interrupt_value": {"sign off": "notes on standing desks (pricing); notes on standing desks (reviews)"}},
    ]
    assert doc["graph"]["next"] == ["review"]
    assert doc["input"]["findings"] == ["notes on standing desks (pricing)", "notes on standing desks (reviews)"]


def test_a_saver_without_task_paths_names_the_same_nodes(tmp_path: Path) -> None:
    saver = InMemorySaver()
    support.graph.copy(update={"checkpointer": saver}).invoke(ticket("A-17", "broken, refund"), thread("mem-support"))
    research.graph.copy(update={"checkpointer": saver}).invoke({"question": "desks"}, thread("mem-research"))
    written, refused = histories_from_saver(saver, tmp_path, workflows=[support.graph, research.graph])
    assert refused == []
    names = {item.thread_id: [(e["name"], e.get("super_step")) for e in item.document["events"]] for _, item in written}
    assert names == {
        "mem-support": [("__start__", 0), ("classify", 1), ("draft_refund", 2), ("human_review", 3), ("interrupt", None)],
        "mem-research": [("__start__", 0), ("plan", 1), ("search", 2), ("search", 2), ("review", 3), ("interrupt", None)],
    }
    assert all(item.unknown_tasks == 0 for _, item in written)


def test_task_calls_made_inside_a_node_are_left_out_with_a_note(tmp_path: Path) -> None:
    # human_review calls @task look_up_customer before its interrupt(): the call's result is written under
    # the task path '~__pregel_push, ~__pregel_pull, human_review, ...', which is no node's step.
    from graph_apps import support_lookup_first
    from langgraph.types import Command

    db = tmp_path / "lookup.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = support_lookup_first.graph.copy(update={"checkpointer": SqliteSaver(conn)})
        graph.invoke(ticket("A-17", "It arrived broken, I want a refund"), thread("refund-A-17"))
        graph.invoke(ticket("B-90", "Please refund my order"), thread("refund-B-90"))
        assert graph.invoke(Command(resume="approve"), thread("refund-B-90"))["receipt"] == "paid 35.00"
    finally:
        conn.close()
    code, output = import_histories(db, tmp_path / "h", "--workflows", "graph_apps.support_lookup_first:graph",
                                    "--no-redact")
    if not sqlite_saver_stores_task_paths():  # the documented fallback: named '?', said so, exit 2
        assert code == 2 and output.count(f"note: 1 task(s) {NO_TASK_PATHS}") == 2, output
        return
    assert code == 0, output  # no task is left unnamed
    assert output.count(
        "note: 1 @task call(s) made inside node(s) human_review are left out: a graph history holds the nodes' steps, "
        "not @task results (LangGraph feeds the checkpointed results back when the node runs again)"
    ) == 2
    parked = document(tmp_path / "h", "refund-A-17")
    assert [(e["name"], e.get("super_step")) for e in parked["events"]] == [
        ("__start__", 0), ("classify", 1), ("draft_refund", 2), ("human_review", 3), ("interrupt", None),
    ]
    assert parked["events"][-1]["interrupt_value"]["tier"] == "gold"  # what the task returned, as asked
    assert parked["graph"]["next"] == ["human_review"]
    completed = document(tmp_path / "h", "refund-B-90")
    assert [(e["name"], e.get("writes")) for e in completed["events"]] == [
        ("__start__", {"ticket": "object"}), ("classify", {"category": "string"}), ("draft_refund", {"refund": "number"}),
        ("human_review", {"approved": "boolean"}), ("pay", {"receipt": "string"}),
    ]
    assert completed["status"] == "completed" and completed["graph"]["next"] == []


def test_task_calls_made_inside_send_tasks_are_left_out_too(tmp_path: Path) -> None:
    # approve_line, started by a Send, has the path '~__pregel_push, <packet index>, ...'; its @task calls nest in it.
    from graph_apps import approvals_stock_checked

    db = tmp_path / "batch.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        graph = approvals_stock_checked.graph.copy(update={"checkpointer": saver})
        assert len(graph.invoke({"order_id": "A-17"}, thread("batch-A-17"))["__interrupt__"]) == 2
        written, refused = histories_from_saver(saver, tmp_path / "h", workflows=[approvals_stock_checked.graph])
    finally:
        conn.close()
    assert refused == []
    [(_, item)] = written
    if not sqlite_saver_stores_task_paths():  # the documented fallback: named '?' and said so
        assert item.unknown_tasks == 2 and f"2 task(s) {NO_TASK_PATHS}" in item.notes, item.notes
        return
    assert item.unknown_tasks == 0
    assert [(e["name"], e.get("send"), e.get("interrupt_value")) for e in item.document["events"]] == [
        ("__start__", None, None), ("collect", None, None), ("approve_line", True, None), ("approve_line", True, None),
        ("interrupt", None, {"approve line": "lamp", "amount": 40.0, "in stock": 3}),
        ("interrupt", None, {"approve line": "desk", "amount": 250.0, "in stock": 0}),
    ]
    assert ("2 @task call(s) made inside node(s) approve_line are left out: a graph history holds the nodes' steps, "
            "not @task results (LangGraph feeds the checkpointed results back when the node runs again)") in item.notes
