"""The order agent without the notification after approval."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import draft, fetch_price


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    intro = draft("intro", request["item"]).result()
    body = draft("body", request["item"]).result()
    interrupt({"item": request["item"], "price": price})
    return {"price": price, "intro": intro, "body": body, "receipt": None}
