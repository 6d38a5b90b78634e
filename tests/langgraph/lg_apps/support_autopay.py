"""The support agent after a change: refunds under 50 are approved automatically, before any human is
asked (a new ``pay_refund`` call before the approval ``interrupt``)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.support import approval_question, close_ticket, lookup_order, pay_refund

AUTO_APPROVE_BELOW = 50.0


@entrypoint()
def support_agent(ticket: dict) -> dict:
    order = lookup_order(ticket["order_id"]).result()
    if order["amount"] < AUTO_APPROVE_BELOW:
        refund = pay_refund(order["order_id"], order["amount"]).result()
        decision = "approve"
    else:
        decision = interrupt(approval_question(order))
        refund = pay_refund(order["order_id"], order["amount"]).result() if decision == "approve" else None
    closed = close_ticket(order["order_id"], decision).result()
    return {"refund": refund, "closed": closed}
