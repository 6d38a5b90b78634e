"""A DBOS agent with three model steps on a LangChain chat model (a fake one, answering offline): triage
renders a ``Prompt`` of the code, ``answer`` renders a prompt fetched at run time with
``Prompt.fetched``, and ``follow_up`` sends a text it fetched as a plain string, which nothing records.
``review_agent`` waits for a reviewer between triage and the fetched answer. Step bodies append a line to the file named by ``FETCH_DESK_EFFECTS`` whenever they really run."""

from __future__ import annotations

import os

from dbos import DBOS
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from replaytest.plugins.dbos.prompts import with_prompts  # noqa: F401  (importing it records per call)
from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="fake-chat")
MODEL = FakeListChatModel(responses=["billing"])
# The prompt registry (LangSmith's hub, a database) stands here as a table read at run time.
REGISTRY = {"acme/answer": "Answer the customer about: {ticket}", "acme/follow-up": "Ask whether {ticket} is solved"}


def effect(what: str) -> None:
    with open(os.environ.get("FETCH_DESK_EFFECTS", "fetch-desk-effects.log"), "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def triage(ticket: str) -> str:
    effect("triage")
    return str(MODEL.invoke(TRIAGE.render(ticket=ticket)).content)


@DBOS.step()
def answer(ticket: str) -> str:
    effect("answer")
    prompt = Prompt.fetched("answer", REGISTRY["acme/answer"], model="fake-chat", source="registry:acme/answer")
    return str(MODEL.invoke(prompt.render(ticket=ticket)).content)


@DBOS.step()
def follow_up(ticket: str) -> str:
    effect("follow-up")
    text = REGISTRY["acme/follow-up"].format(ticket=ticket)
    return str(MODEL.invoke(text).content)


@DBOS.workflow()
def review_agent(ticket: str) -> dict:
    """Triage, a wait for a reviewer, then the answer under a prompt fetched at run time."""
    queue = triage(ticket)
    review = DBOS.recv("review", timeout_seconds=600)
    return {"queue": queue, "review": review, "reply": answer(ticket)}


@DBOS.workflow()
def fetch_agent(ticket: str) -> dict:
    queue = triage(ticket)
    reply = answer(ticket)
    return {"queue": queue, "reply": reply, "follow_up": follow_up(ticket)}
