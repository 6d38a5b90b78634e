"""A StateGraph agent with two model nodes on a LangChain chat model (a fake one, answering offline):
``triage`` renders a ``Prompt`` of the code, ``follow_up`` sends a text fetched at run time as a plain
string, which nothing records. ``review_graph`` parks in ``review`` (``interrupt``) before ``answer``,
which renders a prompt fetched at run time (``Prompt.fetched``)."""

from __future__ import annotations

from typing import TypedDict

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import replaytest.plugins.langgraph.prompts  # noqa: F401  (importing it records per call)
from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="fake-chat")
MODEL = FakeListChatModel(responses=["billing"])
# The prompt registry (LangSmith's hub, a database) stands here as a table read at run time.
REGISTRY = {"acme/follow-up": "Ask whether {ticket} is solved", "acme/answer": "Answer the customer about: {ticket}"}


class Desk(TypedDict, total=False):
    ticket: str
    queue: str
    follow_up: str
    verdict: str
    reply: str


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


def review(state: Desk) -> dict:
    return {"verdict": interrupt({"queue": state["queue"]})}


def answer(state: Desk) -> dict:
    prompt = Prompt.fetched("answer", REGISTRY["acme/answer"], model="fake-chat", source="registry:acme/answer")
    return {"reply": str(MODEL.invoke(prompt.render(ticket=state["ticket"])).content)}


reviewed = StateGraph(Desk)
reviewed.add_node("triage", triage)
reviewed.add_node("review", review)
reviewed.add_node("answer", answer)
reviewed.add_edge(START, "triage")
reviewed.add_edge("triage", "review")
reviewed.add_edge("review", "answer")
reviewed.add_edge("answer", END)
review_graph = reviewed.compile(name="review_graph")
