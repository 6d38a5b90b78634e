"""A support desk on the graph API whose nodes render prompts: ``triage`` sorts the ticket under the triage
prompt, ``draft`` writes a reply under the reply prompt and asks a reviewer to approve it (``interrupt``),
``send`` sends what was approved. ``graph`` runs the nodes directly; ``nested_graph`` runs ``draft`` inside
a ``writer`` subgraph. The "model" is a stand-in that returns the rendered prompt; every node body appends to
the effects log (``draft`` after its interrupt). The prompts live in ``prompt_desk_texts`` (imported relatively, so the tests can check a copy
of both with an edited prompt)."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from graph_apps.effects import effect

from .prompt_desk_texts import REPLY, TRIAGE


class Desk(TypedDict, total=False):
    ticket: str
    queue: str
    reply: str
    sent: str


def model(text: str) -> str:
    return text.upper()


def triage(state: Desk) -> dict:
    effect(f"triage {state['ticket']}")
    answer = model(TRIAGE.render(ticket=state["ticket"]))
    return {"queue": "billing" if "INVOICE" in answer else "other"}


def draft(state: Desk) -> dict:
    reply = model(REPLY.render(ticket=state["ticket"]))
    verdict = interrupt({"approve the reply to": state["ticket"]})
    effect(f"draft {state['ticket']} {verdict}")
    return {"reply": reply if verdict == "approve" else ""}


def send(state: Desk) -> dict:
    effect(f"send {state.get('reply', '')}")
    return {"sent": "yes" if state.get("reply") else "no"}


builder = StateGraph(Desk)
builder.add_node("triage", triage)
builder.add_node("draft", draft)
builder.add_node("send", send)
builder.add_edge(START, "triage")
builder.add_edge("triage", "draft")
builder.add_edge("draft", "send")
builder.add_edge("send", END)
graph = builder.compile(name="desk")

writer_builder = StateGraph(Desk)
writer_builder.add_node("draft", draft)
writer_builder.add_edge(START, "draft")
writer_builder.add_edge("draft", END)
writer = writer_builder.compile(name="writer")

nested_builder = StateGraph(Desk)
nested_builder.add_node("triage", triage)
nested_builder.add_node("writer", writer)
nested_builder.add_node("send", send)
nested_builder.add_edge(START, "triage")
nested_builder.add_edge("triage", "writer")
nested_builder.add_edge("writer", "send")
nested_builder.add_edge("send", END)
nested_graph = nested_builder.compile(name="nested_desk")
