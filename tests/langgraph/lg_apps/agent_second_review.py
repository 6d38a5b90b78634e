"""The order agent asking a second approval (another interrupt) before it notifies."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import draft, fetch_price, notify


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    intro = draft("intro", request["item"]).result()
    body = draft("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    confirmed = interrupt({"item": request["item"], "confirm": decision})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] and confirmed else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
