"""``progress.py`` changed after the threads were recorded: the draft is written before the price is fetched."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import StreamWriter, interrupt

from lg_apps.tasks import draft, fetch_price, notify


@entrypoint()
def progress_agent(item: str, *, writer: StreamWriter) -> dict:
    writer({"stage": "drafting", "item": item})
    intro = draft("intro", item).result()
    writer({"stage": "pricing"})
    price = fetch_price(item).result()
    approved = interrupt({"item": item, "price": price})
    writer({"stage": "notifying"})
    receipt = notify(intro).result() if approved else None
    return {"price": price, "intro": intro, "receipt": receipt}
