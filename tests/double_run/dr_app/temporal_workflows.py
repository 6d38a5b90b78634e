"""Temporal workflows for the double-run tests (importable by name: the sandbox re-imports this module)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import dr_app.counters as counters  # not re-imported per run: its state outlives a run

_TIMEOUT = timedelta(seconds=5)
CHECKS = ["audit", "billing", "credit", "delivery", "email", "fraud", "geo", "history"]


@activity.defn
async def check(name: str) -> str:  # never runs: a Replayer executes no activity
    raise AssertionError("an activity ran")


@activity.defn
async def lookup(order: str) -> dict:
    raise AssertionError("an activity ran")


class Check:
    def __init__(self, name: str) -> None:
        self.name = name  # hashed by id(): a set of these iterates in address order


@workflow.defn(name="ByStringHash")
class ByStringHash:
    @workflow.run
    async def run(self, order: str) -> str:
        for name in sorted(CHECKS, key=hash):
            await workflow.execute_activity(check, name, start_to_close_timeout=_TIMEOUT)
        return "ok"


@workflow.defn(name="ByIdentity")
class ByIdentity:
    @workflow.run
    async def run(self, order: str) -> str:
        pending = {Check(name) for name in CHECKS}
        for item in pending:
            await workflow.execute_activity(check, item.name, start_to_close_timeout=_TIMEOUT)
        return "ok"


@workflow.defn(name="Control")
class Control:
    @workflow.run
    async def run(self, order: str) -> dict:
        tier = await workflow.execute_activity(lookup, order, start_to_close_timeout=_TIMEOUT)
        await asyncio.gather(*(workflow.execute_activity(check, name, start_to_close_timeout=_TIMEOUT)
                               for name in sorted(CHECKS)))
        await asyncio.sleep(30)
        if workflow.patched("notify-v2"):
            await workflow.execute_activity(check, f"notify-{tier['level']}", start_to_close_timeout=_TIMEOUT,
                                            activity_id=f"notify-{order}")  # an id of the code's own
        return {"order": order, "tier": tier, "at": workflow.now().isoformat()}


@workflow.defn(name="ByCounter")
class ByCounter:
    @workflow.run
    async def run(self, order: str) -> str:
        if next(counters.runs) == 0:
            await workflow.execute_activity(check, "welcome", start_to_close_timeout=_TIMEOUT)
        await workflow.execute_activity(lookup, order, start_to_close_timeout=_TIMEOUT)
        return "ok"
