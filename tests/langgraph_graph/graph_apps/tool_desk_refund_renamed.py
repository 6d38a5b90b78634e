"""``tool_desk`` after its refund tool was renamed ``refund_order``: the ``issue_refund`` call a parked
thread's last model message asks for names no tool of the current ``ToolNode``."""

from __future__ import annotations

from langchain_core.tools import tool
from langgraph.types import interrupt

from graph_apps.effects import effect
from graph_apps.tool_desk import QUESTION, build, lookup_order


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund an order, once a person approved it."""
    effect(f"refund_order asked {order_id}")
    answer = interrupt({"question": QUESTION, "order_id": order_id, "amount": amount})
    effect(f"refund_order {order_id} {answer}")
    return f"refunded {amount:.2f}" if answer == "approve" else "refund declined"


graph = build([lookup_order, refund_order]).compile()
approving = build([lookup_order, refund_order]).compile(interrupt_before=["tools"])
