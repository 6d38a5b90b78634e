"""A returns agent on LangGraph's functional API: it looks the order up, refunds small orders at once,
and asks a human (``interrupt``) before refunding a large one; a declined request gets a reply only."""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

LARGE_REFUND = 100.0


@task
def look_up_order(order_id: str) -> dict[str, Any]:
    return {"order": order_id, "total": 30.0 if order_id.startswith("S-") else 300.0}


@task
def refund(order_id: str, amount: float) -> dict[str, Any]:
    return {"order": order_id, "refunded": amount}


@task
def send_reply(text: str) -> dict[str, Any]:
    return {"sent": True, "text": text}


@entrypoint()
def returns_agent(request: dict[str, Any]) -> dict[str, Any]:
    order = look_up_order(request["order"]).result()
    if order["total"] > LARGE_REFUND:
        decision = interrupt({"question": f"Refund {order['total']} for {order['order']}?"})
        if not decision.get("approved"):
            return send_reply("Your return was declined.").result()
    refund(order["order"], order["total"]).result()
    return send_reply("Your refund is on its way.").result()
