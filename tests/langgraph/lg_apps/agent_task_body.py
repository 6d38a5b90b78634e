"""The order agent calling the draft task's function directly (``draft.func``) instead of the task, so
LangGraph would neither checkpoint its result nor skip it on resume."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.tasks import draft, fetch_price, notify


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    intro = draft.func("intro", request["item"])
    body = draft("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
