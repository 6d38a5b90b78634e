"""The AWS durable functions scenario for the deploy-impact tests: the orders handler (the AWS suite's
``orders_app.py``, written into the project) run for real on the testing SDK's local runner
(``DurableFunctionTestRunner``, the real SDK, offline): two executions that finished (a small order through
its durable wait, a big one through its approval callback) and two parked — ``order-cool`` on the small
order's wait, ``order-approval`` on the big order's callback — saved as the Lambda API's JSON and imported
with ``replaytest import aws-durable``. (``scenario`` takes other code and parked executions too: the changed
wait's test parks one execution on a callback before the wait and one, its callback answered, on the wait.)

A parked execution stays parked in this process while ``replaytest impact`` judges it: the runner invokes
a ``SwitchableHandler``, which holds the first invocation's end (the execution has checkpointed its wait or
callback) until the test resumes it with other code. Then the runner itself resumes the very execution
impact judged — the wait fires, or the callback gets the answer the finished big order received — on the
changed handler, as Lambda resumes an execution on the code it is invoked with. The switch hands the SDK a
service client that records every checkpoint update the handler sends (what the SDK tells the service: a
wait's start with its seconds), so a test can see what the SDK asked of the service, not only the history."""

from __future__ import annotations

import dataclasses
import json
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from impact_kit import commit_everything, run_replaytest

HERE = Path(__file__).resolve().parent
V1 = (HERE.parent / "aws_durable" / "orders" / "orders_app.py").read_text(encoding="utf-8")
MODULE = "orders_app"
FUNCTION_NAME = "orders"
ANSWER = b'"yes"'  # what the approver answers the big order's callback
SMALL = {"id": "o-cool", "items": ["kiwi"]}  # total 40: the durable wait ``cool_off``
BIG = {"id": "o-approval", "items": ["apple", "banana", "kiwi"]}  # total 150: the callback ``approval``
PARKED = {"order-cool": SMALL, "order-approval": BIG}
FINISHED = {"order-small": SMALL, "order-big": BIG}
PYPROJECT = f"""[project]
name = "orders"
version = "1.0"

[tool.replaytest.replay]
paths = ["histories"]
workflows = ["{MODULE}:FUNCTIONS"]
"""


def handler_of(source: str, label: str) -> Callable[..., Any]:
    """The ``@durable_execution`` handler of an orders module ``source`` (loaded as a fresh module)."""
    module = types.ModuleType(f"impact_aws_orders_{label}")
    exec(compile(source, f"<orders {label}>", "exec"), module.__dict__)  # noqa: S102 - the test's own code
    return module.__dict__["handler"]


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _api_json(document: Any) -> Any:
    return json.loads(json.dumps(document.to_dict(), default=_json_default))


@dataclass(frozen=True)
class SentUpdate:
    """One checkpoint update the SDK sent the service: in which invocation, for which operation."""

    invocation: int
    operation_type: str  # WAIT, STEP, CALLBACK, CONTEXT, EXECUTION
    action: str  # START, SUCCEED, FAIL, ...
    name: str | None
    wait_seconds: int | None  # a WAIT start's WaitOptions.WaitSeconds


class _RecordingClient:
    """The runner's in-memory service client, every checkpoint update recorded on its way to it."""

    def __init__(self, client: Any, invocation: int, sent: list[SentUpdate]) -> None:
        self._client, self._invocation, self._sent = client, invocation, sent

    def checkpoint(self, durable_execution_arn: str, checkpoint_token: str, updates: list[Any], client_token: str | None) -> Any:
        for update in updates:
            options = getattr(update, "wait_options", None)
            self._sent.append(SentUpdate(self._invocation, update.operation_type.value, update.action.value, update.name,
                                         getattr(options, "wait_seconds", None)))
        return self._client.checkpoint(durable_execution_arn=durable_execution_arn, checkpoint_token=checkpoint_token,
                                       updates=updates, client_token=client_token)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class SwitchableHandler:
    """The handler the runner invokes: it calls ``target``, and holds the end of invocation ``hold_at`` (the
    execution has checkpointed what it waits on) until ``release`` is set. ``sent``: every checkpoint update of
    every invocation, as the SDK sent it to the runner's service client."""

    def __init__(self, target: Callable[..., Any], hold_at: int = 1) -> None:
        self.target = target
        self.hold_at = hold_at
        self.invocations = 0
        self.parked = threading.Event()
        self.release = threading.Event()
        self.sent: list[SentUpdate] = []

    def __call__(self, event: Any, context: Any) -> Any:
        self.invocations += 1
        invocation = self.invocations
        if hasattr(event, "service_client"):  # the SDK's own way to inject a service client (a frozen dataclass)
            event = dataclasses.replace(event, service_client=_RecordingClient(event.service_client, invocation, self.sent))
        output = self.target(event, context)
        if invocation == self.hold_at:
            self.parked.set()
            self.release.wait(600)
        return output


@dataclass
class Execution:
    """One execution on its own local runner: its ARN, the saved API documents, and for a parked one the
    switch that resumes it."""

    name: str
    arn: str
    documents: list[dict[str, Any]]
    runner: Any
    switch: SwitchableHandler
    events_parked: int = 0
    ids_parked: frozenset[str] = field(default_factory=frozenset)
    events: list[dict[str, Any]] = field(default_factory=list)  # the history's events once it resumed

    def resume(self, source: str) -> tuple[str, str | None]:
        """Resume the parked execution on the handler of ``source`` (its wait fires, its callback gets
        ``ANSWER``); what the SDK did: ``("breaks", None)`` when the execution failed with the SDK's
        ``NonDeterministicExecutionError``, else ``("resumed", the first operation it started past the
        recorded ones, or None)``."""
        self.switch.target = handler_of(source, "changed")
        self.switch.release.set()
        if _pending_callbacks(self.documents[1]["Events"]):
            self.runner.send_callback_success(self.runner.wait_for_callback(self.arn, timeout=60), ANSWER)
        outcome = self.runner.wait_for_result(execution_arn=self.arn, timeout=120)
        error = outcome.error
        if error is not None and str(error.type or "").endswith("NonDeterministicExecutionError"):
            return "breaks", None
        events = _api_json(self.runner.get_execution_history(self.arn, include_execution_data=True))["Events"]
        self.events = events
        started = [event.get("Name") for event in events[self.events_parked:]
                   if event.get("Id") not in self.ids_parked and str(event["EventType"]).endswith("Started")]
        return "resumed", started[0] if started else None


def _pending_callbacks(events: list[dict[str, Any]]) -> set[str]:
    """The ids of the callbacks a history started and never ended."""
    started = {event["Id"] for event in events if event["EventType"] == "CallbackStarted"}
    return started - {event["Id"] for event in events if str(event["EventType"]).startswith("Callback") and event["EventType"] != "CallbackStarted"}


def _start(stack: ExitStack, name: str, payload: Mapping[str, Any], source: str, answer_first: bool = False) -> Execution:
    """Run ``payload`` on the handler of ``source`` until it parks on its wait or callback (with
    ``answer_first``: its first callback answered ``ANSWER``, until it parks on what comes next); the runner
    stays open on ``stack``."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    switch = SwitchableHandler(handler_of(source, "v1"), hold_at=2 if answer_first else 1)
    runner = stack.enter_context(DurableFunctionTestRunner(handler=switch, poll_interval=0.05))
    stack.callback(switch.release.set)  # never leave an invocation held when the test ends
    arn = runner.run_async(input=json.dumps(payload), execution_timeout=600, function_name=FUNCTION_NAME,
                           execution_name=name)
    if answer_first:
        runner.send_callback_success(runner.wait_for_callback(arn, timeout=60), ANSWER)
    assert switch.parked.wait(60), f"{name} never parked"
    page = _api_json(runner.get_execution_history(arn, include_execution_data=True))
    ids = frozenset(event["Id"] for event in page["Events"] if event.get("Id"))
    return Execution(name, arn, _documents(arn, name, payload, page), runner, switch, len(page["Events"]), ids)


def _documents(arn: str, name: str, payload: Mapping[str, Any], page: dict[str, Any], status: str = "RUNNING",
               result: Any = None, error: Any = None) -> list[dict[str, Any]]:
    """The execution's ``GetDurableExecution`` response (the testing SDK's model of it) and history page."""
    from aws_durable_execution_sdk_python_testing.model import GetDurableExecutionResponse

    started = next(event for event in page["Events"] if event["EventType"] == "ExecutionStarted")
    execution = GetDurableExecutionResponse(
        durable_execution_arn=arn, durable_execution_name=name,
        function_arn=f"arn:aws:lambda:us-west-2:123456789012:function:{FUNCTION_NAME}:$LATEST", status=status,
        start_timestamp=started["EventTimestamp"], input_payload=json.dumps(payload), result=result, error=error,
        version="$LATEST",
    )
    return [_api_json(execution), page]


def record_finished() -> dict[str, list[dict[str, Any]]]:
    """The API documents of the two executions that ran to their end on v1 (the big one answered ``ANSWER``)."""
    with ExitStack() as stack:
        documents = {}
        for name, payload in FINISHED.items():
            execution = _start(stack, name, payload, V1)
            execution.switch.release.set()
            if payload is BIG:
                execution.runner.send_callback_success(execution.runner.wait_for_callback(execution.arn, timeout=60), ANSWER)
            outcome = execution.runner.wait_for_result(execution_arn=execution.arn, timeout=120)
            page = _api_json(execution.runner.get_execution_history(execution.arn, include_execution_data=True))
            status = outcome.execution_status.value if outcome.execution_status is not None else outcome.status.value
            documents[name] = _documents(execution.arn, name, payload, page, status, outcome.result, outcome.error)
        return documents


@dataclass
class AwsScenario:
    """The project (v1 committed, the four executions imported) and the two parked executions, still parked."""

    root: Path
    parked: dict[str, Execution]
    run_ids: dict[str, str]  # execution name -> the run id impact names it by (its ARN)

    def write(self, source: str) -> None:
        (self.root / f"{MODULE}.py").write_text(source, encoding="utf-8")


@contextmanager
def scenario(
    root: Path, finished: Mapping[str, list[dict[str, Any]]], source: str = V1,
    parked_payloads: Mapping[str, Mapping[str, Any]] = PARKED, answered_first: frozenset[str] = frozenset(),
) -> Iterator[AwsScenario]:
    """The orders project in ``root`` (``source`` committed as its code) with ``finished`` and fresh executions
    of ``parked_payloads`` parked on ``source`` (those in ``answered_first`` past their first callback),
    imported."""
    root.mkdir(parents=True)
    (root / f"{MODULE}.py").write_text(source, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    with ExitStack() as stack:
        parked = {name: _start(stack, name, payload, source, name in answered_first)
                  for name, payload in parked_payloads.items()}
        api = root / "api"
        api.mkdir()
        every = {**finished, **{name: execution.documents for name, execution in parked.items()}}
        for name, documents in every.items():
            (api / f"{name}.json").write_text(json.dumps(documents), encoding="utf-8")
        imported = run_replaytest(root, "import", "aws-durable", *sorted(str(path) for path in api.glob("*.json")),
                                  "--out", "histories")
        assert imported.returncode == 0, imported.stdout + imported.stderr
        commit_everything(root, "Orders v1")
        run_ids = {name: documents[0]["DurableExecutionArn"] for name, documents in every.items()}
        yield AwsScenario(root, parked, run_ids)
