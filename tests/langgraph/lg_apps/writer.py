"""A writer agent: drafts an article's intro and body, asks an editor to review both (``interrupt``
with the drafts as its value), then publishes the article."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from lg_apps.tasks import _effect


@task
def draft_section(section: str, topic: str) -> str:
    _effect(f"draft_section {section} {topic}")
    return f"{section} on {topic}"


@task
def publish(article: str) -> dict:
    _effect(f"publish {article}")
    return {"published": article}


@entrypoint()
def writer_agent(brief: dict) -> dict:
    intro = draft_section("intro", brief["topic"]).result()
    body = draft_section("body", brief["topic"]).result()
    verdict = interrupt({"review": "publish this article?", "intro": intro, "body": body})
    post = publish(f"{intro} | {body}").result() if verdict == "publish" else None
    return {"verdict": verdict, "post": post}
