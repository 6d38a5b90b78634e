"""A review desk that enqueues with options: ``review_with_set_options`` sets deduplication id and priority
for ``DBOS.enqueue_workflow`` and ``queue.enqueue`` with ``SetEnqueueOptions``; ``review_with_options``
enqueues by name with ``DBOS.enqueue_workflow_with_options`` (deduplication id, priority, partition key
on a partitioned queue); ``review_with_options_async`` uses ``enqueue_workflow_with_options_async`` (a
delay) and ``SetEnqueueOptions`` around ``enqueue_workflow_async``. Each reads its handles' results, waits
for the editor's verdict (``DBOS.recv``) and publishes. Step bodies append a line to the file named by
``OPTIONS_DESK_EFFECTS`` whenever they really run."""

from __future__ import annotations

import os

from dbos import DBOS, SetEnqueueOptions

EFFECTS = os.environ.get("OPTIONS_DESK_EFFECTS", "options-desk-effects.log")
REVIEWS = "reviews"
PARTITIONED = "partitioned-reviews"
VERDICT_WAIT_S = 600


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


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
async def review_section_async(article_id: str, section: str) -> str:
    return check_section(article_id, section)


@DBOS.workflow()
async def proofread_section_async(article_id: str, section: str) -> str:
    return check_section(article_id, f"proofread {section}")


def finish(article_id: str, notes: list, verdict: str | None) -> dict:
    if verdict != "publish":
        return {"article": article_id, "notes": notes, "published": None}
    return {"article": article_id, "notes": notes, "published": publish(article_id, notes)}


@DBOS.workflow()
def review_with_set_options(article_id: str) -> dict:
    with SetEnqueueOptions(deduplication_id=f"intro-{article_id}", priority=3):
        intro = DBOS.enqueue_workflow(REVIEWS, review_section, article_id, "intro")
    with SetEnqueueOptions(priority=5):
        body = DBOS.retrieve_queue(REVIEWS).enqueue(review_section, article_id, "body")
    notes = [intro.get_result(), body.get_result()]
    return finish(article_id, notes, DBOS.recv("verdict", timeout_seconds=VERDICT_WAIT_S))


@DBOS.workflow()
def review_with_options(article_id: str) -> dict:
    intro = DBOS.enqueue_workflow_with_options(
        {"workflow_name": "review_section", "queue_name": REVIEWS, "deduplication_id": f"intro-{article_id}", "priority": 3},
        article_id, "intro",
    )
    body = DBOS.enqueue_workflow_with_options(
        {"workflow_name": "review_section", "queue_name": PARTITIONED, "queue_partition_key": f"desk-{article_id}"},
        article_id, "body",
    )
    notes = [intro.get_result(), body.get_result()]
    return finish(article_id, notes, DBOS.recv("verdict", timeout_seconds=VERDICT_WAIT_S))


@DBOS.workflow()
async def review_with_options_async(article_id: str) -> dict:
    intro = await DBOS.enqueue_workflow_with_options_async(
        {"workflow_name": "review_section_async", "queue_name": REVIEWS, "delay_seconds": 0.2}, article_id, "intro",
    )
    with SetEnqueueOptions(deduplication_id=f"body-{article_id}", delay_seconds=0.2):
        body = await DBOS.enqueue_workflow_async(REVIEWS, review_section_async, article_id, "body")
    notes = [await intro.get_result(), await body.get_result()]
    return finish(article_id, notes, await DBOS.recv_async("verdict", timeout_seconds=VERDICT_WAIT_S))
