"""The double-run tracer of LangGraph functional-API entrypoints: one run of an ``@entrypoint`` with every
``@task`` call answered by a stub through LangGraph's own task-call hook (as replay answers it from a
history, ``langgraph.internals.run_entrypoint``), under the runtime guards, returning a ``Trace``.

A task call returns the case's stub value for its name and call index (LangGraph finds a stored result by
an id made of the two); an ``interrupt()`` is answered with the recorded thread's resume value for it (a case
from an imported thread), else has none, so the run parks there (ending ``parked``), as a new thread does. No
task body runs and nothing is checkpointed. A graph the entrypoint starts from its own code stops the run there
(ending ``stopped``), and so does a read of LangGraph's store (the run is given ``internals.replay_store``: a
write is discarded).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import sys
from typing import Any

from replaytest.history.digest import args_digest
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.replayer import find_entrypoint, project_caller
from replaytest.replay.adapter import WorkflowSet
from replaytest.replay.divergence import value_text
from replaytest.replay.double_run import DoubleRunCase, RunConditions, Trace, TracedCommand
from replaytest.replay.guards import NondeterministicCall, guarded, orchestration_modules, plain_functions


def trace_langgraph(workflows: WorkflowSet, case: DoubleRunCase, conditions: RunConditions) -> Trace:
    """One stubbed run of the case's entrypoint under ``conditions``."""
    problem = lg.version_problem()
    if problem:
        return Trace(error=problem)
    bound = find_entrypoint(workflows, case.workflow)
    if bound is None:
        return Trace(error=f"no current @entrypoint named {case.workflow!r}")
    if lg.is_async_entrypoint(bound) and sys.version_info < (3, 11):
        return Trace(error="an async @entrypoint needs Python 3.11 or later (LangGraph's task calls need it)")
    function = getattr(bound, "func", None) or getattr(bound, "afunc", None)
    modules = orchestration_modules([function])
    prefixes = tuple(sorted({os.path.dirname(f) + os.sep for f in (getattr(m, "__file__", None) for m in modules) if f}))
    trace = Trace()

    def call(func: Any, arguments: Any, **options: Any) -> Any:
        name = lg.task_name_of(func)
        source = project_caller(prefixes)
        args, kwargs = arguments if isinstance(arguments, tuple) and len(arguments) == 2 else ((arguments,), {})
        try:
            digest: str | None = args_digest(tuple(args), dict(kwargs))
        except (TypeError, ValueError):
            digest = None  # arguments that are not JSON: the name and position still compared
        trace.commands.append(TracedCommand("step", name, digest, source.path if source else None,
                                            source.line if source else None, source.function if source else None))
        future: Any
        try:
            future = asyncio.get_running_loop().create_future()
        except RuntimeError:
            future = concurrent.futures.Future()
        future.set_result(case.stub_value(len(trace.commands), "step", name))
        return future

    # A recorded thread's resume values, in order: its interrupts are answered as they were, so the run goes
    # on past them as the thread did; with none left (or a case of an inputs file) the run parks there.
    resumes = [entry[2] for _, entry in sorted(case.recorded.items()) if entry[:2] == ("signal", "interrupt")]
    interrupts = itertools.count()
    scratchpad = lg.Scratchpad.build(lambda value: next(interrupts), resumes)
    namespace = f"{case.workflow}:double-run"
    bodies = plain_functions(lg.task_bodies([module.__dict__ for module in modules]))
    with conditions.applied(), guarded(modules, lambda: len(trace.commands), bodies) as guard:
        try:
            if lg.is_async_entrypoint(bound):
                returned = asyncio.run(lg.arun_entrypoint(bound, case.input, call, scratchpad, namespace, None))
            else:
                returned = lg.run_entrypoint(bound, case.input, call, scratchpad, namespace, None)
            trace.ending, trace.result = "completed", value_text(lg.final_value(returned), repr)
        except lg.NestedGraphRun as started:
            trace.ending, trace.result = "stopped", f"at a graph it starts itself ({started.graph_name!r})"
        except lg.StoreRead as read:
            trace.ending, trace.result = "stopped", f"at a read of LangGraph's store ({read.operation}), which it is not given"
        except NondeterministicCall:
            trace.ending, trace.result = "stopped", "an effect the runtime guards stopped"
        except Exception as error:
            if lg.is_graph_interrupt(error):
                trace.ending = "parked"
            else:
                trace.ending, trace.result = "failed", f"{type(error).__name__}: {error}"
    trace.add_guard_trips(guard.trips)
    return trace
