"""A newsroom agent that hands its drafts to another ``@entrypoint`` (an editor) from its own code:
``editor.invoke(...)`` is a nested run, which LangGraph checkpoints in the agent's task namespace. Then a
human decides (``interrupt``) and the article is published."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from lg_apps.tasks import _effect


@task
def write_part(part: str, topic: str) -> str:
    _effect(f"write_part {part} {topic}")
    return f"{part} on {topic}"


@task
def tighten(text: str) -> str:
    _effect(f"tighten {text}")
    return f"{text}, tightened"


@task
def fact_check(text: str) -> dict:
    _effect(f"fact_check {text}")
    return {"claims": 1, "ok": True}


@task
def print_article(article: str) -> dict:
    _effect(f"print_article {article}")
    return {"printed": article}


@entrypoint()
def editor(article: dict) -> dict:
    lead = tighten(article["intro"]).result()
    facts = fact_check(article["body"]).result()
    return {"lead": lead, "facts_ok": facts["ok"]}


@entrypoint()
def newsroom(brief: dict) -> dict:
    intro = write_part("intro", brief["topic"]).result()
    body = write_part("body", brief["topic"]).result()
    edit = editor.invoke({"intro": intro, "body": body})
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "facts_ok": edit["facts_ok"]})
    post = print_article(f"{edit['lead']} | {intro} | {body}").result() if verdict == "print" else None
    return {"verdict": verdict, "post": post}
