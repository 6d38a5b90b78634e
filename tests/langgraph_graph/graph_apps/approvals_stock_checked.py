"""The refund batch whose ``approve_line`` (started by a ``Send``) first checks the stock with a ``@task``
and shows it in the question it asks."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.func import task
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


@task
def stock_of(sku: str) -> int:
    effect(f"stock_of {sku}")
    return {"lamp": 3, "desk": 0}.get(sku, 0)


def collect(state: Batch) -> dict:
    effect(f"collect {state['order_id']}")
    return {"lines": [{"sku": "lamp", "amount": 40.0}, {"sku": "desk", "amount": 250.0}]}


def send_lines(state: Batch) -> list[Send]:
    return [Send("approve_line", line) for line in state["lines"]]


def approve_line(line: Line) -> dict:
    stock = stock_of(line["sku"]).result()
    answer = interrupt({"approve line": line["sku"], "amount": line["amount"], "in stock": stock})
    effect(f"approve_line {line['sku']} {answer}")
    return {"approved": [line["sku"]] if answer == "yes" else []}


builder = StateGraph(Batch)
builder.add_node("collect", collect)
builder.add_node("approve_line", approve_line)
builder.add_edge(START, "collect")
builder.add_conditional_edges("collect", send_lines, ["approve_line"])
builder.add_edge("approve_line", END)
graph = builder.compile()
