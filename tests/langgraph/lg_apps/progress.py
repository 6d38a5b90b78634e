"""An order agent that reports its progress to whoever streams it (``writer``, LangGraph's ``custom``
stream mode): a price, a draft, a human approval (``interrupt``), a notification."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import StreamWriter, interrupt

from lg_apps.tasks import draft, fetch_price, notify


@entrypoint()
def progress_agent(item: str, *, writer: StreamWriter) -> dict:
    writer({"stage": "pricing", "item": item})
    price = fetch_price(item).result()
    writer({"stage": "drafting", "price": price})
    intro = draft("intro", item).result()
    approved = interrupt({"item": item, "price": price})
    writer({"stage": "notifying"})
    receipt = notify(intro).result() if approved else None
    return {"price": price, "intro": intro, "receipt": receipt}
