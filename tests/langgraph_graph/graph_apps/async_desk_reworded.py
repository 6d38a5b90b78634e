"""``async_desk.py`` with ``review`` asking another question."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from graph_apps.effects import effect

QUESTION = "ship this order today?"


class Order(TypedDict, total=False):
    order_id: str
    shipped: bool


async def lookup(state: Order) -> dict:
    effect(f"lookup {state['order_id']}")
    return {}


async def review(state: Order) -> dict:
    answer = interrupt({"question": QUESTION, "order_id": state["order_id"]})
    effect(f"review {answer}")
    return {"shipped": answer == "ship"}


builder = StateGraph(Order)
builder.add_node("lookup", lookup)
builder.add_node("review", review)
builder.add_edge(START, "lookup")
builder.add_edge("lookup", "review")
builder.add_edge("review", END)
graph = builder.compile()
