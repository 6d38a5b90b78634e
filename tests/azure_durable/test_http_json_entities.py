"""Durable entities in the HTTP API's status (``import azure-durable --http-json``): the ledger app's
``settle_invoice`` runs recorded with the real SDK and the real entity function (``azure_kit.record``), written
as the extension's status code writes them with ``showHistory=true&showHistoryOutput=true`` (the ``EventSent``
of each entity operation left in place with its request message as text, a call's response raised under the
request id), imported and replayed in a fresh process. The imported history must be the one the task hub's
tables give (kinds, names, results, errors), the SDK itself (``Orchestrator.handle``) must finish the run on the
Durable Task list replay rebuilds from it, and each changed orchestrator gets the verdict the table-imported
history gets, set beside what the SDK does with it. A status that cannot carry what replay needs (the request
or the response left out with ``showInput=false``) is refused, exit 2, naming the instance."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from azure_kit import START, RecordedRun, http_status, line_of, record, run_cli, sdk_handle, sdk_replay

APP_SOURCE = Path(__file__).resolve().parent / "ledger" / "function_app.py"
INVOICES = {"invoice-5": {"account": "acct-5", "amount": 40}, "invoice-6": {"account": "acct-6", "amount": 75}}
DEPOSIT = 'balance = yield context.call_entity(payer, "deposit", invoice["amount"])'
SIGNAL = '    context.signal_entity(df.EntityId("account", "audit"), "deposit", 1)\n'


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, RecordedRun]]]:
    from ledger import function_app

    folder = tmp_path_factory.mktemp("azure-ledger-http")
    marker = folder / "bodies-ran.log"
    function_app.MARKER["path"] = str(marker)
    try:
        runs = {instance: record(function_app.app, "settle_invoice", instance, invoice, created=START + timedelta(minutes=n))
                for n, (instance, invoice) in enumerate(INVOICES.items())}
    finally:
        function_app.MARKER["path"] = None
    assert runs["invoice-5"].output == {"balance": 40, "receipt": "receipt acct-5 40", "overdraft": "refused: insufficient funds: 40 < 1000"}
    source = folder / "status.json"
    source.write_text(json.dumps([http_status(run) for run in runs.values()]))
    out = folder / "histories"
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(out), "--no-redact")
    assert done.returncode == 0, done.stdout + done.stderr
    yield source, out, runs


def _project(folder: Path, replacements: list[tuple[str, str]]) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "ledger_http_app.py").write_text(source, encoding="utf-8")
    return folder / "ledger_http_app.py"


def _replay(histories: Path, folder: Path) -> dict[str, dict[str, Any]]:
    marker = folder / "replay-bodies.log"
    files = sorted(str(path) for path in histories.glob("*.json"))
    done = run_cli("replay", "--format", "json", *files, "-w", "ledger_http_app:app", cwd=folder, env={"LEDGER_MARKER": str(marker)})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert not marker.exists(), marker.read_text()  # no entity or activity body ran
    return {result["workflow"]["id"]: result for result in json.loads(done.stdout)["results"]}


def _module(app_file: Path) -> Any:
    name = f"ledger_http_variant_{abs(hash(str(app_file)))}"
    spec = importlib.util.spec_from_file_location(name, app_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _sdk_on_rebuilt(app_file: Path, history_file: Path) -> dict[str, Any]:
    """What the SDK's ``Orchestrator.handle`` does with the Durable Task list replay rebuilds from the
    HTTP-imported history (``dtfx_history.sdk_history``)."""
    from replaytest.history.io import load_history
    from replaytest.plugins.azure_durable.dtfx_history import sdk_history

    history = load_history(history_file)
    body = {"history": sdk_history(history), "instanceId": history.workflow.id, "isReplaying": True,
            "parentInstanceId": None, "input": json.dumps(history.input), "upperSchemaVersion": 0}
    state, _ = sdk_handle(_module(app_file).app, "settle_invoice", body)
    return state


def test_the_http_history_imports_the_entity_operations_the_tables_give(recorded: tuple[Path, Path, dict[str, RecordedRun]]) -> None:
    _, histories, _ = recorded
    document = json.loads((histories / "invoice-5.json").read_text())
    events = [(event["kind"], event["name"], event.get("result"), (event.get("error") or {}).get("message")) for event in document["events"]]
    assert events == [
        ("step", "deposit on @account@acct-5", 40, None),
        ("step", "deposit on @account@audit", None, None),
        ("step", "write_receipt", "receipt acct-5 40", None),
        ("step", "withdraw on @account@acct-5", None, "insufficient funds: 40 < 1000"),
    ]
    # The rebuilt ids are the SDK's sequence numbers: the entity requests at 0, 1 and 3, the activity at 2.
    assert [event["azure"]["event_id"] for event in document["events"]] == [0, 1, 2, 3]


def test_unchanged_code_replays_green_and_the_sdk_finishes_the_rebuilt_history(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    _, histories, runs = recorded
    app_file = _project(tmp_path, [])
    results = _replay(histories, tmp_path)
    assert {instance: result["status"] for instance, result in results.items()} == {"invoice-5": "passed", "invoice-6": "passed"}
    for instance, run in runs.items():
        state = _sdk_on_rebuilt(app_file, histories / f"{instance}.json")
        assert (state["isDone"], state["output"]) == (True, run.output), state


@pytest.mark.parametrize(
    ("changes", "line", "issued", "recorded_name"),
    [
        pytest.param([(DEPOSIT, DEPOSIT.replace('"deposit"', '"credit"'))], DEPOSIT.replace('"deposit"', '"credit"'),
                     "credit on @account@acct-5", "deposit on @account@acct-5", id="operation-renamed"),
        pytest.param([(DEPOSIT, DEPOSIT.replace("call_entity(payer,", 'call_entity(df.EntityId("account", "pool"),'))],
                     'call_entity(df.EntityId("account", "pool")', "deposit on @account@pool", "deposit on @account@acct-5",
                     id="another-entity"),
    ],
)
def test_a_changed_entity_call_is_a_command_mismatch_at_its_line_where_the_sdk_hands_it_the_old_response(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path, changes: list[tuple[str, str]], line: str,
    issued: str, recorded_name: str,
) -> None:
    _, histories, runs = recorded
    app_file = _project(tmp_path, changes)
    divergence = _replay(histories, tmp_path)["invoice-5"]["divergence"]
    assert divergence["kind"] == "command-mismatch", divergence
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == (issued, recorded_name)
    assert divergence["source"]["line"] == line_of(app_file, line)
    # The SDK alone goes on, on the recorded history and on the one rebuilt from the HTTP import alike: the
    # changed call gets the recorded response of the old one.
    state, failure = sdk_replay(_module(app_file).app, runs["invoice-5"])
    assert (state["isDone"], state["output"]["balance"], failure) == (True, 40, None)
    rebuilt = _sdk_on_rebuilt(app_file, histories / "invoice-5.json")
    assert (rebuilt["isDone"], rebuilt["output"]["balance"]) == (True, 40)


def test_a_dropped_signal_is_a_command_mismatch_at_the_next_call_and_the_sdk_loses_its_results(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    _, histories, runs = recorded
    app_file = _project(tmp_path, [(SIGNAL, "")])
    divergence = _replay(histories, tmp_path)["invoice-5"]["divergence"]
    assert divergence["kind"] == "command-mismatch", divergence
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == ("write_receipt", "deposit on @account@audit")
    assert divergence["source"]["line"] == line_of(app_file, 'receipt = yield context.call_activity("write_receipt"')
    state, failure = sdk_replay(_module(app_file).app, runs["invoice-5"])
    assert (state["isDone"], failure) == (False, None), state
    assert _sdk_on_rebuilt(app_file, histories / "invoice-5.json")["isDone"] is False


def test_a_response_given_as_a_json_object_imports_as_its_text_does(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    source, histories, _ = recorded
    statuses = json.loads(source.read_text())
    request_ids = {json.loads(event["Input"])["id"] for event in statuses[0]["historyEvents"] if event["EventType"] == "EventSent"}
    for event in statuses[0]["historyEvents"]:
        if event["EventType"] == "EventRaised" and event["Name"] in request_ids:
            event["Input"] = json.loads(event["Input"])
    changed = tmp_path / "status.json"
    changed.write_text(json.dumps(statuses[:1]))
    done = run_cli("import", "azure-durable", "--http-json", str(changed), "--out", str(tmp_path / "out"), "--no-redact")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "out/invoice-5.json").read_text())["events"] == json.loads((histories / "invoice-5.json").read_text())["events"]


@pytest.mark.parametrize(
    ("event_type", "missing"),
    [
        pytest.param("EventSent", "the EventSent to '@account@acct-5' has no Input", id="request-left-out"),
        pytest.param("EventRaised", "the response to entity call", id="response-left-out"),
    ],
)
def test_a_status_fetched_without_inputs_is_refused_naming_the_instance_and_what_is_missing(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path, event_type: str, missing: str
) -> None:
    """With ``showInput=false`` the extension removes every ``Input``: the entity requests and responses are
    gone, and the run is refused rather than replayed as if no entity were called."""
    source, _, _ = recorded
    statuses = json.loads(source.read_text())
    request_ids = {json.loads(event["Input"])["id"] for event in statuses[0]["historyEvents"] if event["EventType"] == "EventSent"}
    for event in statuses[0]["historyEvents"]:
        if event["EventType"] == event_type and (event_type == "EventSent" or event["Name"] in request_ids):
            del event["Input"]
    changed = tmp_path / "status.json"
    changed.write_text(json.dumps(statuses))
    out = tmp_path / "out"
    done = run_cli("import", "azure-durable", "--http-json", str(changed), "--out", str(out), "--no-redact")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "instance 'invoice-5'" in done.stderr and missing in done.stderr and "showInput=true" in done.stderr
    assert sorted(path.name for path in out.glob("*.json")) == ["invoice-6.json"]


def test_an_entity_event_type_the_import_does_not_read_is_refused(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    source, _, _ = recorded
    statuses = json.loads(source.read_text())
    statuses[1]["historyEvents"].insert(1, {"EventType": "EntityOperationCalled", "Timestamp": statuses[1]["historyEvents"][0]["Timestamp"]})
    changed = tmp_path / "status.json"
    changed.write_text(json.dumps(statuses))
    done = run_cli("import", "azure-durable", "--http-json", str(changed), "--out", str(tmp_path / "out"), "--no-redact")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "instance 'invoice-6'" in done.stderr and "EntityOperationCalled is not read" in done.stderr


def test_timestamps_with_their_trailing_zeros_trimmed_keep_the_scheduling_order(
    recorded: tuple[Path, Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    """.NET writes a timestamp's fraction without trailing zeros (``…:01Z``, ``…:01.2Z``, ``…:01.25Z``), which
    sort out of order as text. The signal was sent at 01.2 and the receipt scheduled at 01.25, after the
    deposit's response at 01: the ids must still be the SDK's sequence numbers, and the SDK must finish the run."""
    source, _, runs = recorded
    statuses = json.loads(source.read_text())
    events = statuses[0]["historyEvents"]
    signal = next(event for event in events if event["EventType"] == "EventSent" and event["InstanceId"] == "@account@audit")
    receipt = next(event for event in events if event.get("FunctionName") == "write_receipt")
    assert signal["Timestamp"] == receipt["ScheduledTime"] == "2026-03-01T09:00:01Z"
    signal["Timestamp"], receipt["ScheduledTime"] = "2026-03-01T09:00:01.2Z", "2026-03-01T09:00:01.25Z"
    changed = tmp_path / "status.json"
    changed.write_text(json.dumps(statuses[:1]))
    out = tmp_path / "out"
    done = run_cli("import", "azure-durable", "--http-json", str(changed), "--out", str(out), "--no-redact")
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((out / "invoice-5.json").read_text())
    assert [(event["name"], event["azure"]["event_id"]) for event in document["events"]] == [
        ("deposit on @account@acct-5", 0), ("deposit on @account@audit", 1), ("write_receipt", 2), ("withdraw on @account@acct-5", 3),
    ]
    state = _sdk_on_rebuilt(_project(tmp_path, []), out / "invoice-5.json")
    assert (state["isDone"], state["output"]) == (True, runs["invoice-5"].output), state
