"""Workflows that enqueue on DBOS queues, recorded for real on SQLite and left PENDING in ``DBOS.recv``
after their enqueued reviews finished: ``article-7`` (``DBOS.enqueue_workflow``, ``queue.enqueue`` on the
queue ``DBOS.retrieve_queue`` returns, each handle's ``get_result``) and ``article-8`` (the async forms:
``retrieve_queue_async``, ``enqueue_async``, ``enqueue_workflow_async``). An enqueue inside a workflow is
a child workflow to DBOS: a row at its function id naming the enqueued function and the child's id, and
a ``DBOS.getResult`` row for each result read. Changed code is replayed against those histories, and the
runs are then resumed by DBOS itself under the same code, on a copy of the system database, so each test
states what DBOS really does with that code on that run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dbos_queue_desk_kit import HERE, Desk, Recording, line_of

RUNS = {"article-7": "review_article", "article-8": "review_article_async"}
# How DBOS finishes each run under the code that recorded it, once the editor says "publish".
FINISHED = {
    "article-7": {"output": {"article": "7", "notes": ["intro ok", "body ok"], "published": "published 7"}},
    "article-8": {"output": {"article": "8", "notes": ["intro ok", "body ok"], "published": "published 8"}},
}
PUBLISHED = ["publish 7 ['intro ok', 'body ok']", "publish 8 ['intro ok', 'body ok']"]

SYNC_INTRO = '    intro = DBOS.enqueue_workflow(REVIEWS, review_section, article_id, "intro")\n'
ASYNC_INTRO = '    intro = await queue.enqueue_async(review_section_async, article_id, "intro")\n'
SYNC_VERDICT = '    verdict = DBOS.recv("verdict", timeout_seconds=VERDICT_WAIT_S)\n'

DESK = Desk("queue_desk", HERE / "record_queue_desk.py", "QUEUE_DESK_EFFECTS", RUNS)
APP = DESK.app
edited, project, replay, resume = DESK.edited, DESK.project, DESK.replay, DESK.resume


@pytest.fixture(scope="module")
def pending(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return DESK.record(tmp_path_factory, ["check 7 body", "check 7 intro", "check 8 body", "check 8 intro", "fetch 7", "fetch 8"])


def test_an_enqueue_is_recorded_as_a_child_workflow_and_each_result_read_as_get_result(pending: Recording) -> None:
    for workflow_id, section in (("article-7", "review_section"), ("article-8", "review_section_async")):
        document = json.loads((pending.histories / f"{workflow_id}.json").read_text())
        assert document["status"] == "running"
        assert [(event["function_id"], event["kind"], event["name"]) for event in document["events"]] == [
            (1, "step", "fetch_article" if workflow_id == "article-7" else "fetch_article_async"),
            (2, "child-workflow", section), (3, "child-workflow", section),
            (4, "step", "DBOS.getResult"), (5, "step", "DBOS.getResult"),
            (7, "timer", "DBOS.sleep"),
        ]


def test_unchanged_code_replays_both_runs_without_running_anything_and_dbos_finishes_them(
    pending: Recording, tmp_path: Path
) -> None:
    root = project(tmp_path, pending, APP)
    code, results = replay(root)
    assert code == 0, results
    assert {workflow_id: result["status"] for workflow_id, result in results.items()} == {"article-7": "passed", "article-8": "passed"}
    outcome, effects = resume(root, pending)
    assert outcome == FINISHED
    assert effects == PUBLISHED  # no review ran again: DBOS returned the recorded children


@pytest.mark.parametrize(
    ("workflow_id", "changes", "line", "issued", "recorded"),
    [
        pytest.param(
            "article-7",
            ((SYNC_INTRO, SYNC_INTRO.replace("review_section", "proofread_section")),),
            "intro = DBOS.enqueue_workflow(", "proofread_section", "review_section",
            id="enqueued-function-renamed",
        ),
        pytest.param(
            "article-8",
            (
                ("@DBOS.workflow()\nasync def review_article_async(",
                 "@DBOS.workflow()\nasync def proofread_section_async(article_id: str, section: str) -> str:\n"
                 "    return check_section(article_id, section)\n\n\n@DBOS.workflow()\nasync def review_article_async("),
                (ASYNC_INTRO, ASYNC_INTRO.replace("review_section_async", "proofread_section_async")),
            ),
            "intro = await queue.enqueue_async(", "proofread_section_async", "review_section_async",
            id="async-enqueued-function-renamed",
        ),
    ],
)
def test_a_renamed_enqueued_function_is_a_command_mismatch_at_the_enqueue_and_dbos_refuses_it(
    pending: Recording, tmp_path: Path, workflow_id: str, changes: tuple[tuple[str, str], ...],
    line: str, issued: str, recorded: str,
) -> None:
    app = edited(*changes)
    root = project(tmp_path, pending, app)
    code, results = replay(root)
    assert code == 1, results
    result = results[workflow_id]
    assert result["status"] == "diverged", result
    divergence = result["divergence"]
    assert (divergence["kind"], divergence["position"]) == ("command-mismatch", 2)
    assert divergence["source"]["line"] == line_of(app, line)
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == (issued, recorded)
    assert divergence["recorded"]["kind"] == "child-workflow"

    outcome, effects = resume(root, pending)
    assert outcome[workflow_id]["error"] == "DBOSUnexpectedStepError", outcome
    assert f"function {recorded} was recorded when {issued} was expected" in outcome[workflow_id]["message"]
    assert not any("proofread" in effect for effect in effects)  # DBOS refused before enqueueing it


def test_an_enqueue_of_the_same_function_inserted_before_is_caught_where_the_result_read_was_recorded(
    pending: Recording, tmp_path: Path
) -> None:
    """DBOS compares only the enqueued function's name: a new enqueue of the same function takes the
    recorded child of the next one, and the run breaks at the first row of another name."""
    new = '    title = DBOS.enqueue_workflow(REVIEWS, review_section, article_id, "title")\n'
    app = edited((SYNC_INTRO, new + SYNC_INTRO))
    root = project(tmp_path, pending, app)
    code, results = replay(root)
    assert (code, results["article-7"]["status"], results["article-8"]["status"]) == (1, "diverged", "passed"), results
    divergence = results["article-7"]["divergence"]
    assert (divergence["kind"], divergence["position"]) == ("command-mismatch", 4)
    assert divergence["source"]["line"] == line_of(app, "body = DBOS.retrieve_queue(REVIEWS).enqueue(")
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == ("review_section", "DBOS.getResult")

    outcome, effects = resume(root, pending)
    assert outcome["article-7"]["error"] == "DBOSUnexpectedStepError", outcome
    assert "function DBOS.getResult was recorded when review_section was expected" in outcome["article-7"]["message"]
    assert outcome["article-8"] == FINISHED["article-8"]


def test_an_enqueue_inserted_after_the_recv_passes_and_dbos_runs_it_when_the_run_goes_on(
    pending: Recording, tmp_path: Path
) -> None:
    appendix = '    DBOS.enqueue_workflow(REVIEWS, review_section, article_id, "appendix").get_result()\n'
    root = project(tmp_path, pending, edited((SYNC_VERDICT, SYNC_VERDICT + appendix)))
    code, results = replay(root)
    assert code == 0, results
    outcome, effects = resume(root, pending)
    assert outcome == FINISHED
    assert effects == sorted(["check 7 appendix", *PUBLISHED])


def test_an_enqueue_on_another_queue_replays_green_as_dbos_recovery_returns_the_recorded_child(
    pending: Recording, tmp_path: Path
) -> None:
    """The queue is not part of DBOS's check: the recorded child is returned, and nothing runs again."""
    root = project(tmp_path, pending, edited((SYNC_INTRO, SYNC_INTRO.replace("REVIEWS", "URGENT"))))
    code, results = replay(root)
    assert code == 0, results
    outcome, effects = resume(root, pending)
    assert outcome == FINISHED
    assert effects == PUBLISHED
