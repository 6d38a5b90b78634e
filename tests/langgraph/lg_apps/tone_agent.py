"""A support agent on LangGraph's functional API whose two tasks both render ``TONE`` in their bodies (no
``use_prompt`` around it): ``triage`` (under ``use_prompt(TRIAGE)``) renders TRIAGE and TONE, a reviewer
answers (``interrupt``), then ``write_reply`` renders REPLY and TONE. The prompts are read as attributes of
the ``tone_texts`` module (``texts.TONE``), not as names of this module. Task bodies append a line to the
file named by ``TONE_AGENT_EFFECTS`` whenever they really run; the model is faked."""

from __future__ import annotations

import os

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from replaytest.plugins.langgraph.prompts import use_prompt

from . import tone_texts as texts


def _effect(line: str) -> None:
    path = os.environ.get("TONE_AGENT_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


@task
def triage(ticket: str) -> str:
    text = texts.TRIAGE.render(ticket=ticket) + " " + texts.TONE.render()
    _effect(f"triage {text}")
    return "billing" if "invoice" in ticket else "other"


@task
def write_reply(queue: str, review: str) -> str:
    text = texts.REPLY.render(queue=queue, review=review) + " " + texts.TONE.render()
    _effect(f"reply {text}")
    return f"{queue}: {review}"


@entrypoint()
def tone_agent(ticket: str) -> dict:
    with use_prompt(texts.TRIAGE):
        queue = triage(ticket).result()
    review = interrupt({"queue": queue, "ticket": ticket})
    reply = write_reply(queue, review).result()
    return {"queue": queue, "reply": reply}
