"""The newsroom agent with its two ``write_part`` calls swapped (the body is written first), before it
hands the drafts to the editor."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.newsroom import editor, print_article, write_part


@entrypoint()
def newsroom(brief: dict) -> dict:
    body = write_part("body", brief["topic"]).result()
    intro = write_part("intro", brief["topic"]).result()
    edit = editor.invoke({"intro": intro, "body": body})
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "facts_ok": edit["facts_ok"]})
    post = print_article(f"{edit['lead']} | {intro} | {body}").result() if verdict == "print" else None
    return {"verdict": verdict, "post": post}
