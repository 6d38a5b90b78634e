"""A step retried after a failed attempt. A finished execution replays with the step's last checkpoint (its
result; the retry policy is not part of the SDK's identity check, so a changed policy passes, as the SDK
judges). An execution parked between two attempts has the step's checkpoint ``PENDING`` (the failed attempt's
``StepFailed`` event carries the next attempt's delay), not ``FAILED``: replay stops there as the run's resume
point (the SDK would run the body again: no rehearsal), and the local runner resuming the very execution does
run it again and completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_kit import edited_fulfilment, import_documents, module_of, parked, record, replay_fulfilment, sdk_verdict

POLICY_CHANGED = [("RetryStrategyConfig(max_attempts=3, initial_delay=Duration.from_seconds(1))",
                   "RetryStrategyConfig(max_attempts=5, initial_delay=Duration.from_seconds(30))")]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    from orders.fulfilment_app import retrying_handler

    documents = record(retrying_handler, {"id": "o-retried"}, "retrying-1", function_name="retrying")
    return import_documents(tmp_path_factory.mktemp("aws-retry"), {"retrying-1": documents}), documents


def test_a_step_retried_to_success_replays_green_and_runs_no_attempt(finished: tuple[Path, list[dict]], tmp_path: Path) -> None:
    histories, documents = finished
    attempts = [event["EventType"] for event in documents[1]["Events"] if event.get("Name") == "book_courier"]
    assert attempts == ["StepStarted", "StepFailed", "StepStarted", "StepSucceeded"]  # the first attempt failed
    (history,) = [json.loads(path.read_text(encoding="utf-8")) for path in histories.glob("*.json")]
    assert history["events"][0]["aws"]["status"] == "SUCCEEDED"
    app = edited_fulfilment(tmp_path)
    marker = tmp_path / "marker.log"
    assert replay_fulfilment(histories, tmp_path, marker=marker)["retrying"]["status"] == "passed"
    assert not marker.exists(), marker.read_text()
    assert sdk_verdict(module_of(app).retrying_handler, documents)["Status"] == "SUCCEEDED"


def test_a_changed_retry_policy_passes_as_the_sdk_judges(finished: tuple[Path, list[dict]], tmp_path: Path) -> None:
    histories, documents = finished
    app = edited_fulfilment(tmp_path, POLICY_CHANGED)
    assert replay_fulfilment(histories, tmp_path)["retrying"]["status"] == "passed"
    assert sdk_verdict(module_of(app).retrying_handler, documents)["Status"] == "SUCCEEDED"


def test_an_execution_parked_between_attempts_resumes_where_the_sdk_retries_the_step(tmp_path: Path) -> None:
    from orders import fulfilment_app

    marker = tmp_path / "marker.log"
    with parked(fulfilment_app.retrying_handler, {"id": "o-between"}, "retrying-2", "retrying", until="StepFailed") as execution:
        histories = import_documents(tmp_path, {"retrying-2": execution.documents})
        (history,) = [json.loads(path.read_text(encoding="utf-8")) for path in histories.glob("*.json")]
        step = history["events"][0]
        assert (step["name"], step["aws"]["status"], step["error"]["message"]) == ("book_courier", "PENDING", "the courier is busy")
        assert history["status"] == "running"
        edited_fulfilment(tmp_path)
        result = replay_fulfilment(histories, tmp_path, "--rehearse", marker=marker)["retrying"]
        assert result["status"] == "passed", result  # not the step's failure: the SDK waits to retry it
        assert "resume not rehearsed: step 'book_courier' waits to be retried" in " ".join(result["notes"])
        assert not marker.exists(), marker.read_text()
        # The engine is the judge: resumed, the runner runs the step's body again, and the execution completes.
        status, started, error = execution.resume(fulfilment_app.retrying_handler)
    assert (status, error) == ("SUCCEEDED", None)
    assert started[:1] == ["book_courier"]


def test_a_step_that_failed_every_attempt_is_failed_and_its_error_fed_back(tmp_path: Path) -> None:
    from orders.fulfilment_app import giving_up_handler

    documents = record(giving_up_handler, {"id": "o-closed"}, "giving-up-1", function_name="giving-up")
    histories = import_documents(tmp_path, {"giving-up-1": documents})
    (history,) = [json.loads(path.read_text(encoding="utf-8")) for path in histories.glob("*.json")]
    step = history["events"][0]
    assert (step["aws"]["status"], step["error"]["message"]) == ("FAILED", "the depot is closed")  # not PENDING: no attempt left
    app = edited_fulfilment(tmp_path)
    marker = tmp_path / "marker.log"
    result = replay_fulfilment(histories, tmp_path, marker=marker)["giving-up"]
    assert result["status"] == "passed", result  # the handler caught the step's error and returned as recorded
    assert not marker.exists(), marker.read_text()
    verdict = sdk_verdict(module_of(app).giving_up_handler, documents)
    assert verdict["Status"] == "SUCCEEDED" and json.loads(verdict["Result"])["depot"] == "closed"
