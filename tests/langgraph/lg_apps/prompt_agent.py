"""A support agent on LangGraph's functional API: a model call under the triage prompt, a reviewer's
answer (``interrupt``), then the reply written under the reply prompt. Task bodies append a line to the
file named by ``PROMPT_AGENT_EFFECTS`` whenever they really run. The prompts live in ``prompt_texts``
next to this file (imported relatively, so the tests can replay a copy of both with edited prompts)."""

from __future__ import annotations

import os

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from replaytest.langgraph import use_prompt

from .prompt_texts import REPLY, TRIAGE


def _effect(line: str) -> None:
    path = os.environ.get("PROMPT_AGENT_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


@task
def call_model(prompt_text: str) -> str:
    _effect(f"model {prompt_text}")
    return "billing" if "invoice" in prompt_text else "other"


@task
def write_reply(summary: str) -> str:
    # The task renders its prompt itself: replay learns from its body that this call uses REPLY.
    _effect(f"reply {summary}")
    return REPLY.render(summary=summary)


@entrypoint()
def support_agent(ticket: str) -> dict:
    with use_prompt(TRIAGE):
        queue = call_model(TRIAGE.render(ticket=ticket)).result()
    review = interrupt({"queue": queue, "ticket": ticket})
    reply = write_reply(f"{queue}: {review}").result()
    return {"queue": queue, "reply": reply}
