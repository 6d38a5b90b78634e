"""``replaytest import aws-durable --arn``: the same executions read straight from the Lambda API with boto3.
The API is botocore's ``Stubber`` answering with the recorded executions' documents, which botocore checks
against its own service model of ``GetDurableExecution`` and ``GetDurableExecutionHistory`` (the shapes the
CLI prints, timestamps as the datetimes boto3 returns); the histories must be the ones the files give."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from replaytest.plugins.aws_durable import importer

boto3 = pytest.importorskip("boto3")
stub = pytest.importorskip("botocore.stub")

_TIMESTAMPS = {"EventTimestamp", "StartTimestamp", "EndTimestamp", "ScheduledEndTimestamp"}


def _as_response(value: Any) -> Any:
    """A saved document as boto3 returns it (timestamps as datetimes). The service model requires a step's
    ``RetryDetails``, which the testing SDK's history leaves out: the attempt it took is added."""
    if isinstance(value, dict):
        answer = {key: datetime.fromisoformat(item) if key in _TIMESTAMPS and isinstance(item, str) else _as_response(item)
                  for key, item in value.items()}
        for key in ("StepSucceededDetails", "StepFailedDetails"):
            if isinstance(answer.get(key), dict):
                answer[key].setdefault("RetryDetails", {"CurrentAttempt": 1})
        return answer
    if isinstance(value, list):
        return [_as_response(item) for item in value]
    return value


def _client(recording, names: list[str], pages: int = 1) -> tuple[Any, Any]:  # type: ignore[no-untyped-def]
    client = boto3.client("lambda", region_name="us-west-2", aws_access_key_id="test", aws_secret_access_key="test")
    stubber = stub.Stubber(client)
    for name in names:
        execution, page = json.loads(recording.files[name].read_text(encoding="utf-8"))
        arn = execution["DurableExecutionArn"]
        stubber.add_response("get_durable_execution", _as_response(execution), {"DurableExecutionArn": arn, "IncludeExecutionData": True})
        events = page["Events"]
        size = -(-len(events) // pages)
        for index in range(pages):
            answer: dict[str, Any] = {"Events": _as_response(events[index * size:(index + 1) * size])}
            request: dict[str, Any] = {"DurableExecutionArn": arn, "IncludeExecutionData": True}
            if index:
                request["Marker"] = f"page-{index}"
            if index + 1 < pages:
                answer["NextMarker"] = f"page-{index + 1}"
            stubber.add_response("get_durable_execution_history", answer, request)
    stubber.activate()
    return client, stubber


def _documents(folder: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in folder.glob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        found[document["workflow"]["id"]] = document
    return found


def test_the_api_gives_the_histories_the_saved_files_give_every_page_followed(
    recording, imported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    names = ["order-big", "order-waiting"]
    client, stubber = _client(recording, names, pages=3)
    monkeypatch.setattr(importer, "lambda_client", lambda region: client)
    arns = [json.loads(recording.files[name].read_text())[0]["DurableExecutionArn"] for name in names]
    out = tmp_path / "out"
    done = CliRunner().invoke(importer.import_command, [*(f"--arn={arn}" for arn in arns), "--out", str(out)])
    assert done.exit_code == 0, done.output
    stubber.assert_no_pending_responses()  # every page was read
    from_files = _documents(imported.histories)
    from_api = _documents(out)
    assert set(from_api) == set(arns)
    for arn in arns:
        assert from_api[arn] == from_files[arn]


def test_an_api_error_is_a_clear_error(recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    client = boto3.client("lambda", region_name="us-west-2", aws_access_key_id="test", aws_secret_access_key="test")
    stubber = stub.Stubber(client)
    stubber.add_client_error("get_durable_execution", "ResourceNotFoundException", "Durable execution not found")
    stubber.activate()
    monkeypatch.setattr(importer, "lambda_client", lambda region: client)
    done = CliRunner().invoke(importer.import_command, ["--arn", "arn:aws:lambda:us-west-2:1:function:f/durable-execution/x/y", "--out", str(tmp_path)])
    assert done.exit_code == 2
    assert "ResourceNotFoundException" in done.output and "Durable execution not found" in done.output


def test_files_and_arn_together_or_neither_is_exit_2(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    both = CliRunner().invoke(importer.import_command, [str(recording.files["order-big"]), "--arn", "x", "--out", str(tmp_path)])
    neither = CliRunner().invoke(importer.import_command, ["--out", str(tmp_path)])
    assert both.exit_code == neither.exit_code == 2
    assert "one of the two" in both.output and "one of the two" in neither.output
