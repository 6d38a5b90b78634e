"""The double run's cost per workflow (``replaytest double-run``), on any engine it supports.

``python benchmarks/double_run_bench.py [--engine journal|temporal|langgraph|dbos|aws_durable] [--cases 200] [--steps 20]``

Writes a small workflow module to a temporary folder, declares ``--cases`` cases of it, and times
``double_run_cli.run_cases``: two stubbed runs per case in this process, then one child process for all cases
(another PYTHONHASHSEED). Printed: the whole run, the cost per workflow case, and the child process's share
(its start and imports are paid once per invocation, not per case). AWS durable handlers (``aws_durable``,
Python 3.11+) are invoked once per operation in each run (the SDK answers an operation only from a
checkpoint), so their cost grows with the square of the steps: compare engines at the same ``--steps``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from replaytest.double_run_cli import run_cases
from replaytest.replay.double_run import FIRST_RUN, DoubleRunCase
from replaytest.replay.runner import load_workflows

JOURNAL_MODULE = '''
from replaytest.journal import workflow


def add(a, b):
    return a + b


@workflow(name="bench_double_run")
def bench_double_run(ctx, steps):
    total = 0
    for index in range(steps):
        total += ctx.step("add", add, total, index) or 0
    return total
'''

TEMPORAL_MODULE = '''
from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def add(a: int, b: int) -> int:
    return a + b


@workflow.defn(name="bench_double_run")
class BenchDoubleRun:
    @workflow.run
    async def run(self, steps: int) -> int:
        total = 0
        for index in range(steps):
            total += await workflow.execute_activity(add, args=[total, index],
                                                     start_to_close_timeout=timedelta(seconds=5)) or 0
        return total
'''

LANGGRAPH_MODULE = '''
from langgraph.func import entrypoint, task


@task
def add(a, b):
    return a + b


@entrypoint()
def bench_double_run(steps):
    total = 0
    for index in range(steps):
        total += add(total, index).result() or 0
    return total
'''

DBOS_MODULE = '''
from dbos import DBOS


@DBOS.step()
def add(a, b):
    return a + b


@DBOS.workflow(name="bench_double_run")
def bench_double_run(steps):
    total = 0
    for index in range(steps):
        total += add(total, index) or 0
    return total
'''
AWS_DURABLE_MODULE = '''
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step


@durable_step
def add(step_context: StepContext, a: int, b: int) -> int:
    return a + b


@durable_execution
def bench_double_run(steps: int, context: DurableContext) -> int:
    total = 0
    for index in range(steps):
        total += context.step(add(total, index), name="add") or 0
    return total
'''
MODULES = {"journal": JOURNAL_MODULE, "temporal": TEMPORAL_MODULE, "langgraph": LANGGRAPH_MODULE, "dbos": DBOS_MODULE,
           "aws_durable": AWS_DURABLE_MODULE}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=sorted(MODULES), default="journal")
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        Path(temp, "bench_double_run_app.py").write_text(MODULES[args.engine])
        specs = ["bench_double_run_app" if args.engine == "temporal" else "bench_double_run_app:bench_double_run"]
        workflows = load_workflows(specs, Path(temp))
        cases = [DoubleRunCase(engine=args.engine, workflow="bench_double_run", input=args.steps, origin=Path(temp),
                               workflow_id=f"case {index}", steps={"add": index}) for index in range(args.cases)]
        from replaytest.double_run_cli import tracers

        tracer = tracers()[args.engine]
        started = time.perf_counter()
        for case in cases:
            trace = tracer(workflows, case, FIRST_RUN)
            assert len(trace.commands) == args.steps and trace.ending == "completed", (trace.error, trace.ending, trace.result)
        one_run = (time.perf_counter() - started) / len(cases)
        started = time.perf_counter()
        results = run_cases(cases, specs, Path(temp), workflows)
        total = time.perf_counter() - started
    assert all(result.status == "passed" for result in results), [r.error or r.divergence for r in results][:3]
    print(f"python {sys.version.split()[0]}, {args.engine}: {args.cases} cases of {args.steps} stubbed steps")
    print(f"one stubbed run in process: {one_run * 1000:.2f} ms")
    print(f"double run of all cases: {total:.2f} s, {total / len(cases) * 1000:.2f} ms per workflow case "
          f"(two runs here, one in the shared second process)")
    print(f"of which the second process (start, imports, runs): ~{total - 2 * one_run * len(cases):.2f} s")


if __name__ == "__main__":
    main()
