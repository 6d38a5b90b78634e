"""The newsroom agent that, once the article is approved, hands it to the editor a second time: a nested graph
run the recorded threads never started (graph run #2 from the entrypoint)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.newsroom import editor, print_article, write_part


@entrypoint()
def newsroom(brief: dict) -> dict:
    intro = write_part("intro", brief["topic"]).result()
    body = write_part("body", brief["topic"]).result()
    edit = editor.invoke({"intro": intro, "body": body})
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "facts_ok": edit["facts_ok"]})
    if verdict == "print":
        edit = editor.invoke({"intro": edit["lead"], "body": body})
    post = print_article(f"{edit['lead']} | {intro} | {body}").result() if verdict == "print" else None
    return {"verdict": verdict, "post": post}
