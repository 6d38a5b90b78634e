"""The order agent with the draft task renamed to compose."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import compose, fetch_price, notify


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    intro = compose("intro", request["item"]).result()
    body = compose("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
