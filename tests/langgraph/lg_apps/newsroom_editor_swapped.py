"""The newsroom agent whose editor now checks the facts before it tightens the intro (its two task calls
swapped); the agent itself is unchanged."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.newsroom import fact_check, print_article, tighten, write_part


@entrypoint()
def editor(article: dict) -> dict:
    facts = fact_check(article["body"]).result()
    lead = tighten(article["intro"]).result()
    return {"lead": lead, "facts_ok": facts["ok"]}


@entrypoint()
def newsroom(brief: dict) -> dict:
    intro = write_part("intro", brief["topic"]).result()
    body = write_part("body", brief["topic"]).result()
    edit = editor.invoke({"intro": intro, "body": body})
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "facts_ok": edit["facts_ok"]})
    post = print_article(f"{edit['lead']} | {intro} | {body}").result() if verdict == "print" else None
    return {"verdict": verdict, "post": post}
