"""Recording AWS durable executions for the tests with the testing SDK's local runner (the real SDK, offline),
saved as the Lambda API's JSON: each execution's ``GetDurableExecution`` response (built with the testing
SDK's own model of it from what the runner exposes) followed by its ``GetDurableExecutionHistory`` page with
execution data, which is what ``replaytest import aws-durable`` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
APP_SOURCE = HERE / "orders" / "orders_app.py"
FUNCTION_NAME = "orders"
REGION = "us-west-2"
ACCOUNT = "123456789012"


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()  # the CLI prints timestamps as ISO-8601 text
    raise TypeError(f"{type(value).__name__} is not JSON")


def api_json(document: Any) -> Any:
    """A testing SDK response as the JSON the AWS CLI prints."""
    return json.loads(json.dumps(document.to_dict(), default=_json_default))


def record(
    handler: Callable[..., Any], payload: Mapping[str, Any], name: str, *, answer: bytes | None = None,
    park: bool = False, function_name: str = FUNCTION_NAME,
) -> list[dict[str, Any]]:
    """Run ``handler`` on ``payload`` with the local runner to its end (answering its callback with
    ``answer`` when given), or with ``park`` until it waits on a callback; the saved documents."""
    from aws_durable_execution_sdk_python_testing.model import GetDurableExecutionResponse
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    with DurableFunctionTestRunner(handler=handler) as runner:
        arn = runner.run_async(input=json.dumps(payload), execution_timeout=120, function_name=function_name, execution_name=name)
        status, result, error = "RUNNING", None, None
        if park or answer is not None:
            callback_id = runner.wait_for_callback(arn, timeout=60)
            if answer is not None:
                runner.send_callback_success(callback_id, answer)
        if not park:
            outcome = runner.wait_for_result(execution_arn=arn, timeout=120)
            status = outcome.execution_status.value if outcome.execution_status is not None else outcome.status.value
            result, error = outcome.result, outcome.error
        history = runner.get_execution_history(arn, include_execution_data=True)
    page = api_json(history)
    started = next(event for event in page["Events"] if event["EventType"] == "ExecutionStarted")
    execution = GetDurableExecutionResponse(
        durable_execution_arn=arn, durable_execution_name=name,
        function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}:$LATEST", status=status,
        start_timestamp=started["EventTimestamp"], input_payload=json.dumps(payload), result=result, error=error,
        version="$LATEST",
    )
    return [api_json(execution), page]


def run_cli(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    environment.pop("ORDERS_MARKER", None)
    environment.update(env or {})
    environment["PYTHONPATH"] = os.pathsep.join([str(cwd), environment.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


def line_of(path: Path, needle: str) -> int:
    lines = [n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in text]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


@dataclass(frozen=True)
class Recording:
    """The saved API documents (one file per execution) and the marker log the recording's steps wrote."""

    files: dict[str, Path]
    marker: Path


RUNS = {
    "order-small": ({"id": "o-small", "items": ["kiwi"]}, {}),
    "order-big": ({"id": "o-big", "items": ["apple", "banana", "kiwi"]}, {"answer": b'"yes"'}),
    "order-waiting": ({"id": "o-wait", "items": ["apple", "banana", "kiwi"]}, {"park": True}),
}


def record_orders(folder: Path) -> Recording:
    """The three order executions recorded with the orders app, one file of API documents each."""
    from orders.orders_app import handler

    marker = folder / "recording-marker.log"
    saved = os.environ.get("ORDERS_MARKER")
    os.environ["ORDERS_MARKER"] = str(marker)
    try:
        files = {}
        for name, (payload, how) in RUNS.items():
            files[name] = folder / f"{name}.json"
            files[name].write_text(json.dumps(record(handler, payload, name, **how), indent=1), encoding="utf-8")
    finally:
        if saved is None:
            os.environ.pop("ORDERS_MARKER", None)
        else:
            os.environ["ORDERS_MARKER"] = saved
    return Recording(files, marker)


class _RecordingServiceClient:
    """A service client that accepts every checkpoint and has no further pages (for ``sdk_verdict``)."""

    def checkpoint(self, durable_execution_arn: str, checkpoint_token: str, updates: list[Any], client_token: str | None) -> Any:
        from aws_durable_execution_sdk_python.lambda_service import CheckpointOutput, CheckpointUpdatedExecutionState

        return CheckpointOutput(checkpoint_token=checkpoint_token, new_execution_state=CheckpointUpdatedExecutionState())

    def get_execution_state(self, *args: Any, **kwargs: Any) -> Any:
        from aws_durable_execution_sdk_python.lambda_service import StateOutput

        return StateOutput()


def sdk_verdict(handler: Callable[..., Any], documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The SDK's own judgement of ``handler`` on a recorded execution, without replaytest: the saved history
    page turned into checkpoint operations by the testing SDK's own converter and handed to the handler as
    Lambda re-invokes it. The invocation output (``Status``, ``Error``)."""
    from types import SimpleNamespace

    from aws_durable_execution_sdk_python.execution import DurableExecutionInvocationInputWithClient, InitialExecutionState
    from aws_durable_execution_sdk_python_testing.model import GetDurableExecutionHistoryResponse, events_to_operations

    execution, page = documents
    operations = events_to_operations(GetDurableExecutionHistoryResponse.from_dict(page).events)
    event = DurableExecutionInvocationInputWithClient(
        durable_execution_arn=execution["DurableExecutionArn"], checkpoint_token="verdict",
        initial_execution_state=InitialExecutionState(operations=operations, next_marker=""),
        service_client=_RecordingServiceClient(),
    )
    context = SimpleNamespace(
        aws_request_id="verdict", function_name=FUNCTION_NAME, invoked_function_arn="", function_version="$LATEST",
        tenant_id=None, log_group_name=None, log_stream_name=None, memory_limit_in_mb=None, client_context=None,
        identity=None, get_remaining_time_in_millis=lambda: 900_000,
    )
    return dict(handler(event, context))
