"""The order agent logging when it started (a wall-clock read in the entrypoint) and with the draft task
renamed to ``compose``: both must be reported."""

from __future__ import annotations

import logging
import time

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import compose, fetch_price, notify

log = logging.getLogger("order_agent")


@entrypoint()
def order_agent(request: dict) -> dict:
    log.info("order agent started at %s", time.time())
    price = fetch_price(request["item"]).result()
    intro = compose("intro", request["item"]).result()
    body = compose("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
