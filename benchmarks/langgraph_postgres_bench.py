"""LangGraph import and check on both savers: the same threads recorded into a SqliteSaver file and into a
PostgresSaver database, then ``replaytest import langgraph`` (in-process: read, recompute task ids, decode,
write and validate one history per thread) and the check (``LangGraphReplayer().replay`` of every history,
each expected to pass) timed on each, in the same run.

Workloads are named in ``WORKLOADS``: each records its threads through any saver and names the current code
that imports and checks them. ``functional`` is a refund agent on the functional API (``@entrypoint`` with
three ``@task`` calls around an approval ``interrupt()``): half its threads are resumed and completed, half
are left parked at the approval. ``graph`` is the four-node support ``StateGraph`` of
``langgraph_graph_bench.py`` (``classify``, ``draft_refund``, ``human_review`` with an ``interrupt()``, ``pay``):
every other thread is resumed and completes, the rest stay parked in ``human_review``; its import builds graph
histories (with the graph's ``recorded_code``) and its check runs the node and channel checks and re-runs the
parked node up to its interrupt. Another workload is another ``Workload``, without touching the timing loop.

    python benchmarks/langgraph_postgres_bench.py [--threads 1000] [--workload functional|graph]
                                                   [--postgres-url postgresql://USER@HOST:PORT/DB]

Without ``--postgres-url`` a throwaway Postgres is started on 127.0.0.1 with ``tests/postgres_server.py``
(Debian's postgresql package) and stopped afterwards; a given database must be empty (the saver's ``setup()``
creates its tables there). Needs the langgraph and langgraph-postgres extras. Prints the machine load with
the figures.

Measured once with ``--workload graph --threads 1000`` (6 December 2026, two cores shared with other work,
load average 2.20 1.80 1.21 over 1, 5, 15 min, the throwaway Postgres on the same machine), 1,000 graph
threads per saver, half parked and half completed, every thread passing its check:

| saver | record | import | check | import + check | per thread |
|---|---|---|---|---|---|
| SqliteSaver | 8.84 s | 1.46 s | 0.74 s | 2.20 s | 2.20 ms |
| PostgresSaver | 11.89 s | 2.38 s | 0.66 s | 3.05 s | 3.05 ms |

The check reads the histories, not the store, so it costs about the same after either saver; the import
from Postgres took about 0.9 ms more per thread than from SQLite (not profiled further). One run on a shared
machine: read the figures as an order of magnitude, not to the millisecond.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from replaytest.plugins.langgraph.graph_import import graph_code
from replaytest.plugins.langgraph.importer import SqliteThreads, ThreadSource, current_code, iter_threads, write_histories
from replaytest.plugins.langgraph.postgres import PostgresThreads
from replaytest.plugins.langgraph.replayer import LangGraphReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

ORDERS = {"small": 18.5, "large": 640.0}


@task
def look_up_order(order_id: str) -> dict:
    return {"order_id": order_id, "amount": ORDERS["large" if order_id.endswith("0") else "small"]}


@task
def issue_refund(order_id: str, amount: float) -> dict:
    return {"order_id": order_id, "refunded": amount}


@task
def close_ticket(order_id: str, outcome: str) -> str:
    return f"{order_id}: {outcome}"


@entrypoint()
def refund_agent(ticket: dict) -> dict:
    order = look_up_order(ticket["order_id"]).result()
    decision = interrupt({"question": "refund?", "order_id": order["order_id"], "amount": order["amount"]})
    refund = issue_refund(order["order_id"], order["amount"]).result() if decision == "approve" else None
    return {"refund": refund, "closed": close_ticket(order["order_id"], decision).result()}


def _config(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def record_functional(saver: Any, threads: int) -> None:
    graph = refund_agent.copy(update={"checkpointer": saver})
    for number in range(threads):
        thread = _config(f"ticket-{number}")
        graph.invoke({"order_id": f"order-{number}"}, thread)
        if number % 2 == 0:  # every other thread is resumed and completes; the rest stay parked
            graph.invoke(Command(resume="approve"), thread)


def record_graph(saver: Any, threads: int) -> None:
    from langgraph_graph_bench import record_into

    record_into(saver, threads)


@dataclass(frozen=True)
class Workload:
    """Threads to record through any saver, and the current code they are imported and checked with."""

    name: str
    record: Callable[[Any, int], None]
    workflows: tuple[Any, ...]


def _support_graph() -> Any:
    from langgraph_graph_bench import graph  # a sibling script: this folder is on sys.path when run

    return graph


WORKLOADS = {
    "functional": Workload("functional", record_functional, (refund_agent,)),
    "graph": Workload("graph", record_graph, (_support_graph(),)),
}


@contextmanager
def sqlite_store(folder: Path) -> Iterator[tuple[Any, Callable[[], ThreadSource]]]:
    db = folder / "checkpoints.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        yield SqliteSaver(conn), lambda: SqliteThreads(db)
    finally:
        conn.close()


@contextmanager
def postgres_store(url: str) -> Iterator[tuple[Any, Callable[[], ThreadSource]]]:
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver, lambda: PostgresThreads.connect(url)


@contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from postgres_server import start_postgres

    server = start_postgres()
    try:
        yield server.create_database("bench_checkpoints")
    finally:
        server.stop()


def time_import(open_source: Callable[[], ThreadSource], workload: Workload, out: Path) -> tuple[float, int]:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    source = open_source()
    try:
        threads = iter_threads(source, (), None, current_code(workload.workflows), graph_code(workload.workflows))
        written, refused = write_histories(threads, out)
    finally:
        source.close()
    elapsed = time.perf_counter() - started
    assert not refused, refused[:3]
    return elapsed, len(written)


def time_check(workload: Workload, out: Path) -> float:
    replayer, workflows, options = LangGraphReplayer(), WorkflowSet(list(workload.workflows)), ReplayOptions()
    paths = sorted(out.glob("*.json"))
    started = time.perf_counter()
    for path in paths:
        result = replayer.replay(path, workflows, options)
        assert result.status == "passed", (path, result.status)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="LangGraph import and check timed on a SqliteSaver and a PostgresSaver in the same run.")
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="functional")
    parser.add_argument("--postgres-url", help="an empty database to record into (default: a throwaway server)")
    args = parser.parse_args(argv)
    workload = WORKLOADS[args.workload]
    rows = []
    with tempfile.TemporaryDirectory() as folder, postgres_url(args.postgres_url) as url:
        scratch = Path(folder)
        for saver_name, store in (("SqliteSaver", sqlite_store(scratch)), ("PostgresSaver", postgres_store(url))):
            with store as (saver, open_source):
                started = time.perf_counter()
                workload.record(saver, args.threads)
                recorded = time.perf_counter() - started
                imported, histories = time_import(open_source, workload, scratch / saver_name)
                checked = time_check(workload, scratch / saver_name)
            assert histories == args.threads, (saver_name, histories)
            rows.append((saver_name, recorded, imported, checked))
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{args.workload}: {args.threads} threads per saver; load {load}")
    print(f"  {'saver':<14} {'record':>9} {'import':>9} {'check':>9} {'import+check':>13} {'per thread':>11}")
    for saver_name, recorded, imported, checked in rows:
        print(f"  {saver_name:<14} {recorded:8.2f}s {imported:8.2f}s {checked:8.2f}s {imported + checked:12.2f}s "
              f"{(imported + checked) / args.threads * 1e3:9.2f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
