"""Workflow code for ``temporal_replay_bench.py``: a long run of short activities and timers.

A module of its own because the Temporal sandbox re-imports a workflow's module by name.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def step(index: int) -> int:
    return index


@workflow.defn(name="BenchLong")
class BenchLong:
    """``batches`` rounds of ``width`` parallel activities, each round followed by a short timer."""

    @workflow.run
    async def run(self, batches: int, width: int) -> int:
        total = 0
        for batch in range(batches):
            results = await asyncio.gather(*(
                workflow.execute_activity(step, batch * width + i, start_to_close_timeout=timedelta(seconds=30))
                for i in range(width)
            ))
            total += sum(results)
            await asyncio.sleep(0.001)
        return total
