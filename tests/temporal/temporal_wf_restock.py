"""Workflow code for the run-status tests: a restock request that checks the stock, fails for an item the
shop does not carry, and waits for a buyer's approval signal. ``RestockRenamed`` (same type) renamed the
stock activity, so every recorded run that got past the start diverges.

The module is importable by name because the Temporal sandbox re-imports workflow modules.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

_TIMEOUT = timedelta(seconds=30)
CARRIED = {"kettle": 3, "lamp": 0}


@activity.defn
async def count_stock(item: str) -> int:
    return CARRIED.get(item, -1)


@activity.defn
async def stock_level(item: str) -> int:
    return CARRIED.get(item, -1)


class _Restock:
    def __init__(self) -> None:
        self.approved: bool | None = None

    @workflow.signal
    def approve(self, ok: bool) -> None:
        self.approved = ok

    async def _restock(self, item: str, stock_activity: object) -> str:
        count = await workflow.execute_activity(stock_activity, item, start_to_close_timeout=_TIMEOUT)
        if count < 0:
            raise ApplicationError(f"the shop does not carry {item!r}", non_retryable=True)
        await workflow.wait_condition(lambda: self.approved is not None)
        return f"ordered more {item}" if self.approved else f"kept {count} {item}"


@workflow.defn(name="Restock")
class Restock(_Restock):
    @workflow.run
    async def run(self, item: str) -> str:
        return await self._restock(item, count_stock)


@workflow.defn(name="Restock")
class RestockRenamed(_Restock):
    @workflow.run
    async def run(self, item: str) -> str:
        return await self._restock(item, stock_level)
