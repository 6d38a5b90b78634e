"""A StateGraph agent with two model nodes on a LangChain chat model (a fake one, answering offline):
``triage`` renders a ``Prompt`` of the code, ``follow_up`` sends a text fetched at run time as a plain
string, which nothing records."""

from __future__ import annotations

from typing import TypedDict

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph

import replaytest.plugins.langgraph.prompts  # noqa: F401  (importing it records per call)
from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="fake-chat")
MODEL = FakeListChatModel(responses=["billing"])
# The prompt registry (LangSmith's hub, a database) stands here as a table read at run time.
REGISTRY = {"acme/follow-up": "Ask whether {ticket} is solved"}


class Desk(TypedDict, total=False):
    ticket: str
    queue: str
    follow_up: str


def triage(state: Desk) -> dict:
    return {"queue": str(MODEL.invoke(TRIAGE.render(ticket=state["ticket"])).content)}


def follow_up(state: Desk) -> dict:
    text = REGISTRY["acme/follow-up"].format(ticket=state["ticket"])
    return {"follow_up": str(MODEL.invoke(text).content)}


builder = StateGraph(Desk)
builder.add_node("triage", triage)
builder.add_node("follow_up", follow_up)
builder.add_edge(START, "triage")
builder.add_edge("triage", "follow_up")
builder.add_edge("follow_up", END)
graph = builder.compile(name="fetch_graph")
