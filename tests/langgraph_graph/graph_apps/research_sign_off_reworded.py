"""The research desk whose review subgraph's ``sign_off`` node now also shows the number of sources in its
question (the editor is asked another question)."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt

from graph_apps.effects import effect


class Research(TypedDict, total=False):
    question: str
    queries: list[str]
    findings: Annotated[list[str], operator.add]
    answer: str
    signed_off: bool


class Query(TypedDict):
    query: str


def plan(state: Research) -> dict:
    effect(f"plan {state['question']}")
    return {"queries": [f"{state['question']} ({angle})" for angle in ("pricing", "reviews")]}


def fan_out(state: Research) -> list[Send]:
    return [Send("search", {"query": query}) for query in state["queries"]]


def search(state: Query) -> dict:
    effect(f"search {state['query']}")
    return {"findings": [f"notes on {state['query']}"]}


def draft_answer(state: Research) -> dict:
    effect("draft_answer")
    return {"answer": "; ".join(sorted(state["findings"]))}


def sign_off(state: Research) -> dict:
    verdict = interrupt({"sign off": state["answer"], "sources": len(state["findings"])})
    effect(f"sign_off {verdict}")
    return {"signed_off": verdict == "yes"}


review_builder = StateGraph(Research)
review_builder.add_node("draft_answer", draft_answer)
review_builder.add_node("sign_off", sign_off)
review_builder.add_edge(START, "draft_answer")
review_builder.add_edge("draft_answer", "sign_off")
review_builder.add_edge("sign_off", END)
review = review_builder.compile()

builder = StateGraph(Research)
builder.add_node("plan", plan)
builder.add_node("search", search)
builder.add_node("review", review)
builder.add_edge(START, "plan")
builder.add_conditional_edges("plan", fan_out, ["search"])
builder.add_edge("search", "review")
builder.add_edge("review", END)
graph = builder.compile()
