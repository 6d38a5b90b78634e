"""An agent on LangGraph's functional API that reaches its second task through a project helper function:
``first_draft`` renders REPLY, a reviewer answers (``interrupt``), then ``finish`` (a plain function) calls
``polish``, which renders REPLY again."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

import replaytest.plugins.langgraph.prompts  # noqa: F401  (importing it records per call)

from .helper_texts import REPLY


@task
def first_draft(ticket: str) -> str:
    return REPLY.render(summary=ticket)


@task
def polish(text: str) -> str:
    return REPLY.render(summary=text)


def finish(text: str) -> str:
    return polish(text).result()


@entrypoint()
def helper_agent(ticket: str) -> dict:
    first = first_draft(ticket).result()
    verdict = interrupt({"draft": first})
    return {"reply": finish(first), "verdict": verdict}
