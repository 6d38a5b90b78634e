"""LangGraph graph API: import and check of many StateGraph threads on SQLite, next to LangGraph's own resume.

Records ``--threads`` threads of a four-node support graph (``classify``, ``draft_refund``,
``human_review`` with an ``interrupt()``, ``pay``) into a SqliteSaver database — every other thread is
resumed to completion, the rest stay parked in ``human_review`` — then times, ``--repeat`` times each
(medians printed):

* **import**: ``iter_threads`` + ``write_histories`` in-process (read the SQLite file, decode values,
  build and validate one graph history per thread);
* **check**: ``LangGraphReplayer().replay`` of every imported history against the graph (load, node and
  channel checks, the parked node re-run up to its interrupt under the runtime guards);
* **langgraph get_state**: LangGraph itself reading every thread's state (``graph.get_state``), the
  least a resume does before it runs anything (the peer).

    python benchmarks/langgraph_graph_bench.py [--threads 1000] [--repeat 1]

Needs the langgraph extra. Prints the machine load (``os.getloadavg``) with the figures. The readers are
the shared ``CheckpointRow``/``WriteRow`` ones, so another saver's reader can be timed the same way.

Measured once (6 December 2026, ``--threads 1000 --repeat 1``, two cores shared with other work, load
average 2.10 1.74 1.17 over 1, 5, 15 min): 1,000 graph threads (500 parked, 500 completed; 8.9 MB of SQLite,
recorded in 12.5 s) import in 1.333 s (1.33 ms per thread) and check in 0.702 s (0.70 ms per thread, every
thread passing, the 500 parked nodes re-run up to their interrupt); LangGraph's own ``get_state`` of every
thread takes 0.093 s (0.09 ms per thread). One run on a shared machine: read the figures as an order of
magnitude, not to the millisecond.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from replaytest.plugins.langgraph.graph_import import graph_code
from replaytest.plugins.langgraph.importer import SqliteThreads, current_code, iter_threads, write_histories
from replaytest.plugins.langgraph.replayer import LangGraphReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet


class Ticket(TypedDict, total=False):
    ticket: dict
    category: str
    refund: float
    approved: bool
    receipt: str


def classify(state: Ticket) -> dict:
    return {"category": "refund"}


def draft_refund(state: Ticket) -> dict:
    return {"refund": float(len(state["ticket"]["text"]))}


def human_review(state: Ticket) -> dict:
    answer = interrupt({"question": "approve this refund?", "amount": state["refund"]})
    return {"approved": answer == "approve"}


def pay(state: Ticket) -> dict:
    return {"receipt": f"paid {state['refund']:.2f}" if state.get("approved") else "declined"}


builder = StateGraph(Ticket)
for node in (classify, draft_refund, human_review, pay):
    builder.add_node(node.__name__, node)
builder.add_edge(START, "classify")
builder.add_edge("classify", "draft_refund")
builder.add_edge("draft_refund", "human_review")
builder.add_edge("human_review", "pay")
builder.add_edge("pay", END)
graph = builder.compile()


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def record_into(saver: Any, threads: int) -> None:
    """The threads, into any saver (``langgraph_postgres_bench.py`` records them into a PostgresSaver too)."""
    saved = graph.copy(update={"checkpointer": saver})
    for number in range(threads):
        saved.invoke({"ticket": {"order_id": f"O-{number}", "text": "broken " * (number % 7 + 1)}}, _config(f"t{number}"))
        if number % 2:
            saved.invoke(Command(resume="approve"), _config(f"t{number}"))


def record(db: Path, threads: int) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        record_into(SqliteSaver(conn), threads)
    finally:
        conn.close()


def time_import(db: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    source = SqliteThreads(db)
    try:
        written, refused = write_histories(iter_threads(source, (), None, current_code([]), graph_code([graph])), out)
    finally:
        source.close()
    elapsed = time.perf_counter() - started
    assert not refused and written, refused
    return elapsed


def time_check(out: Path) -> float:
    replayer, workflows, options = LangGraphReplayer(), WorkflowSet([graph]), ReplayOptions()
    paths = sorted(out.glob("*.json"))
    started = time.perf_counter()
    for path in paths:
        result = replayer.replay(path, workflows, options)
        assert result.status == "passed", (result.status, result.error, result.divergence)
    return time.perf_counter() - started


def time_get_state(db: Path, threads: int) -> float:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        saved = graph.copy(update={"checkpointer": SqliteSaver(conn)})
        started = time.perf_counter()
        for number in range(threads):
            saved.get_state(_config(f"t{number}"))
        return time.perf_counter() - started
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        db = scratch / "checkpoints.sqlite"
        started = time.perf_counter()
        record(db, args.threads)
        recording = time.perf_counter() - started
        imports, checks, states = [], [], []
        for _ in range(args.repeat):
            imports.append(time_import(db, scratch / "histories"))
            checks.append(time_check(scratch / "histories"))
            states.append(time_get_state(db, args.threads))
        size = db.stat().st_size
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{args.threads} graph threads on SQLite ({size / 1e6:.1f} MB, recorded in {recording:.1f} s; half parked, "
          f"half completed), median of {args.repeat}; load {load}")
    for name, values in (("import", imports), ("check", checks), ("langgraph get_state", states)):
        median = statistics.median(values)
        print(f"  {name:<20} {median:8.3f} s  {median / args.threads * 1e3:8.2f} ms/thread")
    return 0


if __name__ == "__main__":
    sys.exit(main())
