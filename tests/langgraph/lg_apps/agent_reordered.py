"""The order agent with the two drafts moved before the price lookup."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import draft, fetch_price, notify


@entrypoint()
def order_agent(request: dict) -> dict:
    intro = draft("intro", request["item"]).result()
    body = draft("body", request["item"]).result()
    price = fetch_price(request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
