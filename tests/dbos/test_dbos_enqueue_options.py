"""Enqueues with options inside a workflow, recorded for real on SQLite and left PENDING in ``DBOS.recv``
after their enqueued reviews finished: ``article-11`` (``SetEnqueueOptions`` with a deduplication id and a
priority around ``DBOS.enqueue_workflow`` and ``queue.enqueue``), ``article-12``
(``DBOS.enqueue_workflow_with_options``: deduplication id and priority, then a partition key on a
partitioned queue) and ``article-13`` (``enqueue_workflow_with_options_async`` with a delay,
``SetEnqueueOptions`` with a deduplication id and a delay around ``enqueue_workflow_async``). DBOS records
each like any enqueue: a child-workflow row at its function id naming the enqueued workflow (for the
with-options form, the ``workflow_name`` the options give) and the child's id; the options live on the
child's status row only, and recovery checks the name alone. Changed code is replayed against those
histories, and the runs are then resumed by DBOS itself under the same code, on a copy of the system
database, so each test states what DBOS really does with that code on that run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dbos_queue_desk_kit import HERE, Desk, Recording, line_of

RUNS = {"article-11": "review_with_set_options", "article-12": "review_with_options", "article-13": "review_with_options_async"}
FINISHED = {
    workflow_id: {"output": {"article": number, "notes": ["intro ok", "body ok"], "published": f"published {number}"}}
    for workflow_id, number in (("article-11", "11"), ("article-12", "12"), ("article-13", "13"))
}
PUBLISHED = [f"publish {number} ['intro ok', 'body ok']" for number in ("11", "12", "13")]

WITH_OPTIONS_INTRO = '{"workflow_name": "review_section", "queue_name": REVIEWS, "deduplication_id": f"intro-{article_id}", "priority": 3}'
ASYNC_INTRO = '{"workflow_name": "review_section_async", "queue_name": REVIEWS, "delay_seconds": 0.2}'
SET_OPTIONS_INTRO = 'with SetEnqueueOptions(deduplication_id=f"intro-{article_id}", priority=3):'
PARTITIONED_BODY = '"queue_name": PARTITIONED, "queue_partition_key": f"desk-{article_id}"'
ASYNC_SET_OPTIONS = 'with SetEnqueueOptions(deduplication_id=f"body-{article_id}", delay_seconds=0.2):'

DESK = Desk("options_desk", HERE / "record_options_desk.py", "OPTIONS_DESK_EFFECTS", RUNS)
APP = DESK.app
edited, project, replay, resume = DESK.edited, DESK.project, DESK.replay, DESK.resume


@pytest.fixture(scope="module")
def pending(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return DESK.record(tmp_path_factory, [f"check {number} {section}" for number in ("11", "12", "13") for section in ("intro", "body")])


def test_an_enqueue_with_options_is_recorded_as_a_child_workflow_of_the_name_the_options_give(pending: Recording) -> None:
    for workflow_id, section in (("article-11", "review_section"), ("article-12", "review_section"), ("article-13", "review_section_async")):
        document = json.loads((pending.histories / f"{workflow_id}.json").read_text())
        assert document["status"] == "running"
        assert [(event["function_id"], event["kind"], event["name"]) for event in document["events"]] == [
            (1, "child-workflow", section), (2, "child-workflow", section),
            (3, "step", "DBOS.getResult"), (4, "step", "DBOS.getResult"),
            (6, "timer", "DBOS.sleep"),
        ]


def test_unchanged_code_replays_every_run_without_running_anything_and_dbos_finishes_them(
    pending: Recording, tmp_path: Path
) -> None:
    root = project(tmp_path, pending, APP)
    code, results = replay(root)
    assert code == 0, results
    assert {workflow_id: result["status"] for workflow_id, result in results.items()} == dict.fromkeys(RUNS, "passed")
    outcome, effects = resume(root, pending)
    assert outcome == FINISHED
    assert effects == PUBLISHED  # no review ran again: DBOS returned the recorded children


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param(((SET_OPTIONS_INTRO, 'with SetEnqueueOptions(deduplication_id=f"lead-{article_id}", priority=9):'),),
                     id="set-options-dedup-and-priority-changed"),
        pytest.param(((SET_OPTIONS_INTRO, "if True:"),), id="set-options-dropped"),
        pytest.param(((WITH_OPTIONS_INTRO, WITH_OPTIONS_INTRO.replace('f"intro-{article_id}", "priority": 3', 'f"lead-{article_id}", "priority": 1')),),
                     id="options-dedup-and-priority-changed"),
        pytest.param(((PARTITIONED_BODY, '"queue_name": REVIEWS, "deduplication_id": f"body-{article_id}"'),),
                     id="partition-key-replaced-by-dedup-on-another-queue"),
        pytest.param(((ASYNC_INTRO, ASYNC_INTRO.replace('"delay_seconds": 0.2', '"delay_seconds": 30, "priority": 7')),
                      (ASYNC_SET_OPTIONS, 'with SetEnqueueOptions(queue_partition_key="elsewhere"):')),
                     id="async-delay-changed-and-dedup-swapped-for-a-partition-key"),
    ],
)
def test_changed_enqueue_options_replay_green_as_dbos_recovery_returns_the_recorded_children(
    pending: Recording, tmp_path: Path, changes: tuple[tuple[str, str], ...]
) -> None:
    """The options are not part of DBOS's check (it compares the enqueued workflow's name at the function
    id): recovery returns the recorded child whatever options the code now gives, and nothing runs again."""
    root = project(tmp_path, pending, edited(*changes))
    code, results = replay(root)
    assert code == 0, results
    outcome, effects = resume(root, pending)
    assert outcome == FINISHED
    assert effects == PUBLISHED


@pytest.mark.parametrize(
    ("workflow_id", "changes", "line", "issued", "recorded"),
    [
        pytest.param(
            "article-12",
            ((WITH_OPTIONS_INTRO, WITH_OPTIONS_INTRO.replace('"review_section"', '"proofread_section"')),),
            "intro = DBOS.enqueue_workflow_with_options(", "proofread_section", "review_section",
            id="options-workflow-name-changed",
        ),
        pytest.param(
            "article-13",
            ((ASYNC_INTRO, ASYNC_INTRO.replace('"review_section_async"', '"proofread_section_async"')),),
            "intro = await DBOS.enqueue_workflow_with_options_async(", "proofread_section_async", "review_section_async",
            id="async-options-workflow-name-changed",
        ),
        pytest.param(
            "article-11",
            (('        intro = DBOS.enqueue_workflow(REVIEWS, review_section, article_id, "intro")',
              '        intro = DBOS.enqueue_workflow(REVIEWS, proofread_section, article_id, "intro")'),),
            "intro = DBOS.enqueue_workflow(REVIEWS, proofread_section", "proofread_section", "review_section",
            id="set-options-enqueued-function-changed",
        ),
    ],
)
def test_another_enqueued_workflow_is_a_command_mismatch_at_the_enqueue_and_dbos_refuses_it(
    pending: Recording, tmp_path: Path, workflow_id: str, changes: tuple[tuple[str, str], ...],
    line: str, issued: str, recorded: str,
) -> None:
    app = edited(*changes)
    root = project(tmp_path, pending, app)
    code, results = replay(root)
    assert code == 1, results
    assert [other for other, result in results.items() if result["status"] != "passed"] == [workflow_id], results
    divergence = results[workflow_id]["divergence"]
    assert (divergence["kind"], divergence["position"]) == ("command-mismatch", 1)
    assert divergence["source"]["line"] == line_of(app, line)
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == (issued, recorded)
    assert divergence["recorded"]["kind"] == "child-workflow"

    outcome, effects = resume(root, pending)
    assert outcome[workflow_id]["error"] == "DBOSUnexpectedStepError", outcome
    assert f"function {recorded} was recorded when {issued} was expected" in outcome[workflow_id]["message"]
    assert not any("proofread" in effect for effect in effects)  # DBOS refused before enqueueing it
    assert {other: outcome[other] for other in RUNS if other != workflow_id} == {
        other: FINISHED[other] for other in RUNS if other != workflow_id
    }
