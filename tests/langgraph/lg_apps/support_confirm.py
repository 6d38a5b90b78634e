"""The support agent after a change: it first asks the human to confirm the customer's address (a new
``interrupt`` before the approval question)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.support import approval_question, close_ticket, lookup_order, pay_refund


@entrypoint()
def support_agent(ticket: dict) -> dict:
    order = lookup_order(ticket["order_id"]).result()
    address = interrupt({"question": "confirm the customer's address?", "customer": order["customer"]})
    decision = interrupt(approval_question(order))
    refund = pay_refund(order["order_id"], order["amount"]).result() if decision == "approve" else None
    closed = close_ticket(order["order_id"], f"{decision} ({address})").result()
    return {"refund": refund, "closed": closed}
