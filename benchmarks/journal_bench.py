"""Journal throughput: committed steps per second on a SQLite file (WAL), one worker.

``python benchmarks/journal_bench.py [--runs 50] [--steps 200] [--synchronous NORMAL|FULL]``

Every step is a committed, fenced transaction before the next starts (the production path); the step
itself is trivial, so the figure is the runtime's own cost per step. Resuming (answering recorded steps
from the journal) is measured separately: the same runs re-executed from their journals.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from replaytest.journal import NO_RETRY, Journal, Worker, workflow


@workflow(name="bench")
def bench(ctx, steps):
    total = 0
    for index in range(steps):
        total += ctx.step("add", int, index, retry=NO_RETRY)
    ctx.sleep(1)  # park, so the resume below re-executes every recorded step
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        clock = [time.time()]
        journal = Journal(Path(temp) / "bench.db", clock=lambda: clock[0], synchronous=args.synchronous)
        for _ in range(args.runs):
            journal.start(bench, args.steps)
        worker = Worker(journal, [bench], "bench")
        started = time.perf_counter()
        worker.run_until_idle()
        recording = time.perf_counter() - started
        clock[0] += 2
        started = time.perf_counter()
        worker.run_until_idle()
        resuming = time.perf_counter() - started
        steps = args.runs * args.steps
        print(f"{steps:,} steps in {args.runs} runs, synchronous={args.synchronous}")
        print(f"recording: {steps / recording:,.0f} committed steps/s ({recording * 1e6 / steps:.0f} µs per step)")
        print(f"resuming:  {steps / resuming:,.0f} recorded steps/s answered from the journal")


if __name__ == "__main__":
    main()
