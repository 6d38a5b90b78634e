"""A product-manual answering agent on the journal runtime: it fetches the manual chapter a question is
about (a large document, which a recorded history stores as a blob beside it), then answers from it."""

from __future__ import annotations

from typing import Any

from replaytest.journal import workflow

CHAPTERS = {"setup": "Unpack the unit, connect the power cable, hold the reset button. " * 1500}


def fetch_chapter(topic: str) -> dict[str, str]:
    return {"topic": topic, "body": CHAPTERS.get(topic, "")}


def answer_from(question: str, chapter: dict[str, str]) -> str:
    return f"From the {chapter['topic']} chapter: {chapter['body'][:60]}"


@workflow(name="manual_answer", version="2026-12-01.1")
def manual_answer(ctx: Any, question: dict[str, str]) -> str:
    chapter = ctx.step("fetch chapter", fetch_chapter, question["topic"])
    return ctx.step("answer", answer_from, question["text"], chapter)
