"""A newsroom's review desk on DBOS queues: an article's sections are enqueued for review on the
``reviews`` queue (``DBOS.enqueue_workflow``, ``queue.enqueue`` on the queue ``DBOS.retrieve_queue``
returns, and their async forms), the workflow reads each handle's result, then waits for the editor's
verdict (``DBOS.recv``) and publishes. Step bodies append a line to the file named by
``QUEUE_DESK_EFFECTS`` whenever they really run."""

from __future__ import annotations

import os

from dbos import DBOS

EFFECTS = os.environ.get("QUEUE_DESK_EFFECTS", "queue-desk-effects.log")
REVIEWS = "reviews"
URGENT = "urgent-reviews"
VERDICT_WAIT_S = 600


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def fetch_article(article_id: str) -> str:
    effect(f"fetch {article_id}")
    return f"article {article_id}"


@DBOS.step()
def check_section(article_id: str, section: str) -> str:
    effect(f"check {article_id} {section}")
    return f"{section} ok"


@DBOS.step()
def publish(article_id: str, notes: list) -> str:
    effect(f"publish {article_id} {notes}")
    return f"published {article_id}"


@DBOS.workflow()
def review_section(article_id: str, section: str) -> str:
    return check_section(article_id, section)


@DBOS.workflow()
def proofread_section(article_id: str, section: str) -> str:
    return check_section(article_id, f"proofread {section}")


@DBOS.workflow()
def review_article(article_id: str) -> dict:
    fetch_article(article_id)
    intro = DBOS.enqueue_workflow(REVIEWS, review_section, article_id, "intro")
    body = DBOS.retrieve_queue(REVIEWS).enqueue(review_section, article_id, "body")
    notes = [intro.get_result(), body.get_result()]
    verdict = DBOS.recv("verdict", timeout_seconds=VERDICT_WAIT_S)
    if verdict != "publish":
        return {"article": article_id, "notes": notes, "published": None}
    return {"article": article_id, "notes": notes, "published": publish(article_id, notes)}


@DBOS.step()
async def fetch_article_async(article_id: str) -> str:
    effect(f"fetch {article_id}")
    return f"article {article_id}"


@DBOS.workflow()
async def review_section_async(article_id: str, section: str) -> str:
    return check_section(article_id, section)


@DBOS.workflow()
async def review_article_async(article_id: str) -> dict:
    await fetch_article_async(article_id)
    queue = await DBOS.retrieve_queue_async(REVIEWS)
    intro = await queue.enqueue_async(review_section_async, article_id, "intro")
    body = await DBOS.enqueue_workflow_async(REVIEWS, review_section_async, article_id, "body")
    notes = [await intro.get_result(), await body.get_result()]
    verdict = await DBOS.recv_async("verdict", timeout_seconds=VERDICT_WAIT_S)
    if verdict != "publish":
        return {"article": article_id, "notes": notes, "published": None}
    return {"article": article_id, "notes": notes, "published": publish(article_id, notes)}
