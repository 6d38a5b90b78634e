"""LangGraph functional API: replaytest's import and replay timed next to LangGraph's own resume.

Records ``--threads`` threads of an entrypoint that makes ``--calls`` task calls and then waits at an
``interrupt()``, into a SqliteSaver database, then times, ``--repeat`` times each (medians printed):

* **import**: ``replaytest import langgraph`` in-process (read the SQLite file, recompute task ids,
  decode values, write and validate one neutral history per thread);
* **replay**: ``LangGraphReplayer().replay`` of every imported history (load, run the entrypoint with
  recorded results, match);
* **langgraph resume**: LangGraph itself resuming every thread with ``Command(resume=…)`` on a copy of
  the database — re-running the entrypoint from the top against the stored writes, as on every resume
  (the peer: the same re-execution, plus LangGraph's checkpointing).

    python benchmarks/langgraph_bench.py [--threads 50] [--calls 200] [--repeat 3]

Needs the langgraph extra. Prints the machine load (``os.getloadavg``) with the figures.
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

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from replaytest.plugins.langgraph.importer import SqliteThreads, current_code, iter_threads, write_histories
from replaytest.plugins.langgraph.replayer import LangGraphReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet


@task
def step(index: int) -> dict:
    return {"index": index, "text": f"result {index}"}


@entrypoint()
def bench_agent(calls: int) -> int:
    total = 0
    for index in range(calls):
        total += step(index).result()["index"]
    interrupt("done?")
    return total


def _config(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def record(db: Path, threads: int, calls: int) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = bench_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        for number in range(threads):
            graph.invoke(calls, _config(f"t{number}"))
    finally:
        conn.close()


def time_import(db: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    source = SqliteThreads(db)
    try:
        written, refused = write_histories(iter_threads(source, (), None, current_code([bench_agent])), out)
    finally:
        source.close()
    elapsed = time.perf_counter() - started
    assert not refused and written, refused
    return elapsed


def time_replay(out: Path) -> float:
    replayer, workflows, options = LangGraphReplayer(), WorkflowSet([bench_agent]), ReplayOptions()
    paths = sorted(out.glob("*.json"))
    started = time.perf_counter()
    for path in paths:
        result = replayer.replay(path, workflows, options)
        assert result.status == "passed", result
    return time.perf_counter() - started


def time_langgraph_resume(db: Path, scratch: Path, threads: int) -> float:
    copy = scratch / "resume.sqlite"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy, check_same_thread=False)
    try:
        graph = bench_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        started = time.perf_counter()
        for number in range(threads):
            graph.invoke(Command(resume="yes"), _config(f"t{number}"))
        return time.perf_counter() - started
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        db = scratch / "checkpoints.sqlite"
        record(db, args.threads, args.calls)
        imports, replays, resumes = [], [], []
        for _ in range(args.repeat):
            imports.append(time_import(db, scratch / "histories"))
            replays.append(time_replay(scratch / "histories"))
            resumes.append(time_langgraph_resume(db, scratch, args.threads))
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    calls = args.threads * args.calls
    print(f"{args.threads} threads x {args.calls} task calls ({calls} calls), median of {args.repeat}; load {load}")
    for name, values in (("import", imports), ("replay", replays), ("langgraph resume", resumes)):
        median = statistics.median(values)
        print(f"  {name:<17} {median:8.3f} s  {median / calls * 1e6:8.1f} us/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
