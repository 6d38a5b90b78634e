"""A support desk on the graph API whose prompts declare their model: ``triage`` sorts the ticket under the
triage prompt, a reviewer confirms the queue in ``review`` (``interrupt``), ``draft`` writes the reply under the
reply prompt (no interrupt: the node a thread parked in ``review`` runs after the resume), and ``confirm`` asks
whether to send it (``interrupt``). The "model" is a stand-in that answers with the model the prompt declares, so
the state shows which version a node used; every node body appends to the effects log once it runs past its
interrupt. The prompts live in ``model_desk_texts`` (imported relatively, so the tests can check a copy of both
with an edited prompt)."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from graph_apps.effects import effect

from .model_desk_texts import REPLY, TRIAGE


class Ticket(TypedDict, total=False):
    ticket: str
    queue: str
    route: str
    reply: str
    sent: str


def triage(state: Ticket) -> dict:
    text = TRIAGE.render(ticket=state["ticket"])
    effect(f"triage {TRIAGE.model} {text}")
    return {"queue": "billing" if "invoice" in text else "other"}


def review(state: Ticket) -> dict:
    route = interrupt({"route the ticket to": state["queue"]})
    effect(f"review {route}")
    return {"route": route}


def draft(state: Ticket) -> dict:
    text = REPLY.render(ticket=state["ticket"], route=state["route"])
    effect(f"draft {REPLY.model} {text}")
    return {"reply": f"[{REPLY.model}] {state['route']}"}


def confirm(state: Ticket) -> dict:
    verdict = interrupt({"send the reply": state["reply"]})
    effect(f"confirm {verdict}")
    return {"sent": "yes" if verdict == "send" else "no"}


builder = StateGraph(Ticket)
builder.add_node("triage", triage)
builder.add_node("review", review)
builder.add_node("draft", draft)
builder.add_node("confirm", confirm)
builder.add_edge(START, "triage")
builder.add_edge("triage", "review")
builder.add_edge("review", "draft")
builder.add_edge("draft", "confirm")
builder.add_edge("confirm", END)
graph = builder.compile(name="model_desk")
