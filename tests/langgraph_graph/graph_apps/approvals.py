"""A refund batch graph: ``collect`` splits an order's refund into lines and sends each to
``approve_line`` (``Send``), where a person approves it (``interrupt``): one thread waits at several
interrupts at once, one per line."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt

from graph_apps.effects import effect


class Batch(TypedDict, total=False):
    order_id: str
    lines: list[dict]
    approved: Annotated[list[str], operator.add]


class Line(TypedDict):
    sku: str
    amount: float


def collect(state: Batch) -> dict:
    effect(f"collect {state['order_id']}")
    return {"lines": [{"sku": "lamp", "amount": 40.0}, {"sku": "desk", "amount": 250.0}]}


def send_lines(state: Batch) -> list[Send]:
    return [Send("approve_line", line) for line in state["lines"]]


def approve_line(line: Line) -> dict:
    answer = interrupt({"approve line": line["sku"], "amount": line["amount"]})
    effect(f"approve_line {line['sku']} {answer}")
    return {"approved": [line["sku"]] if answer == "yes" else []}


builder = StateGraph(Batch)
builder.add_node("collect", collect)
builder.add_node("approve_line", approve_line)
builder.add_edge(START, "collect")
builder.add_conditional_edges("collect", send_lines, ["approve_line"])
builder.add_edge("approve_line", END)
graph = builder.compile()
