"""``replaytest replay`` of graph histories against changed code. First what real LangGraph does when
the parked thread resumes under each change (the issue's table), then replaytest's verdict for each —
kind, node or channel, and line, written by hand — and that no node body ran while checking."""

from __future__ import annotations

import importlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from graph_kit import (
    NO_TASK_PATHS,
    Recorded,
    effect_lines,
    effects_log,
    import_histories,
    recorded,
    recorded_research,
    run_cli,
    sqlite_saver_stores_task_paths,
    thread,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.replay.engine import NO_PROMPTS_NOTE

APPS = Path(__file__).parent / "graph_apps"


def resume(db: Path, tmp_path: Path, module: str) -> tuple[Any, str | None]:
    """Resume the parked thread with the reviewer's approval under ``module``'s graph (a copy of the database)."""
    copy = tmp_path / "resume.sqlite"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        graph = importlib.import_module(f"graph_apps.{module}").graph.copy(update={"checkpointer": SqliteSaver(conn)})
        try:
            return graph.invoke(Command(resume="approve"), thread("refund-A-17")), None
        except KeyError as error:
            return None, f"KeyError {error}"
    finally:
        conn.close()


@pytest.mark.parametrize(("module", "receipt", "raised", "ran"), [
    ("support", "paid 900.00", None, ["human_review A-17 approve", "pay A-17 900.0"]),
    # The thread ends silently: no error, the answer is dropped, nothing more runs.
    ("support_parked_renamed", None, None, []),
    ("support_parked_removed", None, None, []),
    # The recorded refund is dropped silently.
    ("support_key_renamed", "paid 0.00", None, ["human_review A-17 approve", "pay A-17 0.0"]),
    ("support_key_required", None, "KeyError 'priority'", []),
    ("support_later_edges", "paid 900.00", None, ["human_review A-17 approve", "pay A-17 900.0"]),
    ("support_later_renamed", "paid 900.00", None, ["human_review A-17 approve", "pay A-17 900.0"]),
])
def test_what_langgraph_does_when_the_parked_thread_resumes_under_each_change(
    recorded: Recorded, tmp_path: Path, effects_log: Path, module: str, receipt: str | None, raised: str | None,
    ran: list[str],
) -> None:
    final, error = resume(recorded.db, tmp_path, module)
    assert error == raised
    if raised is None:
        assert final.get("receipt") == receipt
    assert effect_lines(effects_log) == ran


def check(histories: Path, module: str) -> dict[str, dict[str, Any]]:
    code, stdout, stderr = run_cli("replay", str(histories), "--workflows", f"graph_apps.{module}:graph", "--format", "json")
    assert code in (0, 1), stderr
    return {result["workflow"]["id"]: result for result in json.loads(stdout)["results"]}


def verdict(result: dict[str, Any]) -> tuple[str, str | None, str | None, str | None, int | None]:
    divergence = result["divergence"]
    if divergence is None:
        return result["status"], None, None, None, None
    source = divergence["source"] or {}
    named = divergence["issued"] if divergence["kind"] == "graph-channel-required" else divergence["recorded"]
    return (divergence["kind"], named["name"], (divergence["issued"] or {}).get("name"),
            Path(source["path"]).name if source else None, source.get("line"))


@pytest.mark.parametrize(("module", "expected"), [
    ("support", ("passed", None, None, None, None)),
    # the renamed node's function keeps its name: named, at its def line
    ("support_parked_renamed", ("graph-node-missing", "human_review", "review_refund", "support_parked_renamed.py", 34)),
    # the function is still defined, no longer added: its def line
    ("support_parked_removed", ("graph-node-missing", "human_review", None, "support_parked_removed.py", 34)),
    # the new state key that looks like its new name, at its line in the state schema
    ("support_key_renamed", ("graph-channel-missing", "refund", "refund_amount", "support_key_renamed.py", 18)),
    # the line that reads the key the recorded state lacks
    ("support_key_required", ("graph-channel-required", "priority", "priority", "support_key_required.py", 39)),
    ("support_later_edges", ("passed", None, None, None, None)),
    ("support_later_renamed", ("passed", None, None, None, None)),
    # the interrupt() call that now asks another question
    ("support_question_changed", ("interrupt-mismatch", "interrupt", "interrupt", "support_question_changed.py", 37)),
])
def test_the_verdict_for_the_parked_thread_under_each_change(
    recorded: Recorded, effects_log: Path, module: str, expected: tuple[Any, ...]
) -> None:
    results = check(recorded.histories, module)
    assert verdict(results["refund-A-17"]) == expected
    assert effect_lines(effects_log) == []  # no node body ran while checking


def test_a_question_change_shows_both_questions(recorded: Recorded) -> None:
    message = check(recorded.histories, "support_question_changed")["refund-A-17"]["divergence"]["message"]
    assert message == (
        "node 'human_review' now asks {\"amount\": 900.0, \"order_id\": \"A-17\", \"question\": \"approve this refund, and why?\"}; "
        "the thread waits for the answer to {\"amount\": 900.0, \"order_id\": \"A-17\", \"question\": \"approve this refund?\"} "
        "(the answer the reviewer gives on resume would go to this new question)"
    )


def test_finished_threads_say_what_was_checked(recorded: Recorded) -> None:
    results = check(recorded.histories, "support")
    for thread_id in ("refund-B-90", "question-C-3"):
        assert results[thread_id]["status"] == "passed"
        assert results[thread_id]["notes"] == [
            "completed thread: its state channels were checked against the current graph; no node waits, so none was re-run",
            "later edges and nodes are not compared: LangGraph runs them from the current code on resume",
            NO_PROMPTS_NOTE,  # started without with_prompts: never a silent pass
        ]
    # A renamed state key breaks a completed thread too: its next invocation reads the state.
    assert verdict(check(recorded.histories, "support_key_renamed")["refund-B-90"])[:2] == ("graph-channel-missing", "refund")
    assert results["refund-A-17"]["notes"] == [
        "a parked node's code after its interrupt() was not run (the answer is not known yet)",
        "later edges and nodes are not compared: LangGraph runs them from the current code on resume",
        NO_PROMPTS_NOTE,  # started without with_prompts: never a silent pass
    ]


def test_an_effect_before_the_interrupt_is_stopped_and_reported(recorded: Recorded, effects_log: Path) -> None:
    result = check(recorded.histories, "support_notify_first")["refund-A-17"]
    assert result["status"] == "diverged"
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call"
    assert (Path(divergence["source"]["path"]).name, divergence["source"]["line"]) == ("effects.py", 13)
    assert divergence["message"].startswith("stopped open(), called from orchestration code during replay")
    assert effect_lines(effects_log) == []  # stopped before it wrote


@pytest.mark.parametrize(("module", "expected"), [
    ("research", ("passed", None, None, None, None)),
    ("research_search_renamed", ("passed", None, None, None, None)),  # the fanned-out node ran before the pause
    # the node running the subgraph, new since the import: named, at the line that adds it
    ("research_review_renamed", ("graph-node-missing", "review", "editor_review", "research_review_renamed.py", 62)),
    # inside the subgraph (its own history, imported from its namespace): the node it waits in asks another
    # question, at the interrupt() line; the node it waits in is renamed, at the renamed function's def line
    ("research_sign_off_reworded", ("interrupt-mismatch", "interrupt", "interrupt", "research_sign_off_reworded.py", 47)),
    ("research_sign_off_renamed", ("graph-node-missing", "sign_off", "approve", "research_sign_off_renamed.py", 46)),
])
def test_a_graph_with_send_and_a_subgraph_is_checked(
    recorded_research: Recorded, effects_log: Path, module: str, expected: tuple[Any, ...]
) -> None:
    result = check(recorded_research.histories, module)["desks"]
    assert verdict(result) == expected
    if expected[0] == "passed":
        # The subgraph's parked node was re-run to its interrupt() and its question compared.
        assert result["notes"] == [
            "a parked node's code after its interrupt() was not run (the answer is not known yet)",
            "later edges and nodes are not compared: LangGraph runs them from the current code on resume",
            NO_PROMPTS_NOTE,  # started without with_prompts: never a silent pass
        ]
    assert effect_lines(effects_log) == []


def test_a_thread_parked_inside_a_subgraph_is_checked_as_langgraph_resumes_it(
    recorded_research: Recorded, effects_log: Path, tmp_path: Path
) -> None:
    """LangGraph resumes the parked ``review`` node by resuming its subgraph from the subgraph's checkpoints:
    under the reworded sign-off the answer goes to the new question; with the node renamed the subgraph ends
    silently (the answer is dropped, sign_off never runs) and the graph goes on past ``review``."""
    results = {}
    for module in ("research", "research_sign_off_reworded", "research_sign_off_renamed"):
        copy = tmp_path / f"{module}.sqlite"
        shutil.copy(recorded_research.db, copy)
        conn = sqlite3.connect(copy, check_same_thread=False)
        try:
            graph = importlib.import_module(f"graph_apps.{module}").graph.copy(update={"checkpointer": SqliteSaver(conn)})
            out = graph.invoke(Command(resume="yes"), thread("desks"))
            results[module] = (out.get("signed_off"), graph.get_state(thread("desks")).next, effect_lines(effects_log))
        finally:
            conn.close()
        effects_log.unlink(missing_ok=True)
    assert results == {
        "research": (True, (), ["sign_off yes"]),
        "research_sign_off_reworded": (True, (), ["sign_off yes"]),  # "yes" answered the new question
        "research_sign_off_renamed": (None, (), []),
    }
    found = check(recorded_research.histories, "research_sign_off_renamed")["desks"]["divergence"]
    assert found["position"] == 6  # the thread's pending interrupt, in node 'review'
    assert found["message"] == (
        "inside the subgraph node 'review' runs: the subgraph waits in node 'sign_off', which the current graph no "
        "longer has (its nodes: draft_answer, approve); node 'approve' now runs its function sign_off() — renamed?; on "
        "resume LangGraph ends the subgraph's run silently: the reviewer's answer is dropped and nothing more of the "
        "subgraph runs; the graph goes on past node 'review' (LangGraph resumes node 'review' by resuming its subgraph "
        "from the subgraph's own checkpoints)"
    )
    message = check(recorded_research.histories, "research_sign_off_reworded")["desks"]["divergence"]["message"]
    assert message.startswith("inside the subgraph node 'review' runs: node 'sign_off' now asks {")
    assert "(the answer the reviewer gives on resume would go to this new question)" in message
    # Imported with redaction (pseudonyms in the subgraph's state and question too): the same verdicts.
    code, output = import_histories(recorded_research.db, tmp_path / "redacted", "--workflows", "graph_apps.research:graph",
                                    "--redact-key", "answer", "--redact-key", "sign off")
    assert code == 0, output
    [pending] = [e for e in json.loads((tmp_path / "redacted/LangGraph-desks.json").read_text())["events"] if e.get("pending")]
    assert pending["subgraph"]["input"]["answer"].startswith("[redacted:")
    for module, expected in (("research", "passed"), ("research_sign_off_reworded", "interrupt-mismatch"),
                             ("research_sign_off_renamed", "graph-node-missing")):
        assert verdict(check(tmp_path / "redacted", module)["desks"])[0] == expected
    assert effect_lines(effects_log) == []


NOT_INSIDE_SUBGRAPH_NOTE = (
    "node 'review' runs a subgraph: it was checked to exist; the subgraph's own nodes and interrupt were not re-run "
    "(the history holds no history of the subgraph: a subgraph's checkpoints are read from SQLite and Postgres "
    "databases, for a node whose whole body is one compiled graph)"
)


def test_a_subgraph_read_through_the_saver_api_is_checked_to_exist_only(tmp_path: Path, effects_log: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from replaytest.plugins.langgraph.importer import histories_from_saver

    research = importlib.import_module("graph_apps.research")
    saver = InMemorySaver()
    research.graph.copy(update={"checkpointer": saver}).invoke({"question": "standing desks"}, thread("desks"))
    [(path, _)], refused = histories_from_saver(saver, tmp_path, workflows=[research.graph])
    assert refused == [] and "subgraph" not in json.loads(path.read_text())["events"][-1]
    result = check(tmp_path, "research_sign_off_renamed")["desks"]
    assert result["status"] == "passed"  # the renamed node inside is not seen: said in the note
    assert NOT_INSIDE_SUBGRAPH_NOTE in result["notes"]


def test_a_renamed_subgraph_node_is_named_only_against_the_graph_given_at_import(
    recorded_research: Recorded, tmp_path: Path
) -> None:
    message = check(recorded_research.histories, "research_review_renamed")["desks"]["divergence"]["message"]
    assert message == (
        "the thread waits in node 'review', which the current graph no longer has (its nodes: plan, search, "
        "editor_review); node 'editor_review', which runs a subgraph, is the one node new since the graph given at import time "
        "— renamed?; on resume LangGraph ends the thread silently: the reviewer's answer is dropped and nothing more runs"
    )
    # Without recorded_code nothing tells which node is new: the missing node is named, with no guess and no line.
    doc = json.loads((recorded_research.histories / "LangGraph-desks.json").read_text(encoding="utf-8"))
    del doc["graph"]["recorded_code"]
    (tmp_path / "LangGraph-desks.json").write_text(json.dumps(doc), encoding="utf-8")
    assert verdict(check(tmp_path, "research_review_renamed")["desks"]) == ("graph-node-missing", "review", None, None, None)


def test_no_graph_to_check_against_is_stale(recorded: Recorded) -> None:
    code, stdout, _ = run_cli("replay", str(recorded.histories), "--workflows", "graph_apps.effects:effect", "--format", "json")
    results = json.loads(stdout)["results"]
    assert {r["status"] for r in results} == {"stale"}
    assert results[0]["error"].startswith("no current graph(s) to check graph 'LangGraph' against")
    assert code == 2


def test_a_failed_thread_is_imported_with_its_error_and_checked_for_what_applies(tmp_path: Path) -> None:
    db = tmp_path / "failed.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:  # a ticket without its text: classify fails with KeyError
        graph = importlib.import_module("graph_apps.support").graph.copy(update={"checkpointer": SqliteSaver(conn)})
        with pytest.raises(KeyError):
            graph.invoke({"ticket": {"order_id": "D-1"}}, thread("broken-D-1"))
    finally:
        conn.close()
    code, _, stderr = run_cli("import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(tmp_path / "h"),
                              "--workflows", "graph_apps.support:graph")
    assert code == 0, stderr
    doc = json.loads((tmp_path / "h" / "LangGraph-broken-D-1.json").read_text(encoding="utf-8"))
    assert doc["status"] == "failed"
    assert doc["error"] == {"type": "KeyError", "message": "text"}
    assert doc["events"][-1]["name"] == "classify"
    assert doc["events"][-1]["error"] == {"type": "KeyError", "message": "text"}
    assert doc["graph"]["next"] == ["classify"]
    result = check(tmp_path / "h", "support")["broken-D-1"]
    assert result["status"] == "passed"
    assert result["notes"][0] == (
        "failed thread: the nodes still to run (classify) were checked to exist and the state channels against the "
        "current graph; no node was re-run (it would run for real)"
    )
    assert verdict(check(tmp_path / "h", "support_parked_renamed")["broken-D-1"]) == ("passed", None, None, None, None)


def test_redacted_histories_are_checked_the_same(recorded: Recorded, tmp_path: Path) -> None:
    code, _, stderr = run_cli("import", "langgraph", "--checkpointer", f"sqlite:///{recorded.db}", "--out", str(tmp_path),
                              "--workflows", "graph_apps.support:graph", "--redact-key", "order_id")
    assert code == 0, stderr
    doc = json.loads((tmp_path / "LangGraph-refund-A-17.json").read_text(encoding="utf-8"))
    assert doc["input"]["ticket"]["order_id"] != "A-17"  # a pseudonym
    assert "$.events[4].interrupt_value.order_id" in doc["redacted"]
    assert verdict(check(tmp_path, "support")["refund-A-17"]) == ("passed", None, None, None, None)
    assert verdict(check(tmp_path, "support_question_changed")["refund-A-17"])[0] == "interrupt-mismatch"


def test_send_tasks_waiting_at_once_are_each_re_run_with_their_own_packet(tmp_path: Path, effects_log: Path) -> None:
    db = tmp_path / "batch.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = importlib.import_module("graph_apps.approvals").graph.copy(update={"checkpointer": SqliteSaver(conn)})
        assert len(graph.invoke({"order_id": "A-17"}, thread("batch-A-17"))["__interrupt__"]) == 2
    finally:
        conn.close()
    recorded_effects = effect_lines(effects_log)
    code, _, stderr = run_cli("import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(tmp_path / "h"),
                              "--workflows", "graph_apps.approvals:graph", "--no-redact")
    assert code == 0, stderr
    doc = json.loads((tmp_path / "h" / "LangGraph-batch-A-17.json").read_text(encoding="utf-8"))
    assert [(e["name"], e.get("node_input"), e.get("interrupt_value")) for e in doc["events"] if e["kind"] == "signal"] == [
        ("interrupt", {"sku": "lamp", "amount": 40.0}, {"approve line": "lamp", "amount": 40.0}),
        ("interrupt", {"sku": "desk", "amount": 250.0}, {"approve line": "desk", "amount": 250.0}),
    ]
    assert verdict(check(tmp_path / "h", "approvals")["batch-A-17"]) == ("passed", None, None, None, None)
    assert verdict(check(tmp_path / "h", "approvals_reworded")["batch-A-17"]) == (
        "interrupt-mismatch", "interrupt", "interrupt", "approvals_reworded.py", 35
    )
    assert effect_lines(effects_log) == recorded_effects == ["collect A-17"]


def test_a_task_called_before_the_interrupt_stops_the_re_run_with_a_note(tmp_path: Path, effects_log: Path) -> None:
    # support_lookup_first's human_review calls @task look_up_customer (whose body writes to the effects log)
    # before it asks, and puts the customer's tier in the question.
    db = tmp_path / "lookup.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = importlib.import_module("graph_apps.support_lookup_first").graph.copy(
            update={"checkpointer": SqliteSaver(conn)})
        graph.invoke({"ticket": {"order_id": "A-17", "text": "It arrived broken, I want a refund"}}, thread("refund-A-17"))
    finally:
        conn.close()
    assert effect_lines(effects_log) == ["classify A-17", "draft_refund A-17", "look_up_customer A-17"]
    effects_log.unlink()
    code, _, stderr = run_cli("import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(tmp_path / "h"),
                              "--workflows", "graph_apps.support_lookup_first:graph", "--no-redact")
    if not sqlite_saver_stores_task_paths():  # the documented fallback: named '?', said so, exit 2
        assert code == 2 and f"note: 1 task(s) {NO_TASK_PATHS}" in stderr, stderr
        return
    assert code == 0, stderr

    result = check(tmp_path / "h", "support_lookup_first")["refund-A-17"]
    # The history holds no result for the task call: the re-run stops at it, the interrupt is not compared.
    assert verdict(result) == ("passed", None, None, None, None)
    assert result["notes"] == [
        "node 'human_review' calls @task 'look_up_customer' before its interrupt(): a graph history holds no task "
        "results, so the re-run stopped there and its interrupt was not compared",
        "later edges and nodes are not compared: LangGraph runs them from the current code on resume",
        NO_PROMPTS_NOTE,  # started without with_prompts: never a silent pass
    ]
    assert result["hazards"] == []
    assert effect_lines(effects_log) == []  # neither the task's body nor the node's ran

    # What LangGraph does on resume: the node runs again and is given the task's checkpointed result.
    final, error = resume(db, tmp_path, "support_lookup_first")
    assert error is None and final["receipt"] == "paid 900.00"
    assert effect_lines(effects_log) == ["human_review A-17 approve", "pay A-17 900.0"]


def test_a_task_called_by_a_send_task_before_its_interrupt_stops_each_re_run(tmp_path: Path, effects_log: Path) -> None:
    db = tmp_path / "batch.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = importlib.import_module("graph_apps.approvals_stock_checked").graph.copy(
            update={"checkpointer": SqliteSaver(conn)})
        assert len(graph.invoke({"order_id": "A-17"}, thread("batch-A-17"))["__interrupt__"]) == 2
    finally:
        conn.close()
    effects_log.unlink()
    code, _, stderr = run_cli("import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(tmp_path / "h"),
                              "--workflows", "graph_apps.approvals_stock_checked:graph", "--no-redact")
    if not sqlite_saver_stores_task_paths():  # the documented fallback: named '?', said so, exit 2
        assert code == 2 and f"note: 2 task(s) {NO_TASK_PATHS}" in stderr, stderr
        return
    assert code == 0, stderr
    result = check(tmp_path / "h", "approvals_stock_checked")["batch-A-17"]
    assert verdict(result) == ("passed", None, None, None, None)
    assert result["notes"] == [
        "node 'approve_line' calls @task 'stock_of' before its interrupt(): a graph history holds no task results, so "
        "the re-run stopped there and its interrupt was not compared",
    ] * 2 + ["later edges and nodes are not compared: LangGraph runs them from the current code on resume", NO_PROMPTS_NOTE]
    assert effect_lines(effects_log) == []
