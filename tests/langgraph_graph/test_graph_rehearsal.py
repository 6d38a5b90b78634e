"""Graph-API (``StateGraph``) resume rehearsal, judged by LangGraph itself: the support desk's thread parked in
``human_review`` is rehearsed against the recorded graph and against changed ones, no node body running
(the effects log stays empty), and then really resumed by LangGraph on a copy of the recorded SqliteSaver with
the answer the rehearsal delivered: the node LangGraph runs after the parked one is the one the rehearsal named,
a thread the rehearsal says waits waits, one it says breaks raises. Where the rehearsal cannot be faithful, the
note says why."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import pytest
from graph_apps import support
from graph_apps.effects import effect
from graph_kit import (  # noqa: F401 - effects_log and recorded are fixtures
    RESEARCH_SPEC,
    SUPPORT_SPEC,
    Recorded,
    effect_lines,
    effects_log,
    recorded,
    recorded_research,
    run_cli,
    thread,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import histories_from_saver
from replaytest.plugins.langgraph.replayer import LangGraphReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult

PARKED = "refund-A-17"


def declined(state: support.Ticket) -> dict:
    effect(f"declined {state['ticket']['order_id']}")
    return {"receipt": "declined"}


def audit(state: support.Ticket) -> dict:
    effect(f"audit {state['ticket']['order_id']}")
    return {}


def review_pure(state: support.Ticket) -> dict:
    answer = interrupt({"question": "approve this refund?", "order_id": state["ticket"]["order_id"], "amount": state["refund"]})
    return {"approved": answer == "approve"}


def review_twice(state: support.Ticket) -> dict:
    answer = interrupt({"question": "approve this refund?", "order_id": state["ticket"]["order_id"], "amount": state["refund"]})
    again = interrupt({"question": "are you sure?"})
    return {"approved": answer == again == "approve"}


def review_wrong(state: support.Ticket) -> Any:
    interrupt({"question": "approve this refund?", "order_id": state["ticket"]["order_id"], "amount": state["refund"]})
    return "approved"  # not a state update: LangGraph refuses it


def after_review(state: support.Ticket) -> str:
    return "pay" if state.get("approved") else "declined"


def _graph(review: Any = support.human_review, *, audit_after: bool = False, routed: bool = False) -> Any:
    """The support desk with ``review`` as its ``human_review`` node, optionally an ``audit`` node after it, or a
    conditional edge out of it (approved: pay, else: declined)."""
    builder = StateGraph(support.Ticket)
    builder.add_node("classify", support.classify)
    builder.add_node("draft_refund", support.draft_refund)
    builder.add_node("human_review", review)
    builder.add_node("pay", support.pay)
    builder.add_edge(START, "classify")
    builder.add_conditional_edges("classify", support.route)
    builder.add_edge("draft_refund", "human_review")
    if audit_after:
        builder.add_node("audit", audit)
        builder.add_edge("human_review", "audit")
        builder.add_edge("audit", "pay")
    elif routed:
        builder.add_node("declined", declined)
        builder.add_conditional_edges("human_review", after_review, ["pay", "declined"])
        builder.add_edge("declined", END)
    else:
        builder.add_edge("human_review", "pay")
    builder.add_edge("pay", END)
    return builder.compile()


def rehearsed(recorded: Recorded, graph: Any, edit: Any = None) -> ReplayResult:  # noqa: F811
    history = load_history(recorded.histories / f"LangGraph-{PARKED}.json")
    if edit is not None:
        history = edit(history)
    return LangGraphReplayer().replay_history(history, WorkflowSet(objects=[graph]), ReplayOptions(rehearse=True))


def really_resumed(recorded: Recorded, graph: Any, tmp_path: Path, effects: Path, answer: object) -> tuple[Any, list[str]]:  # noqa: F811
    """What LangGraph returns when it resumes the parked thread on ``graph`` (a copy of the recorded database), and
    the node bodies it ran (their effects)."""
    copy = tmp_path / "resume.sqlite"
    shutil.copy(recorded.db, copy)
    before = len(effect_lines(effects))
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        output = graph.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(Command(resume=answer), thread(PARKED))
    finally:
        conn.close()
    return output, effect_lines(effects)[before:]


def _answer(result: ReplayResult) -> object:
    assert result.rehearsal is not None
    assert result.rehearsal.delivered.startswith("Command(resume='')")
    return ""


# The parked node's file write is stopped (it has a static edge: taken to finish), or its body runs and LangGraph
# routes on what it returned.
@pytest.mark.parametrize(("graph", "next_node", "first_body", "added", "stopped"), [
    (support.graph, "pay", "pay A-17 900.0", False, True),
    (_graph(audit_after=True), "audit", "audit A-17", True, True),
    (_graph(review_pure, routed=True), "declined", "declined A-17", True, False),
])
def test_the_rehearsal_names_the_node_langgraph_runs_after_the_parked_one(
    recorded: Recorded, effects_log: Path, tmp_path: Path, graph: Any, next_node: str, first_body: str, added: bool,  # noqa: F811
    stopped: bool,
) -> None:
    result = rehearsed(recorded, graph)
    assert result.status == "passed", result.divergence
    assert effect_lines(effects_log) == []  # no node body's effect ran
    rehearsal = result.rehearsal
    assert rehearsal is not None and rehearsal.outcome == "continues", result.notes
    assert [(view.kind, view.name, view.detail.get("added", False)) for view in rehearsal.commands] == [("node", next_node, added)]
    assert rehearsal.source is not None and rehearsal.source.function == next_node
    assert ("node 'human_review': its code makes an effect at" in rehearsal.note) == stopped
    _, ran = really_resumed(recorded, graph, tmp_path, effects_log, _answer(result))
    after = [line for line in ran if not line.startswith("human_review ")]
    assert after[0] == first_body


def test_a_node_asking_again_waits(recorded: Recorded, effects_log: Path, tmp_path: Path) -> None:  # noqa: F811
    graph = _graph(review_twice)
    result = rehearsed(recorded, graph)
    assert result.rehearsal is not None and result.rehearsal.outcome == "waits", result.notes
    output, ran = really_resumed(recorded, graph, tmp_path, effects_log, _answer(result))
    assert ran == [] and output["__interrupt__"][0].value == {"question": "are you sure?"}


def test_a_node_langgraph_refuses_to_apply_breaks(recorded: Recorded, effects_log: Path, tmp_path: Path) -> None:  # noqa: F811
    graph = _graph(review_wrong)
    result = rehearsed(recorded, graph)
    rehearsal = result.rehearsal
    assert rehearsal is not None and rehearsal.outcome == "breaks", result.notes
    assert rehearsal.error is not None and rehearsal.error.startswith("InvalidUpdateError")
    with pytest.raises(Exception) as raised:
        really_resumed(recorded, graph, tmp_path, effects_log, _answer(result))
    assert type(raised.value).__name__ == "InvalidUpdateError"


def test_an_effect_deciding_the_route_is_not_rehearsed(recorded: Recorded, effects_log: Path) -> None:  # noqa: F811
    result = rehearsed(recorded, _graph(routed=True))
    assert result.rehearsal is None and effect_lines(effects_log) == []
    [note] = [note for note in result.notes if note.startswith("resume not rehearsed")]
    assert "node 'human_review': its code makes an effect at" in note and "effects.py" in note
    assert note.endswith("where the thread goes after node 'human_review' depends on what it returns (a conditional "
                         "edge or Command leaves it)")


def _without_bookkeeping(history: Any) -> Any:
    import dataclasses

    return dataclasses.replace(history, graph={k: v for k, v in history.graph.items() if k != "checkpoint"})


def _other_task_id(history: Any) -> Any:
    import dataclasses

    kept = json.loads(json.dumps(history.graph["checkpoint"]))
    for write in kept["writes"]:
        write["task_id"] = "00000000-0000-0000-0000-00000000000a"
        write["task_path"] = "~__pregel_pull, human_review"
    return dataclasses.replace(history, graph={**history.graph, "checkpoint": kept})


@pytest.mark.parametrize(("edit", "why"), [
    (_without_bookkeeping, "the history does not hold LangGraph's checkpoint bookkeeping"),
    (_other_task_id, "the thread's checkpoint could not be restored faithfully (LangGraph derives task id"),
])
def test_a_restore_langgraph_would_read_otherwise_is_not_rehearsed(recorded: Recorded, edit: Any, why: str) -> None:  # noqa: F811
    result = rehearsed(recorded, support.graph, edit)
    assert result.rehearsal is None
    assert any(note.startswith(f"resume not rehearsed: {why}") for note in result.notes), result.notes


def test_through_the_cli_the_parked_thread_is_rehearsed_and_finished_ones_are_not(recorded: Recorded) -> None:  # noqa: F811
    code, stdout, stderr = run_cli("replay", str(recorded.histories), "--workflows", SUPPORT_SPEC, "--format", "json",
                                   "--rehearse")
    assert code == 0, stderr
    results = {result["workflow"]["id"]: result for result in json.loads(stdout)["results"]}
    assert results[PARKED]["rehearsal"]["outcome"] == "continues"
    assert [view["name"] for view in results[PARKED]["rehearsal"]["commands"]] == ["pay"]
    assert results["refund-B-90"]["rehearsal"] is None  # finished: nothing to resume
    assert not any("rehears" in note for note in results["refund-B-90"]["notes"])


def test_a_thread_parked_inside_a_subgraph_says_why_it_is_not_rehearsed(recorded_research: Recorded) -> None:  # noqa: F811
    code, stdout, stderr = run_cli("replay", str(recorded_research.histories), "--workflows", RESEARCH_SPEC,
                                   "--format", "json", "--rehearse")
    assert code == 0, stderr
    [result] = json.loads(stdout)["results"]
    assert result["rehearsal"] is None
    assert ("resume not rehearsed: the thread is parked in node 'review', which runs a subgraph: its checkpoints live "
            "in their own namespace, which the import does not read") in result["notes"]



class Parallel(TypedDict, total=False):
    order_id: str
    stock: int
    approved: bool


def check_stock(state: Parallel) -> dict:
    return {"stock": 3}


def approve(state: Parallel) -> dict:
    return {"approved": interrupt({"approve": state["order_id"]}) == "yes"}


def test_a_node_that_finished_beside_the_parked_one_is_not_rehearsed(tmp_path: Path) -> None:
    """``check_stock`` finishes in the super-step where ``approve`` parks: its write waits on the latest checkpoint
    with a value the history does not keep, so the restore would not be LangGraph's and the note says so."""
    builder = StateGraph(Parallel)
    builder.add_node("check_stock", check_stock)
    builder.add_node("approve", approve)
    builder.add_edge(START, "check_stock")
    builder.add_edge(START, "approve")
    builder.add_edge(["check_stock", "approve"], END)
    graph = builder.compile(name="parallel_desk")
    conn = sqlite3.connect(tmp_path / "parallel.sqlite", check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        assert "__interrupt__" in graph.copy(update={"checkpointer": saver}).invoke({"order_id": "P-1"}, thread("p-1"))
        # The graph given: the oldest supported SqliteSaver stores no task paths, the importer names nodes by it.
        [(path, _)], refused = histories_from_saver(saver, tmp_path / "h", workflows=[graph])
    finally:
        conn.close()
    assert refused == []
    result = LangGraphReplayer().replay_history(load_history(path), WorkflowSet(objects=[graph]), ReplayOptions(rehearse=True))
    assert result.status == "passed" and result.rehearsal is None, result.divergence
    assert ("resume not rehearsed: the thread's checkpoint could not be restored faithfully (its latest checkpoint holds "
            "a write to channel 'stock' by node 'check_stock' whose value the history does not keep") in " ".join(result.notes)
