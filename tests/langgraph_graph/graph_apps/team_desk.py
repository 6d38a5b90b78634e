"""A StateGraph whose node ``team`` runs a subgraph: ``triage`` renders TRIAGE, ``review`` waits for a
reviewer (``interrupt``), ``write`` renders REPLY. The subgraph's nodes record their prompts into the
subgraph's own checkpoints. The prompts live in ``team_desk_texts`` (imported relatively, so the tests
can check a copy with edited prompts)."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import replaytest.plugins.langgraph.prompts  # noqa: F401  (importing it records per call)

from .team_desk_texts import REPLY, TRIAGE


class Desk(TypedDict, total=False):
    ticket: str
    queue: str
    verdict: str
    reply: str


def triage(state: Desk) -> dict:
    return {"queue": TRIAGE.render(ticket=state["ticket"])}


def review(state: Desk) -> dict:
    return {"verdict": interrupt({"review": state["queue"]})}


def write(state: Desk) -> dict:
    return {"reply": REPLY.render(ticket=state["ticket"])}


def intake(state: Desk) -> dict:
    return {"ticket": state["ticket"].strip()}


team = StateGraph(Desk)
team.add_node("triage", triage)
team.add_node("review", review)
team.add_node("write", write)
team.add_edge(START, "triage")
team.add_edge("triage", "review")
team.add_edge("review", "write")
team.add_edge("write", END)

desk = StateGraph(Desk)
desk.add_node("intake", intake)
desk.add_node("team", team.compile())
desk.add_edge(START, "intake")
desk.add_edge("intake", "team")
desk.add_edge("team", END)
graph = desk.compile(name="team_desk")
