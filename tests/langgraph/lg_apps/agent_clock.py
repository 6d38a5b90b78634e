"""The order agent, now stamping its result with the wall clock in the entrypoint (not in a task)."""

from __future__ import annotations

import time

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import draft, fetch_price, notify


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    started = time.time()
    intro = draft("intro", request["item"]).result()
    body = draft("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt, "at": started}
