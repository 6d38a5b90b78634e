"""The order agent with a stock check inserted right after the approval (interrupt)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import check_stock, draft, fetch_price, notify


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    intro = draft("intro", request["item"]).result()
    body = draft("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    check_stock(request["item"]).result()
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
