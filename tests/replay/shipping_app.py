"""A shipping agent for the size-limit tests: ``label_agent`` quotes carriers and prints a label (a small
history); ``manifest_agent`` loads a warehouse's dispatch manifest (a result large enough that the journal
stores it in the blob store beside the history) and books the heaviest parcels."""

from __future__ import annotations

from typing import Any

from replaytest.journal import workflow


def quote_carriers(parcel: dict[str, Any]) -> list[dict[str, Any]]:
    grams = parcel["grams"]
    return [{"carrier": "postal", "price": 4 + grams // 500}, {"carrier": "courier", "price": 9 + grams // 1000}]


def print_label(parcel: dict[str, Any], carrier: str) -> str:
    return f"{carrier}:{parcel['to']}"


def load_manifest(warehouse: str) -> list[dict[str, Any]]:
    return [{"parcel": f"{warehouse}-{i:05d}", "grams": 250 + (i * 37) % 9000, "to": f"customer {i}"} for i in range(2500)]


def book(parcels: list[str]) -> dict[str, Any]:
    return {"booked": parcels}


@workflow("label_agent")
def label_agent(ctx: Any, parcel: dict[str, Any]) -> str:
    quotes = ctx.step("quote carriers", quote_carriers, parcel)
    cheapest = min(quotes, key=lambda quote: quote["price"])
    return ctx.step("print label", print_label, parcel, cheapest["carrier"])


@workflow("manifest_agent")
def manifest_agent(ctx: Any, warehouse: str) -> dict[str, Any]:
    manifest = ctx.step("load manifest", load_manifest, warehouse)
    heaviest = sorted(manifest, key=lambda item: -item["grams"])[:10]
    return ctx.step("book", book, [item["parcel"] for item in heaviest])
