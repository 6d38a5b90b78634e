"""A restocking agent for the read-once replay tests: it fetches a shop's catalogue (a result large enough
that the journal stores it by reference, in the blob store beside the history) and reorders what is out
of stock."""

from __future__ import annotations

from typing import Any

from replaytest.journal import workflow


def fetch_catalogue(shop: str) -> list[dict[str, Any]]:
    return [{"sku": f"{shop}-{i:05d}", "title": f"Desk lamp model {i}", "stock": i % 7} for i in range(3000)]


def reorder(skus: list[str]) -> dict[str, Any]:
    return {"ordered": skus}


@workflow("restock_agent")
def restock_agent(ctx: Any, shop: str) -> dict[str, Any]:
    catalogue = ctx.step("fetch catalogue", fetch_catalogue, shop)
    empty = [item["sku"] for item in catalogue if item["stock"] == 0]
    return ctx.step("reorder", reorder, empty[:20])
