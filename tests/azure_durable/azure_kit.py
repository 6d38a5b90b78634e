"""Shared helpers of the Azure Durable tests: an Azurite table service, a stand-in for the Functions host
that records runs with the real SDK, and the task hub rows those runs leave behind.

The Functions host (Azure Functions Core Tools) downloads its runtime when it is installed, which cannot
work offline, so ``record`` plays the host's part: it gives the real SDK the growing history of a run
(``DurableOrchestrationContext.from_json`` + ``Orchestrator.handle``, as the host does on every episode),
turns the actions the orchestrator emits into the events the Durable Task Framework writes
(``TaskScheduled``, ``TimerCreated``, ``SubOrchestrationInstanceCreated``), completes activities by calling
the real activity functions (outside any replay), fires timers, runs sub-orchestrations the same way and
delivers scripted external events. Entity operations (``call_entity``, ``signal_entity``) are sent as the
extension sends them (``EventSent`` named ``op`` to the entity's ``@name@key``, a request message with its
id) and run by calling the real entity functions with their kept state; a call's response comes back as the
``EventRaised`` named by the request id. ``table_rows`` writes those events in the documented
``AzureTableTrackingStore`` schema: History (PartitionKey = instance id, RowKey = 16 hex digits of the
sequence number, ``EventType`` by name, ``_Timestamp``, ``ExecutionId``, payloads as JSON text) plus the
``sentinel`` row, and Instances (``RuntimeStatus``, ``CreatedTime``, …)."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent))  # tests/npm_tools.py

from npm_tools import npm_tool  # noqa: E402

AZURITE_VERSION = "3.37.0"
ACCOUNT = "devstoreaccount1"
# Azurite's documented development account key (public, the same for every Azurite).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
TASK_HUB = "ApprovalsHub"
START = datetime(2026, 3, 1, 9, 0, 0, tzinfo=timezone.utc)
_EVENT_NUMBERS = {
    "ExecutionStarted": 0, "ExecutionCompleted": 1, "TaskScheduled": 4, "TaskCompleted": 5, "TaskFailed": 6,
    "SubOrchestrationInstanceCreated": 7, "SubOrchestrationInstanceCompleted": 8, "SubOrchestrationInstanceFailed": 9,
    "TimerCreated": 10, "TimerFired": 11, "OrchestratorStarted": 12, "OrchestratorCompleted": 13, "EventSent": 14, "EventRaised": 15,
    "ContinueAsNew": 16,
}


# -- Azurite ---------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Azurite:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"TableEndpoint=http://127.0.0.1:{self.port}/{ACCOUNT};"
        )

    def service(self) -> Any:
        from azure.data.tables import TableServiceClient

        return TableServiceClient.from_connection_string(self.connection_string)


@contextlib.contextmanager
def azurite(folder: Path, timeout_s: float = 60.0) -> Iterator[Azurite]:
    """Azurite's table service on 127.0.0.1 (a free port, data in ``folder``), stopped on exit."""
    binary = npm_tool("azurite", AZURITE_VERSION, "azurite-table")
    port = _free_port()
    log = open(folder / "azurite.log", "wb")
    process = subprocess.Popen(
        [str(binary), "--tableHost", "127.0.0.1", "--tablePort", str(port), "--location", str(folder),
         "--skipApiVersionCheck", "--disableProductStyleUrl", "--silent"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"Azurite exited with {process.returncode}: {(folder / 'azurite.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Azurite did not listen on 127.0.0.1:{port} within {timeout_s:.0f}s")
            time.sleep(0.1)
        yield Azurite(process, port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        log.close()


# -- recording runs the way the host does ------------------------------------------------------------


@dataclass
class RecordedRun:
    instance_id: str
    name: str
    input: Any
    events: list[dict[str, Any]]
    runtime_status: str
    output: Any = None
    created: datetime = START
    children: list[RecordedRun] = field(default_factory=list)

    @property
    def execution_id(self) -> str:
        return f"exec-{self.instance_id}"


_INDEXED: dict[int, tuple[Any, dict[str, Any], dict[str, Any]]] = {}


def _functions(app: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The app's orchestrators and activities by name, the entity functions' handles among the activities
    under ``@<lowercased name>`` (``get_functions`` answers once per app)."""
    if id(app) in _INDEXED and _INDEXED[id(app)][0] is app:
        return _INDEXED[id(app)][1], _INDEXED[id(app)][2]
    orchestrators, activities = {}, {}
    for function in app.get_functions():
        kinds = {binding.type for binding in function.get_bindings()}
        if "orchestrationTrigger" in kinds:
            orchestrators[function.get_function_name()] = function.get_user_function().orchestrator_function
        elif "activityTrigger" in kinds:
            activities[function.get_function_name()] = function.get_user_function()
        elif "entityTrigger" in kinds:
            activities["@" + function.get_function_name().lower()] = function.get_user_function()
    _INDEXED[id(app)] = (app, orchestrators, activities)
    return orchestrators, activities


# Entity state by scheduler id (``@account@acct-1``), kept across runs as the task hub keeps it.
ENTITY_STATES: dict[str, str | None] = {}


def _run_entity(activities: dict[str, Any], scheduler_id: str, operation: str, input_text: str | None) -> dict[str, Any]:
    """One operation of an entity, run for real by its handle as the extension runs a batch of one: the
    operation's result JSON (``result``, ``isError``); the entity's new state is kept."""
    _, name, key = scheduler_id.split("@", 2)
    handle = activities["@" + name]
    context = {"self": {"name": name, "key": key}, "state": ENTITY_STATES.get(scheduler_id),
               "exists": scheduler_id in ENTITY_STATES, "batch": [{"name": operation, "input": json.dumps(input_text)}]}  # the extension quotes the input once more
    answer = json.loads(handle(json.dumps(context)))
    if answer.get("entityExists"):
        ENTITY_STATES[scheduler_id] = answer.get("entityState")
    return answer["results"][0]


def _flat(actions: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in actions:
        if isinstance(item, list):
            out.extend(_flat(item))
        else:
            out.append(item)
    return out


def _handle(function: Any, body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    from azure.durable_functions import Orchestrator
    from azure.durable_functions.models import DurableOrchestrationContext

    context = DurableOrchestrationContext.from_json(json.dumps(body))
    try:
        return json.loads(Orchestrator(function).handle(context)), None
    except Exception as error:  # the orchestrator raised: the state JSON follows the SDK's label
        message = str(error)
        return json.loads(message.partition("$OutOfProcData$:")[2]), message.partition("\n\n$OutOfProcData$")[0]


def record(
    app: Any, name: str, instance_id: str, input_: Any, events: dict[str, Any] | None = None,
    created: datetime = START, max_episodes: int = 200,
) -> RecordedRun:
    """Run orchestration ``name`` of ``app`` to its end (or to an external event ``events`` does not
    script, where it stays Running), episode by episode, with the real SDK and the real activities."""
    orchestrators, activities = _functions(app)
    function = orchestrators[name]
    scripted = dict(events or {})
    clock = created
    history: list[dict[str, Any]] = []

    def add(event_type: str, event_id: int = -1, **fields: Any) -> None:
        history.append({"EventType": event_type, "EventId": event_id, "Timestamp": clock,
                        **{k: v for k, v in fields.items() if v is not None}})

    input_text = json.dumps(input_)
    add("OrchestratorStarted")
    add("ExecutionStarted", Name=name, Version="", Input=input_text)
    run = RecordedRun(instance_id, name, input_, history, "Running", created=created)
    emitted = 0
    sequence = 0
    pending: dict[int, tuple[str, dict[str, Any]]] = {}
    waits: list[str] = []
    for _ in range(max_episodes):
        episode_start = max(i for i, e in enumerate(history) if e["EventType"] == "OrchestratorStarted")
        body = {
            "history": [_sdk_event(event, index < episode_start) for index, event in enumerate(history)],
            "instanceId": instance_id, "isReplaying": False, "parentInstanceId": None, "input": input_text,
            "upperSchemaVersion": 0,
        }
        state, failure = _handle(function, body)
        actions = _flat(state.get("actions") or [])
        for action in actions[emitted:]:
            kind = action["actionType"]
            if kind in (0, 1):
                add("TaskScheduled", sequence, Name=action["functionName"], Input=action.get("input"))
                pending[sequence] = ("activity", action)
                sequence += 1
            elif kind in (2, 3):
                child_id = action.get("instanceId") or f"{instance_id}:{sequence}"
                add("SubOrchestrationInstanceCreated", sequence, Name=action["functionName"], InstanceId=child_id, Input=action.get("input"))
                pending[sequence] = ("child", {**action, "instanceId": child_id})
                sequence += 1
            elif kind == 5:
                add("TimerCreated", sequence, FireAt=action["fireAt"])
                pending[sequence] = ("timer", action)
                sequence += 1
            elif kind == 6:
                waits.append(action["externalEventName"])
            elif kind == 4:  # continue_as_new: this generation ends; the next one is not recorded here
                add("ContinueAsNew", Result=json.dumps(json.loads(action["input"]) if isinstance(action.get("input"), str) else action.get("input")))
                add("OrchestratorCompleted")
                run.runtime_status = "ContinuedAsNew"
                return run
            elif kind in (7, 9):  # call_entity / signal_entity: a request message sent to the entity
                request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{instance_id}/{sequence}"))
                request = {"id": request_id, "op": action["operation"], "signal": kind == 9, "input": action.get("input"),
                           "parent": instance_id}
                add("EventSent", sequence, Name="op", InstanceId=action["instanceId"], Input=json.dumps(request))
                if kind == 9:  # fire and forget: the entity runs it, nothing comes back
                    _run_entity(activities, action["instanceId"], action["operation"], action.get("input"))
                else:
                    pending[sequence] = ("entity", {**action, "requestId": request_id})
                sequence += 1
            elif kind == 8:  # call_http: the host schedules its built-in HTTP activity and makes the request
                add("TaskScheduled", sequence, Name="BuiltIn::HttpActivity", Input=json.dumps(action["httpRequest"]))
                pending[sequence] = ("http", action)
                sequence += 1
            else:
                raise AssertionError(f"the recorder does not handle action type {kind}")
        emitted = len(actions)
        if failure is not None:
            add("ExecutionCompleted", OrchestrationStatus="Failed", Result=json.dumps(failure))
            add("OrchestratorCompleted")
            run.runtime_status = "Failed"
            return run
        if state.get("isDone"):
            run.output = state.get("output")
            add("ExecutionCompleted", OrchestrationStatus="Completed", Result=json.dumps(run.output))
            add("OrchestratorCompleted")
            run.runtime_status = "Completed"
            return run
        add("OrchestratorCompleted")
        clock += timedelta(seconds=1)
        if pending:
            add("OrchestratorStarted")
            for event_id in sorted(pending):
                kind, action = pending.pop(event_id)
                if kind == "activity":
                    argument = json.loads(action["input"]) if action.get("input") is not None else None
                    try:
                        value = activities[action["functionName"]](argument)
                    except Exception as error:
                        add("TaskFailed", TaskScheduledId=event_id, Reason=str(error), Details=type(error).__name__)
                    else:
                        add("TaskCompleted", TaskScheduledId=event_id, Result=json.dumps(value))
                elif kind == "http":
                    add("TaskCompleted", TaskScheduledId=event_id, Result=json.dumps(_http_response(action["httpRequest"])))
                elif kind == "entity":
                    outcome = _run_entity(activities, action["instanceId"], action["operation"], action.get("input"))
                    response = {"result": outcome["result"], **({"exceptionType": "Exception"} if outcome["isError"] else {})}
                    add("EventRaised", Name=action["requestId"], Input=json.dumps(response))
                elif kind == "timer":
                    fire_at = datetime.fromisoformat(action["fireAt"].replace("Z", "+00:00"))
                    clock = max(clock, fire_at)
                    add("TimerFired", TimerId=event_id, FireAt=action["fireAt"])
                else:
                    child_input = json.loads(action["input"]) if action.get("input") is not None else None
                    child = record(app, action["functionName"], action["instanceId"], child_input, created=clock)
                    run.children.append(child)
                    add("SubOrchestrationInstanceCompleted", TaskScheduledId=event_id, Result=json.dumps(child.output))
            continue
        if waits and waits[-1] in scripted:
            add("OrchestratorStarted")
            add("EventRaised", Name=waits[-1], Input=json.dumps(scripted.pop(waits[-1])))
            continue
        return run  # waiting for an event nobody raises: the run stays Running
    raise AssertionError(f"{instance_id}: more than {max_episodes} episodes")


def sdk_replay(app: Any, run: RecordedRun) -> tuple[dict[str, Any], str | None]:
    """What the SDK itself does with ``app``'s orchestrator on ``run``'s recorded history, handed over as the
    host hands it on the next episode: the state it reports (done or not, output, actions) and the failure
    message if the orchestrator raised."""
    orchestrators, _ = _functions(app)
    body = {"history": [_sdk_event(event, True) for event in run.events], "instanceId": run.instance_id,
            "isReplaying": True, "parentInstanceId": None, "input": json.dumps(run.input), "upperSchemaVersion": 0}
    return _handle(orchestrators[run.name], body)


def sdk_handle(app: Any, name: str, body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The SDK's ``Orchestrator.handle`` of ``app``'s orchestration ``name`` on one request ``body`` (its
    ``history`` a Durable Task list, e.g. the one replay rebuilds): the state and the failure message."""
    orchestrators, _ = _functions(app)
    return _handle(orchestrators[name], body)


def _http_response(request: dict[str, Any]) -> dict[str, Any]:
    """Make a ``call_http`` request for real (to a server of the test on 127.0.0.1) and answer as the host's
    HTTP activity does: status code, headers and content."""
    import urllib.request

    content = request.get("content")
    outgoing = urllib.request.Request(request["uri"], data=content.encode("utf-8") if content is not None else None,
                                      method=request["method"], headers=request.get("headers") or {})
    with urllib.request.urlopen(outgoing, timeout=30) as answer:
        return {"statusCode": answer.status, "headers": dict(answer.headers), "content": answer.read().decode("utf-8")}


def _sdk_event(event: dict[str, Any], played: bool) -> dict[str, Any]:
    out = {key: value for key, value in event.items() if key not in ("EventType", "Timestamp")}
    out["EventType"] = _EVENT_NUMBERS[event["EventType"]]
    out["Timestamp"] = _iso(event["Timestamp"])
    out["IsPlayed"] = played
    return out


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return str(value)


def all_runs(runs: list[RecordedRun]) -> list[RecordedRun]:
    out = []
    for run in runs:
        out.append(run)
        out.extend(all_runs(run.children))
    return out


# -- the task hub's tables ------------------------------------------------------------------------------


def table_rows(run: RecordedRun) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(Instances row, History rows) of one run, as ``AzureTableTrackingStore`` writes them."""
    history_rows: list[dict[str, Any]] = []
    for sequence, event in enumerate(run.events):
        row: dict[str, Any] = {"PartitionKey": run.instance_id, "RowKey": f"{sequence:016X}", "ExecutionId": run.execution_id,
                               "IsPlayed": False}
        for key, value in event.items():
            if key == "Timestamp":
                row["_Timestamp"] = value
            elif key == "FireAt":
                row["FireAt"] = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            else:
                row[key] = value
        history_rows.append(row)
    history_rows.append({"PartitionKey": run.instance_id, "RowKey": "sentinel", "ExecutionId": run.execution_id})
    last = run.events[-1]["Timestamp"]
    instance = {
        "PartitionKey": run.instance_id, "RowKey": "", "Name": run.name, "Version": "", "ExecutionId": run.execution_id,
        "RuntimeStatus": run.runtime_status, "CreatedTime": run.created, "LastUpdatedTime": last,
        "Input": json.dumps(run.input),
    }
    if run.runtime_status == "Completed":
        instance["CompletedTime"] = last
        instance["Output"] = json.dumps(run.output)
    return instance, history_rows


def write_task_hub(service: Any, runs: list[RecordedRun], task_hub: str = TASK_HUB) -> None:
    """The runs (and their sub-orchestrations) into ``<task_hub>Instances`` and ``<task_hub>History``."""
    instances = service.create_table_if_not_exists(f"{task_hub}Instances")
    history = service.create_table_if_not_exists(f"{task_hub}History")
    for run in all_runs(runs):
        instance, rows = table_rows(run)
        instances.upsert_entity(instance)
        for start in range(0, len(rows), 100):  # a transaction holds at most 100 entities of one partition
            history.submit_transaction([("upsert", row) for row in rows[start : start + 100]])


# -- code variants -----------------------------------------------------------------------------------------

APP_SOURCE = TESTS / "approvals" / "function_app.py"


def variant(folder: Path, module: str, replacements: list[tuple[str, str]]) -> tuple[Any, Path]:
    """A copy of the approvals app with each ``(old, new)`` text replaced (each must occur), imported as
    ``module`` from ``folder``: (the module, its file)."""
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in source, f"{old!r} is not in the app"
        source = source.replace(old, new, 1)
    path = folder / f"{module}.py"
    path.write_text(source, encoding="utf-8")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return importlib.import_module(module), path


def line_of(path: Path, text: str) -> int:
    """The 1-based line of ``path`` holding ``text`` (exactly one line must)."""
    lines = [number for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if text in line]
    assert len(lines) == 1, f"{text!r} is on lines {lines} of {path}"
    return lines[0]


# -- the session's recording ---------------------------------------------------------------------------

ORDERS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    # instance id -> (input, scripted external events)
    "order-big": ({"id": "big", "items": ["apple", "banana", "kiwi"]}, {"approval": {"approved": True}}),
    "order-small": ({"id": "small", "items": ["fig"]}, None),
    "order-rejected": ({"id": "rej", "items": ["melon", "papaya"]}, {"approval": {"approved": False}}),
    "order-waiting": ({"id": "wait", "items": ["apple", "banana", "kiwi"]}, None),  # waits for approval: Running
}


@dataclass
class Imported:
    azurite: Azurite
    histories: Path
    runs: list[RecordedRun]
    marker: Path
    import_output: str


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m replaytest ARGS`` in a fresh process (the tests' directory importable)."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(cwd or TESTS), str(TESTS), environment.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=cwd or TESTS, env=environment,
                          capture_output=True, text=True, timeout=timeout_s)


@contextlib.contextmanager
def record_approvals(folder: Path) -> Iterator[Imported]:
    from approvals import function_app

    marker = folder / "activities-ran.log"
    function_app.MARKER["path"] = str(marker)
    try:
        runs = [record(function_app.app, "order_approval", instance, order, events, created=START + timedelta(minutes=n))
                for n, (instance, (order, events)) in enumerate(ORDERS.items())]
    finally:
        function_app.MARKER["path"] = None
    (folder / "azurite").mkdir()
    with azurite(folder / "azurite") as server:
        write_task_hub(server.service(), runs)
        histories = folder / "histories"
        done = run_cli("import", "azure-durable", "--connection-string", server.connection_string, "--task-hub", TASK_HUB,
                       "--out", str(histories), "--no-redact")
        assert done.returncode == 0, done.stdout + done.stderr
        yield Imported(server, histories, runs, marker, done.stdout + done.stderr)


def http_status(run: RecordedRun) -> dict[str, Any]:
    """The run as the durable HTTP API reports it with ``showHistory=true&showHistoryOutput=true`` (and
    ``showInput`` at its default, true), as the extension's ``GetDurableOrchestrationStatusAsync`` writes it
    from v2.9.0 on: the condensed history (no OrchestratorStarted/Completed, no scheduling events: each
    completion carries the task's ``FunctionName``, ``ScheduledTime`` and ``Input``), ``FunctionName`` for names.
    ``Result`` fields and the top-level ``input``/``output`` are JSON values (the extension converts those
    alone); every ``Input`` stays the JSON text the task hub holds: the orchestration's, an external event's,
    an activity's, an ``EventSent``'s (an entity operation's request, in place, only ``EventId`` dropped) and an
    entity call's response (the ``EventRaised`` under the request id)."""
    scheduled = {e["EventId"]: e for e in run.events if e["EventType"] in ("TaskScheduled", "SubOrchestrationInstanceCreated", "TimerCreated")}
    request_ids = {json.loads(e["Input"])["id"] for e in run.events if e["EventType"] == "EventSent"}
    events: list[dict[str, Any]] = []
    for event in run.events:
        kind = event["EventType"]
        stamp = _iso(event["Timestamp"])
        if kind == "EventSent":
            events.append({"EventType": kind, "InstanceId": event["InstanceId"], "Name": event["Name"], "Input": event["Input"], "Timestamp": stamp})
            continue
        if kind == "EventRaised" and event["Name"] in request_ids:
            events.append({"EventType": kind, "Name": event["Name"], "Input": event["Input"], "Timestamp": stamp})
            continue
        if kind == "ExecutionStarted":
            events.append({"EventType": kind, "FunctionName": event["Name"], "Timestamp": stamp, "Input": event["Input"]})
        elif kind in ("TaskCompleted", "SubOrchestrationInstanceCompleted"):
            origin = scheduled[event["TaskScheduledId"]]
            events.append({"EventType": kind, "FunctionName": origin["Name"], "Result": json.loads(event["Result"]),
                           "ScheduledTime": _iso(origin["Timestamp"]), "Input": origin.get("Input"), "Timestamp": stamp})
        elif kind == "TimerFired":
            events.append({"EventType": kind, "FireAt": event["FireAt"], "Timestamp": stamp})
        elif kind == "EventRaised":
            events.append({"EventType": kind, "Name": event["Name"], "Input": event["Input"], "Timestamp": stamp})
        elif kind == "ExecutionCompleted":
            events.append({"EventType": kind, "OrchestrationStatus": event["OrchestrationStatus"],
                           "Result": json.loads(event["Result"]), "Timestamp": stamp})
    return {
        "name": run.name, "instanceId": run.instance_id, "runtimeStatus": run.runtime_status, "input": run.input,
        "output": run.output, "createdTime": _iso(run.created), "lastUpdatedTime": _iso(run.events[-1]["Timestamp"]),
        "historyEvents": events,
    }
