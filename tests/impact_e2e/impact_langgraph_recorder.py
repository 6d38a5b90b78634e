"""Runs the dispute graph of the project in the working directory for real with a SqliteSaver:
``python impact_langgraph_recorder.py CHECKPOINTS EFFECTS``. Every dispute is invoked until it stops at
the reviewer's interrupt; the three that get a decision are resumed with it and complete, the other two
stay parked there. Prints each completed thread's output as a JSON line."""

from __future__ import annotations

import json
import os
import sqlite3
import sys

CHECKPOINTS, EFFECTS = sys.argv[1:3]
os.environ["DISPUTE_GRAPH_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the dispute graph of the project being recorded

import dispute_graph  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

RUNS = [
    ("dispute-1", {"invoice_id": "INV-101", "text": "I was charged twice this month", "amount": 120.0}, "approve"),
    ("dispute-2", {"invoice_id": "INV-102", "text": "charged twice for the annual plan", "amount": 900.0}, "approve"),
    ("dispute-3", {"invoice_id": "INV-103", "text": "the support line never answered", "amount": 60.0}, "reject"),
    ("dispute-4", {"invoice_id": "INV-104", "text": "charged twice after cancelling", "amount": 300.0}, None),
    ("dispute-5", {"invoice_id": "INV-105", "text": "the service was down for a week", "amount": 1500.0}, None),
]

connection = sqlite3.connect(CHECKPOINTS, check_same_thread=False)
graph = dispute_graph.dispute_agent.copy(update={"checkpointer": SqliteSaver(connection)})
for thread_id, dispute, decision in RUNS:
    config = {"configurable": {"thread_id": thread_id}}
    parked = graph.invoke(dispute, config)
    if "__interrupt__" not in parked:
        raise SystemExit(f"{thread_id} did not stop at the review: {parked}")
    if decision is not None:
        print(json.dumps({thread_id: graph.invoke(Command(resume=decision), config)}))
connection.close()
