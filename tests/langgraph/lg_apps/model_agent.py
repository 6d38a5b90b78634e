"""A support agent on LangGraph's functional API whose prompts declare their model: ``classify`` is
called under ``use_prompt(TRIAGE)`` (the prompt is rendered in the entrypoint), a reviewer answers
(``interrupt``), then ``write_reply`` renders ``REPLY`` in its own body. Task bodies append a line to
the file named by ``MODEL_AGENT_EFFECTS`` whenever they really run; the model is faked."""

from __future__ import annotations

import os

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from replaytest.plugins.langgraph.prompts import use_prompt

from .model_texts import REPLY, TRIAGE


def _effect(line: str) -> None:
    path = os.environ.get("MODEL_AGENT_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


@task
def classify(prompt_text: str) -> str:
    _effect(f"classify {prompt_text}")
    return "billing" if "invoice" in prompt_text else "other"


@task
def write_reply(summary: str) -> str:
    text = REPLY.render(summary=summary)
    _effect(f"reply {REPLY.model} {text}")
    return f"[{REPLY.model}] {summary}"


@entrypoint()
def model_agent(ticket: str) -> dict:
    with use_prompt(TRIAGE):
        queue = classify(TRIAGE.render(ticket=ticket)).result()
    review = interrupt({"queue": queue, "ticket": ticket})
    reply = write_reply(f"{queue}: {review}").result()
    return {"queue": queue, "reply": reply}
