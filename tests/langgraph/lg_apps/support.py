"""A support agent that refunds orders: it looks the order up, asks a human to approve the refund
(``interrupt``), then pays the refund or not and closes the ticket. Task bodies append to the effects
file (``tasks.EFFECTS``), so a test can tell whether a refund was really paid."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from lg_apps.tasks import _effect

ORDERS = {"A-17": {"customer": "ana@example.org", "amount": 20.0}, "B-90": {"customer": "bo@example.org", "amount": 400.0}}


@task
def lookup_order(order_id: str) -> dict:
    _effect(f"lookup_order {order_id}")
    return {"order_id": order_id, **ORDERS[order_id]}


@task
def pay_refund(order_id: str, amount: float) -> dict:
    _effect(f"pay_refund {order_id} {amount}")
    return {"refunded": amount}


@task
def close_ticket(order_id: str, outcome: str) -> str:
    _effect(f"close_ticket {order_id} {outcome}")
    return f"ticket for {order_id} closed: {outcome}"


def approval_question(order: dict) -> dict:
    return {"question": "approve the refund?", "order_id": order["order_id"], "amount": order["amount"]}


@entrypoint()
def support_agent(ticket: dict) -> dict:
    order = lookup_order(ticket["order_id"]).result()
    decision = interrupt(approval_question(order))
    refund = pay_refund(order["order_id"], order["amount"]).result() if decision == "approve" else None
    closed = close_ticket(order["order_id"], decision).result()
    return {"refund": refund, "closed": closed}
