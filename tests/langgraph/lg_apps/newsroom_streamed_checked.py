"""The streamed newsroom agent with a new task call before its drafts (``check_stock``)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.newsroom import editor, write_part
from lg_apps.tasks import check_stock


@entrypoint()
def streamed_newsroom(brief: dict) -> dict:
    check_stock(brief["topic"]).result()
    intro = write_part("intro", brief["topic"]).result()
    body = write_part("body", brief["topic"]).result()
    edits = list(editor.stream({"intro": intro, "body": body}))
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "edits": len(edits)})
    return {"verdict": verdict}
