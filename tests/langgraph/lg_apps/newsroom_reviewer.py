"""The newsroom agent handing its drafts to another entrypoint (``reviewer``) than the one it recorded."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.newsroom import print_article, tighten, write_part


@entrypoint()
def reviewer(article: dict) -> dict:
    lead = tighten(article["intro"]).result()
    return {"lead": lead, "facts_ok": True}


@entrypoint()
def newsroom(brief: dict) -> dict:
    intro = write_part("intro", brief["topic"]).result()
    body = write_part("body", brief["topic"]).result()
    edit = reviewer.invoke({"intro": intro, "body": body})
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "facts_ok": edit["facts_ok"]})
    post = print_article(f"{edit['lead']} | {intro} | {body}").result() if verdict == "print" else None
    return {"verdict": verdict, "post": post}
