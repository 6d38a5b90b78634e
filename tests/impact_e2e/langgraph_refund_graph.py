"""A refund desk on LangGraph's graph API (``StateGraph``): ``classify`` sorts the ticket, refunds go to
``draft`` (the amount), a reviewer decides in ``review`` (``interrupt``), approved refunds are paid (``pay``)
and every refund ends with the customer told (``notify``). Node bodies append a line to the file named by
``REFUND_GRAPH_EFFECTS`` whenever they really run, so a rehearsal that ran one would show; ``review`` itself
has no effect (it only returns the decision, which the edge leaving it routes on)."""

from __future__ import annotations

import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

TOTALS = {"R-1": 40.0, "R-2": 900.0, "R-4": 50.0, "R-5": 1500.0}


def effect(what: str) -> None:
    with open(os.environ.get("REFUND_GRAPH_EFFECTS", "refund-graph-effects.log"), "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


class Ticket(TypedDict, total=False):
    order_id: str
    text: str
    category: str
    amount: float
    approved: bool
    receipt: str
    notice: str


def classify(state: Ticket) -> dict:
    effect(f"classify {state['order_id']}")
    return {"category": "refund" if "refund" in state["text"] else "question"}


def route_ticket(state: Ticket) -> str:
    return "draft" if state["category"] == "refund" else END


def draft(state: Ticket) -> dict:
    effect(f"draft {state['order_id']}")
    return {"amount": TOTALS.get(state["order_id"], 0.0)}


def review(state: Ticket) -> dict:
    decision = interrupt({"question": "approve this refund?", "order_id": state["order_id"], "amount": state["amount"]})
    return {"approved": decision == "approve"}


def route_review(state: Ticket) -> str:
    return "pay" if state["approved"] else "notify"


def pay(state: Ticket) -> dict:
    effect(f"pay {state['order_id']} {state['amount']}")
    return {"receipt": f"paid {state['amount']:.2f}"}


def notify(state: Ticket) -> dict:
    effect(f"notify {state['order_id']}")
    return {"notice": "refund paid" if state.get("approved") else "refund declined"}


builder = StateGraph(Ticket)
builder.add_node("classify", classify)
builder.add_node("draft", draft)
builder.add_node("review", review)
builder.add_node("pay", pay)
builder.add_node("notify", notify)
builder.add_edge(START, "classify")
builder.add_conditional_edges("classify", route_ticket, ["draft", END])
builder.add_edge("draft", "review")
builder.add_conditional_edges("review", route_review, ["pay", "notify"])
builder.add_edge("pay", "notify")
builder.add_edge("notify", END)
graph = builder.compile(name="refund_desk")
