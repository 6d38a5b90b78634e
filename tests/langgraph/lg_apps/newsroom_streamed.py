"""The newsroom agent reading its editor's run with ``stream()`` (a form replay does not support)."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.newsroom import editor, write_part


@entrypoint()
def streamed_newsroom(brief: dict) -> dict:
    intro = write_part("intro", brief["topic"]).result()
    body = write_part("body", brief["topic"]).result()
    edits = list(editor.stream({"intro": intro, "body": body}))
    verdict = interrupt({"review": "print this article?", "topic": brief["topic"], "edits": len(edits)})
    return {"verdict": verdict}
