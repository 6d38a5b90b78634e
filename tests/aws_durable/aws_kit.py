"""Recording AWS durable executions for the tests with the testing SDK's local runner (the real SDK, offline),
saved as the Lambda API's JSON: each execution's ``GetDurableExecution`` response (built with the testing
SDK's own model of it from what the runner exposes) followed by its ``GetDurableExecutionHistory`` page with
execution data, which is what ``replaytest import aws-durable`` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
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
    park: bool = False, function_name: str = FUNCTION_NAME, targets: Mapping[str, Callable[..., Any]] | None = None,
) -> list[dict[str, Any]]:
    """Run ``handler`` on ``payload`` with the local runner to its end (answering its callback with
    ``answer`` when given), or with ``park`` until it waits on a callback; the saved documents. ``targets``
    are the durable functions a chained invoke may call, by name."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    with DurableFunctionTestRunner(handler=handler) as runner:
        for target, target_handler in (targets or {}).items():
            runner.register_durable_function(target, target_handler)
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
    return documents(arn, name, payload, api_json(history), status, result, error, function_name)


def documents(
    arn: str, name: str, payload: Mapping[str, Any], page: dict[str, Any], status: str, result: Any, error: Any,
    function_name: str,
) -> list[dict[str, Any]]:
    """The execution's ``GetDurableExecution`` response (the testing SDK's own model of it) and history page."""
    from aws_durable_execution_sdk_python_testing.model import GetDurableExecutionResponse

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
    # The saved page holds timestamps as the CLI's ISO text; the converter computes with them as datetimes.
    page = {**page, "Events": [{**event, "EventTimestamp": datetime.fromisoformat(event["EventTimestamp"])}
                               if isinstance(event.get("EventTimestamp"), str) else event for event in page["Events"]]}
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


class _HeldHandler:
    """The handler the runner invokes: it calls ``target`` and holds the end of the first invocation (the
    execution has checkpointed what it waits on) until ``release`` is set."""

    def __init__(self, target: Callable[..., Any]) -> None:
        self.target = target
        self.invocations = 0
        self.parked = threading.Event()
        self.release = threading.Event()

    def __call__(self, event: Any, context: Any) -> Any:
        self.invocations += 1
        output = self.target(event, context)
        if self.invocations == 1:
            self.parked.set()
            self.release.wait(600)
        return output


@dataclass
class Parked:
    """An execution parked by its first invocation on its own local runner, still parked: its saved documents,
    and ``resume`` to let the runner resume that very execution on other code."""

    arn: str
    documents: list[dict[str, Any]]
    runner: Any
    held: _HeldHandler

    def resume(self, handler: Callable[..., Any]) -> tuple[str, list[str], Any]:
        """Resume the execution on ``handler`` as Lambda does (a wait fires, a retry comes due): its final
        status, the names of the operations it started past the parked history (a step retried among
        them), and its error."""
        parked_events = len(self.documents[1]["Events"])
        self.held.target = handler
        self.held.release.set()
        outcome = self.runner.wait_for_result(execution_arn=self.arn, timeout=120)
        events = api_json(self.runner.get_execution_history(self.arn, include_execution_data=True))["Events"]
        started = [event.get("Name") for event in events[parked_events:]
                   if str(event["EventType"]).endswith("Started") and event["EventType"] != "ContextStarted"]
        status = outcome.execution_status.value if outcome.execution_status is not None else outcome.status.value
        return status, started, outcome.error


@contextmanager
def parked(
    handler: Callable[..., Any], payload: Mapping[str, Any], name: str, function_name: str, until: str,
) -> Iterator[Parked]:
    """Run ``handler`` on ``payload`` until its first invocation ends and its history holds an event of type
    ``until``; the execution stays parked on its runner while the block runs."""
    import time

    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    held = _HeldHandler(handler)
    with DurableFunctionTestRunner(handler=held, poll_interval=0.05) as runner:
        try:
            arn = runner.run_async(input=json.dumps(payload), execution_timeout=600, function_name=function_name,
                                   execution_name=name)
            assert held.parked.wait(60), f"{name} never parked"
            for _ in range(600):  # the runner writes the invocation's last events as it takes them in
                page = api_json(runner.get_execution_history(arn, include_execution_data=True))
                if any(event["EventType"] == until for event in page["Events"]):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError(f"{name}: no {until} event in {page['Events']}")
            yield Parked(arn, documents(arn, name, payload, page, "RUNNING", None, None, function_name), runner, held)
        finally:
            held.release.set()  # never leave an invocation held when the test ends


FULFILMENT_SOURCE = HERE / "orders" / "fulfilment_app.py"


def import_documents(folder: Path, executions: Mapping[str, list[dict[str, Any]]]) -> Path:
    """``replaytest import aws-durable`` of the executions' saved documents (one file each) into
    ``folder/histories``."""
    files = []
    for name, saved in executions.items():
        files.append(folder / f"{name}.json")
        files[-1].write_text(json.dumps(saved), encoding="utf-8")
    done = run_cli("import", "aws-durable", *map(str, files), "--out", str(folder / "histories"), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "histories"


def edited_fulfilment(folder: Path, replacements: list[tuple[str, str]] = ()) -> Path:  # type: ignore[assignment]
    """The fulfilment app with each ``old`` (which must occur once) replaced, written as ``folder/edited_fulfilment.py``."""
    source = FULFILMENT_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "edited_fulfilment.py").write_text(source, encoding="utf-8")
    return folder / "edited_fulfilment.py"


def replay_fulfilment(histories: Path, folder: Path, *options: str, marker: Path | None = None) -> dict[str, dict[str, Any]]:
    """``replaytest replay --format json`` of ``histories`` against ``folder/edited_fulfilment.py``: each
    result by its function name (the history's workflow type)."""
    env = {"ORDERS_MARKER": str(marker)} if marker is not None else {}
    done = run_cli("replay", "--format", "json", *options, str(histories), "-w", "edited_fulfilment:FUNCTIONS", cwd=folder, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return {result["workflow"]["type"]: result for result in json.loads(done.stdout)["results"]}


def module_of(path: Path) -> Any:
    """The module at ``path``, loaded afresh (an edited app's handlers, for the SDK's own verdict)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{path.stem}_{abs(hash(path.read_text(encoding='utf-8')))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
