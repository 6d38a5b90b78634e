"""A refund workflow for the import-naming tests: the refund is priced by an activity from the order
reference and the reason, then confirmed. Importable by name, as the Temporal sandbox re-imports it."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

_TIMEOUT = timedelta(seconds=10)


@activity.defn
async def price_refund(order_ref: str, reason: str) -> float:
    return 39.0 if reason == "damaged" else 33.15


@workflow.defn(name="RefundOrder")
class RefundOrder:
    @workflow.run
    async def run(self, order_ref: str, reason: str) -> dict:
        amount = await workflow.execute_activity(price_refund, args=[order_ref, reason], start_to_close_timeout=_TIMEOUT)
        return {"order": order_ref, "refund": amount}
