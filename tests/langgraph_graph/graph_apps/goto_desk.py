"""A refund desk whose ``triage`` node routes with ``Command(goto=…, update=…)`` (no edge leads to
``human_review``), ``human_review`` asks a person (``interrupt``), then ``pay``; ``before_pay`` is the same
graph compiled with ``interrupt_before=["pay"]``, ``after_review`` with ``interrupt_after=["human_review"]``.
Node bodies append to the effects log."""

from __future__ import annotations

from typing import Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from graph_apps.effects import effect

QUESTION = "approve this refund?"


class Ticket(TypedDict, total=False):
    order_id: str
    refund: float
    approved: bool


def triage(state: Ticket) -> Command[Literal["human_review"]]:
    effect(f"triage {state['order_id']}")
    return Command(goto="human_review", update={"refund": 900.0})


def human_review(state: Ticket) -> dict:
    answer = interrupt({"question": QUESTION, "order_id": state["order_id"], "amount": state["refund"]})
    effect(f"human_review {answer}")
    return {"approved": answer == "approve"}


def pay(state: Ticket) -> dict:
    effect(f"pay {state['order_id']}")
    return {}


builder = StateGraph(Ticket)
builder.add_node("triage", triage)
builder.add_node("human_review", human_review)
builder.add_node("pay", pay)
builder.add_edge(START, "triage")
builder.add_edge("human_review", "pay")
builder.add_edge("pay", END)
graph = builder.compile()
before_pay = builder.compile(interrupt_before=["pay"])
after_review = builder.compile(interrupt_after=["human_review"])
