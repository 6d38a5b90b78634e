"""Durable entities from an orchestrator: the ledger app's ``settle_invoice`` calls an ``account`` entity
(``call_entity``, once refused by the entity), signals another (``signal_entity``) and runs an activity,
recorded with the real SDK and the real entity function (the host's part played by ``azure_kit.record``:
``EventSent`` to ``@account@<key>`` with the request message, the response raised under the request id),
written to Azurite, imported with ``replaytest import azure-durable`` and replayed in a fresh process. No
entity or activity body runs during replay. Each changed orchestrator is also handed the recorded history
by the SDK itself (``Orchestrator.handle``, as the host does on the next episode), to show what the engine
does with it: the SDK matches by sequence number only, so a renamed operation or another entity gets the
recorded response of the old one."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from azure_kit import START, RecordedRun, azurite, line_of, record, run_cli, sdk_replay, write_task_hub

APP_SOURCE = Path(__file__).resolve().parent / "ledger" / "function_app.py"
TASK_HUB = "LedgerHub"
INVOICES = {"invoice-1": {"account": "acct-1", "amount": 40}, "invoice-2": {"account": "acct-2", "amount": 75}}
DEPOSIT = 'balance = yield context.call_entity(payer, "deposit", invoice["amount"])'
SIGNAL = '    context.signal_entity(df.EntityId("account", "audit"), "deposit", 1)\n'


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, RecordedRun]]]:
    from ledger import function_app

    folder = tmp_path_factory.mktemp("azure-ledger")
    marker = folder / "bodies-ran.log"
    function_app.MARKER["path"] = str(marker)
    try:
        runs = {instance: record(function_app.app, "settle_invoice", instance, invoice, created=START + timedelta(minutes=n))
                for n, (instance, invoice) in enumerate(INVOICES.items())}
    finally:
        function_app.MARKER["path"] = None
    assert runs["invoice-1"].output == {"balance": 40, "receipt": "receipt acct-1 40", "overdraft": "refused: insufficient funds: 40 < 1000"}
    # The recording ran the entity (each call and the signal) and the activity for real.
    assert marker.read_text().splitlines().count("account deposit") == 4
    (folder / "azurite").mkdir()
    with azurite(folder / "azurite") as server:
        write_task_hub(server.service(), list(runs.values()), TASK_HUB)
        out = folder / "histories"
        done = run_cli("import", "azure-durable", "--connection-string", server.connection_string, "--task-hub", TASK_HUB,
                       "--out", str(out), "--no-redact")
        assert done.returncode == 0, done.stdout + done.stderr
        yield out, runs


def _project(folder: Path, replacements: list[tuple[str, str]]) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "ledger_app.py").write_text(source, encoding="utf-8")
    return folder / "ledger_app.py"


def _replay(histories: Path, folder: Path) -> dict[str, dict[str, Any]]:
    marker = folder / "replay-bodies.log"
    files = sorted(str(path) for path in histories.glob("*.json"))
    done = run_cli("replay", "--format", "json", *files, "-w", "ledger_app:app", cwd=folder, env={"LEDGER_MARKER": str(marker)})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert not marker.exists(), marker.read_text()  # no entity or activity body ran
    return {result["workflow"]["id"]: result for result in json.loads(done.stdout)["results"]}


def _sdk_replay(app_file: Path, run: RecordedRun) -> tuple[dict[str, Any], str | None]:
    """What the SDK itself does with the orchestrator of ``app_file`` on the run's recorded history."""
    name = f"ledger_variant_{abs(hash(str(app_file)))}"
    spec = importlib.util.spec_from_file_location(name, app_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return sdk_replay(module.app, run)


def test_an_entity_call_is_a_step_with_its_response_and_a_signal_a_step_without_one(recorded: tuple[Path, dict[str, RecordedRun]]) -> None:
    histories, _ = recorded
    document = json.loads((histories / "invoice-1.json").read_text())
    events = [(event["kind"], event["name"], event.get("result"), (event.get("error") or {}).get("message")) for event in document["events"]]
    assert events == [
        ("step", "deposit on @account@acct-1", 40, None),
        ("step", "deposit on @account@audit", None, None),
        ("step", "write_receipt", "receipt acct-1 40", None),
        ("step", "withdraw on @account@acct-1", None, "insufficient funds: 40 < 1000"),
    ]


def test_unchanged_code_replays_green_and_runs_no_entity_body(recorded: tuple[Path, dict[str, RecordedRun]], tmp_path: Path) -> None:
    histories, runs = recorded
    app_file = _project(tmp_path, [])
    results = _replay(histories, tmp_path)
    assert {instance: result["status"] for instance, result in results.items()} == {"invoice-1": "passed", "invoice-2": "passed"}
    state, failure = _sdk_replay(app_file, runs["invoice-1"])
    assert (state["isDone"], state["output"], failure) == (True, runs["invoice-1"].output, None)


@pytest.mark.parametrize(
    ("changes", "line", "issued", "recorded_name"),
    [
        pytest.param([(DEPOSIT, DEPOSIT.replace('"deposit"', '"credit"'))], DEPOSIT.replace('"deposit"', '"credit"'),
                     "credit on @account@acct-1", "deposit on @account@acct-1", id="operation-renamed"),
        pytest.param([(DEPOSIT, DEPOSIT.replace("call_entity(payer,", 'call_entity(df.EntityId("account", "pool"),'))],
                     'call_entity(df.EntityId("account", "pool")', "deposit on @account@pool", "deposit on @account@acct-1",
                     id="another-entity"),
    ],
)
def test_a_changed_entity_call_is_a_command_mismatch_at_its_line_where_the_sdk_hands_it_the_old_response(
    recorded: tuple[Path, dict[str, RecordedRun]], tmp_path: Path, changes: list[tuple[str, str]], line: str, issued: str,
    recorded_name: str,
) -> None:
    histories, runs = recorded
    app_file = _project(tmp_path, changes)
    divergence = _replay(histories, tmp_path)["invoice-1"]["divergence"]
    assert divergence["kind"] == "command-mismatch", divergence
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == (issued, recorded_name)
    assert divergence["source"]["line"] == line_of(app_file, line)
    # The SDK alone goes on: the changed call gets the recorded response of the old one.
    state, failure = _sdk_replay(app_file, runs["invoice-1"])
    assert (state["isDone"], state["output"]["balance"], failure) == (True, 40, None)


def test_a_dropped_signal_is_a_command_mismatch_at_the_next_call_and_the_sdk_loses_its_results(
    recorded: tuple[Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    histories, runs = recorded
    app_file = _project(tmp_path, [(SIGNAL, "")])
    divergence = _replay(histories, tmp_path)["invoice-1"]["divergence"]
    assert divergence["kind"] == "command-mismatch", divergence
    assert (divergence["issued"]["name"], divergence["recorded"]["name"]) == ("write_receipt", "deposit on @account@audit")
    assert divergence["source"]["line"] == line_of(app_file, 'receipt = yield context.call_activity("write_receipt"')
    # The SDK numbers the receipt 1 where the signal was recorded: the receipt's completion (for 2) finds no
    # task, and the orchestrator never gets past it.
    state, failure = _sdk_replay(app_file, runs["invoice-1"])
    assert (state["isDone"], failure) == (False, None), state


def test_a_changed_operation_input_warns_as_a_changed_activity_argument_does(
    recorded: tuple[Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    histories, _ = recorded
    _project(tmp_path, [(DEPOSIT, DEPOSIT.replace('invoice["amount"]', 'invoice["amount"] * 2'))])
    result = _replay(histories, tmp_path)["invoice-1"]
    assert result["status"] == "passed", result
    assert [warning["kind"] for warning in result["warnings"]] == ["args-mismatch"], result["warnings"]


def test_an_entity_function_called_directly_is_stopped_before_its_body_runs(
    recorded: tuple[Path, dict[str, RecordedRun]], tmp_path: Path
) -> None:
    """Registered without the decorator syntax, the module's name is the entity function itself (not the
    handle the SDK wraps it in), so orchestration code can call its body directly."""
    direct = "    account(context)\n"
    app_file = _project(tmp_path, [
        ('@app.entity_trigger(context_name="context")\ndef account(', "def account("),
        ("\n\n@app.orchestration_trigger(", '\n\napp.entity_trigger(context_name="context")(account)\n\n\n@app.orchestration_trigger('),
        (f"    {DEPOSIT}\n", f"{direct}    {DEPOSIT}\n"),
    ])
    result = _replay(recorded[0], tmp_path)["invoice-1"]  # _replay asserts that no body ran
    divergence = result["divergence"]
    assert divergence["kind"] == "nondeterministic-call", result
    assert "stopped" in divergence["message"]
    assert divergence["source"]["line"] == line_of(app_file, direct.strip())
