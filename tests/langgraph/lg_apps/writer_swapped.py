"""The writer agent with its two ``draft_section`` calls swapped (the body is drafted first)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.writer import draft_section, publish


@entrypoint()
def writer_agent(brief: dict) -> dict:
    body = draft_section("body", brief["topic"]).result()
    intro = draft_section("intro", brief["topic"]).result()
    verdict = interrupt({"review": "publish this article?", "intro": intro, "body": body})
    post = publish(f"{intro} | {body}").result() if verdict == "publish" else None
    return {"verdict": verdict, "post": post}
