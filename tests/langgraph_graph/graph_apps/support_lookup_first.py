"""The support desk whose review first looks the customer up with a ``@task`` (its result is checkpointed
with the node's writes) and shows the customer's tier in the question it asks."""

from __future__ import annotations

from typing import TypedDict

from langgraph.func import task
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from graph_apps.effects import effect

ORDER_TOTALS = {"A-17": 900.0, "B-90": 35.0}


class Ticket(TypedDict, total=False):
    ticket: dict
    category: str
    refund: float
    approved: bool
    receipt: str


@task
def look_up_customer(order_id: str) -> dict:
    effect(f"look_up_customer {order_id}")
    return {"order_id": order_id, "tier": "gold" if order_id == "A-17" else "standard"}


def classify(state: Ticket) -> dict:
    effect(f"classify {state['ticket']['order_id']}")
    text = state["ticket"]["text"].lower()
    return {"category": "refund" if "refund" in text or "broken" in text else "question"}


def draft_refund(state: Ticket) -> dict:
    effect(f"draft_refund {state['ticket']['order_id']}")
    return {"refund": ORDER_TOTALS.get(state["ticket"]["order_id"], 0.0)}


def human_review(state: Ticket) -> dict:
    customer = look_up_customer(state["ticket"]["order_id"]).result()
    ask = {"question": "approve this refund?", "order_id": state["ticket"]["order_id"],
           "amount": state["refund"], "tier": customer["tier"]}
    answer = interrupt(ask)
    effect(f"human_review {state['ticket']['order_id']} {answer}")
    return {"approved": answer == "approve"}


def pay(state: Ticket) -> dict:
    effect(f"pay {state['ticket']['order_id']} {state.get('refund', 0.0)}")
    return {"receipt": f"paid {state.get('refund', 0.0):.2f}" if state.get("approved") else "declined"}


def route(state: Ticket) -> str:
    return "draft_refund" if state["category"] == "refund" else END


builder = StateGraph(Ticket)
builder.add_node("classify", classify)
builder.add_node("draft_refund", draft_refund)
builder.add_node("human_review", human_review)
builder.add_node("pay", pay)
builder.add_edge(START, "classify")
builder.add_conditional_edges("classify", route)
builder.add_edge("draft_refund", "human_review")
builder.add_edge("human_review", "pay")
builder.add_edge("pay", END)
graph = builder.compile()
