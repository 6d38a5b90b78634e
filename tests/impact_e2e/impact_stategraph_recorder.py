"""Runs the refund desk graph of the project in the working directory for real with a SqliteSaver:
``python impact_stategraph_recorder.py CHECKPOINTS EFFECTS``. Every ticket is invoked; the refunds stop at the
reviewer's interrupt, the two that get a decision are resumed with it and complete, the other two stay parked
there; the question ends after ``classify``. Prints each completed thread's final state as a JSON line."""

from __future__ import annotations

import json
import os
import sqlite3
import sys

CHECKPOINTS, EFFECTS = sys.argv[1:3]
os.environ["REFUND_GRAPH_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the refund graph of the project being recorded

import refund_graph  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

RUNS = [
    ("refund-1", {"order_id": "R-1", "text": "please refund the broken kettle"}, "approve"),
    ("refund-2", {"order_id": "R-2", "text": "refund the late sofa"}, "reject"),
    ("question-3", {"order_id": "Q-3", "text": "when do you open?"}, None),
    ("refund-4", {"order_id": "R-4", "text": "refund the wrong size"}, None),
    ("refund-5", {"order_id": "R-5", "text": "refund the cracked table"}, None),
]

connection = sqlite3.connect(CHECKPOINTS, check_same_thread=False)
graph = refund_graph.graph.copy(update={"checkpointer": SqliteSaver(connection)})
for thread_id, ticket, decision in RUNS:
    config = {"configurable": {"thread_id": thread_id}}
    state = graph.invoke(ticket, config)
    if decision is not None:
        state = graph.invoke(Command(resume=decision), config)
    if "__interrupt__" not in state:
        print(json.dumps({thread_id: {key: state.get(key) for key in ("category", "receipt", "notice")}}))
connection.close()
