"""An agent on LangGraph's functional API with two model tasks on a LangChain chat model (a fake one,
answering offline): ``sort_ticket`` renders a ``Prompt`` of the code, ``follow_up`` sends a text fetched at run
time as a plain string, which nothing records. ``review_agent`` parks at a reviewer's ``interrupt`` before
``answer``, which renders a prompt fetched at run time (``Prompt.fetched``)."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import interrupt
from langchain_core.language_models.fake_chat_models import FakeListChatModel

import replaytest.plugins.langgraph.prompts  # noqa: F401  (importing it records per call)
from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="fake-chat")
MODEL = FakeListChatModel(responses=["billing"])
# The prompt registry (LangSmith's hub, a database) stands here as a table read at run time.
REGISTRY = {"acme/follow-up": "Ask whether {ticket} is solved", "acme/answer": "Answer the customer about: {ticket}"}


@task
def sort_ticket(ticket: str) -> str:
    return str(MODEL.invoke(TRIAGE.render(ticket=ticket)).content)


@task
def follow_up(ticket: str) -> str:
    text = REGISTRY["acme/follow-up"].format(ticket=ticket)
    return str(MODEL.invoke(text).content)


@entrypoint()
def fetch_agent(ticket: str) -> dict:
    queue = sort_ticket(ticket).result()
    return {"queue": queue, "follow_up": follow_up(ticket).result()}


@task
def answer(ticket: str) -> str:
    prompt = Prompt.fetched("answer", REGISTRY["acme/answer"], model="fake-chat", source="registry:acme/answer")
    return str(MODEL.invoke(prompt.render(ticket=ticket)).content)


@entrypoint()
def review_agent(ticket: str) -> dict:
    """Sorting, a reviewer's answer (``interrupt``), then the answer under a prompt fetched at run time."""
    queue = sort_ticket(ticket).result()
    verdict = interrupt({"queue": queue})
    return {"queue": queue, "verdict": verdict, "reply": answer(ticket).result()}
