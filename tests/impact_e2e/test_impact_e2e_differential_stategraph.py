"""The engine is the judge on LangGraph's graph API: for each kind of change to the refund desk (a ``StateGraph``),
``replaytest impact`` predicts what each of the two threads parked at the reviewer's interrupt in ``review`` does
when it resumes on the changed graph, and LangGraph itself then resumes each (on a copy of the recorded
SqliteSaver, with the answer the rehearsal delivers: the neutral one, a graph history keeping none). The prediction is the resume path and the node it names
next; LangGraph's outcome is read from the node bodies it runs (``review`` has none): ``breaks`` when none runs
(LangGraph dropped the answer and ended the thread), else the first node that ran — ``new`` when the recorded
graph did not have it, else ``old``. Both must agree, thread by thread. LangGraph has no patch API: no guarded
variant."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from impact_kit import ScenarioKit, clean_environment, edit_once, impact_json, predicted_resume
from impact_stategraph_kit import V1

from replaytest.plugins.langgraph.graph_rehearsal import NEUTRAL_ANSWER

V1_NODES = ("classify", "draft", "review", "pay", "notify")
ROUTE_REVIEW = 'builder.add_conditional_edges("review", route_review, ["pay", "notify"])\n'
ADD_REVIEW = 'builder.add_node("review", review)\n'
DRAFT_TO_REVIEW = 'builder.add_edge("draft", "review")\n'
NODE_FUNCTIONS_END = "\n\nbuilder = StateGraph(Ticket)\n"


def _with_function(source: str, function: str) -> str:
    return edit_once(source, NODE_FUNCTIONS_END, f"\n\n{function}{NODE_FUNCTIONS_END}")


FRAUD_CHECK = '''def fraud_check(state: Ticket) -> dict:
    effect(f"fraud_check {state['order_id']}")
    return {}
'''
AUDIT = '''def audit(state: Ticket) -> dict:
    effect(f"audit {state['order_id']}")
    return {}
'''
ESCALATION = '''def escalate_case(state: Ticket) -> dict:
    effect(f"escalate {state['order_id']}")
    return {}


escalation_builder = StateGraph(Ticket)
escalation_builder.add_node("escalate_case", escalate_case)
escalation_builder.add_edge(START, "escalate_case")
escalation_builder.add_edge("escalate_case", END)
escalation = escalation_builder.compile()
'''


def _inserted_before() -> str:
    source = _with_function(V1, FRAUD_CHECK)
    return edit_once(source, DRAFT_TO_REVIEW, 'builder.add_node("fraud_check", fraud_check)\n'
                     'builder.add_edge("draft", "fraud_check")\nbuilder.add_edge("fraud_check", "review")\n')


def _inserted_after() -> str:
    source = _with_function(V1, AUDIT)
    return edit_once(source, ROUTE_REVIEW, 'builder.add_node("audit", audit)\nbuilder.add_edge("review", "audit")\n'
                     'builder.add_conditional_edges("audit", route_review, ["pay", "notify"])\n')


def _renamed() -> str:
    source = edit_once(V1, ADD_REVIEW, 'builder.add_node("approval", review)\n')
    source = edit_once(source, DRAFT_TO_REVIEW, 'builder.add_edge("draft", "approval")\n')
    return edit_once(source, ROUTE_REVIEW, 'builder.add_conditional_edges("approval", route_review, ["pay", "notify"])\n')


def _swapped() -> str:
    """``draft`` and ``review`` change places: the ticket goes to review first, the amount is drafted after it."""
    source = edit_once(V1, 'return "draft" if state["category"] == "refund" else END',
                       'return "review" if state["category"] == "refund" else END')
    source = edit_once(source, 'builder.add_conditional_edges("classify", route_ticket, ["draft", END])\n',
                       'builder.add_conditional_edges("classify", route_ticket, ["review", END])\n')
    source = edit_once(source, DRAFT_TO_REVIEW, 'builder.add_edge("review", "draft")\n')
    return edit_once(source, ROUTE_REVIEW, 'builder.add_conditional_edges("draft", route_review, ["pay", "notify"])\n')


def _condition_changed() -> str:
    """Small refunds are paid without approval."""
    return edit_once(V1, 'return "pay" if state["approved"] else "notify"',
                     'return "pay" if state["approved"] or state["amount"] < 100 else "notify"')


def _subgraph_added() -> str:
    """Declined refunds go through an escalation subgraph before the customer is told."""
    source = _with_function(V1, ESCALATION)
    source = edit_once(source, 'return "pay" if state["approved"] else "notify"',
                       'return "pay" if state["approved"] else "escalation"')
    return edit_once(source, ROUTE_REVIEW, 'builder.add_node("escalation", escalation)\n'
                     'builder.add_edge("escalation", "notify")\n'
                     'builder.add_conditional_edges("review", route_review, ["pay", "escalation"])\n')


# change -> the code, and what impact and LangGraph must both say for refund-4 (50.00) and refund-5 (1500.00):
# (path, the node run next after review)
CHANGES = {
    "node inserted before the interrupting node": (_inserted_before(), (("old", "notify"), ("old", "notify"))),
    "node inserted after it": (_inserted_after(), (("new", "audit"), ("new", "audit"))),
    "the interrupting node renamed": (_renamed(), (("breaks", None), ("breaks", None))),
    "two nodes swapped": (_swapped(), (("old", "draft"), ("old", "draft"))),
    "conditional edge's condition changed": (_condition_changed(), (("old", "pay"), ("old", "notify"))),
    "subgraph node added": (_subgraph_added(), (("new", "escalation"), ("new", "escalation"))),
}
THREADS = ("refund-4", "refund-5")

# Resumes one parked thread for real: ``python -c RESUME CHECKPOINTS THREAD ANSWER`` in the kit's root.
RESUME = """
import json, sqlite3, sys
sys.path.insert(0, ".")
import refund_graph
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
connection = sqlite3.connect(sys.argv[1], check_same_thread=False)
graph = refund_graph.graph.copy(update={"checkpointer": SqliteSaver(connection)})
state = graph.invoke(Command(resume=json.loads(sys.argv[3])), {"configurable": {"thread_id": sys.argv[2]}})
print(json.dumps(sorted(state)))
"""


def langgraph_outcome(kit: ScenarioKit, tmp_path: Path, thread: str, answer: object) -> tuple[str, str | None]:
    """(path, first node run) when LangGraph resumes ``thread`` with the code in the working tree."""
    copy = tmp_path / f"{thread}.sqlite"
    shutil.copyfile(kit.root / "checkpoints.sqlite", copy)
    effects = tmp_path / f"{thread}-effects.log"
    done = subprocess.run([sys.executable, "-c", RESUME, str(copy), thread, json.dumps(answer)], cwd=kit.root,
                          capture_output=True, text=True, timeout=120,
                          env=clean_environment({"REFUND_GRAPH_EFFECTS": str(effects)}))
    assert done.returncode == 0, done.stdout + done.stderr
    ran = effects.read_text(encoding="utf-8").splitlines() if effects.exists() else []
    if not ran:
        return "breaks", None
    first = ran[0].split()[0]
    first = "escalation" if first == "escalate" else first  # the subgraph node's own node says "escalate"
    return ("old" if first in V1_NODES else "new"), first


def predicted(workflow: dict, thread: str) -> tuple[str, str | None]:
    """impact's verdict for ``thread`` and the node it names next (None when a group holds the thread)."""
    path = predicted_resume(workflow, thread)
    [text] = [entry["text"] for entry in workflow.get("resume", []) if thread in entry["runs"]] or [None]
    named = re.search(r"the engine issues node '([^']+)' next", text) if text else None
    return path, named.group(1) if named else None


def test_unchanged_the_parked_threads_resume_into_notify_as_langgraph_does(stategraph_kit: ScenarioKit, tmp_path: Path) -> None:
    effects = stategraph_kit.root / "impact-effects.log"
    _, _, workflow = impact_json(stategraph_kit, environment={"REFUND_GRAPH_EFFECTS": str(effects)})
    assert not effects.exists(), effects.read_text()  # the rehearsal ran no node body
    [resume] = workflow["resume"]
    assert sorted(resume["runs"]) == sorted(THREADS)
    for thread in THREADS:
        assert predicted(workflow, thread) == ("old", "notify") == langgraph_outcome(stategraph_kit, tmp_path, thread, NEUTRAL_ANSWER)


@pytest.mark.parametrize("change", list(CHANGES))
def test_impact_predicts_each_parked_thread_as_langgraph_resumes_it(stategraph_kit: ScenarioKit, tmp_path: Path, change: str) -> None:
    code, expected = CHANGES[change]
    (stategraph_kit.root / stategraph_kit.code_file).write_text(code, encoding="utf-8")
    effects = stategraph_kit.root / "impact-effects.log"
    _, _, workflow = impact_json(stategraph_kit, environment={"REFUND_GRAPH_EFFECTS": str(effects)})
    assert not effects.exists(), effects.read_text()
    predictions = tuple(predicted(workflow, thread) for thread in THREADS)
    engine = tuple(langgraph_outcome(stategraph_kit, tmp_path, thread, NEUTRAL_ANSWER) for thread in THREADS)
    assert (predictions, engine) == (expected, expected), workflow
