"""The parts of the Durable Functions API the approvals app does not use, recorded with the real SDK into
Azurite (the host's part played by ``azure_kit.record``), imported with ``replaytest import azure-durable``
and replayed in a fresh process: an activity that fails and the orchestrator catches, a durable timer's
fire time, an orchestrator that fails, ``task_any``, ``call_activity_with_retry``, ``new_uuid`` and
``call_http`` (to a server of the test on 127.0.0.1, which counts the requests it gets) and
``continue_as_new`` (the generation that continued, as its History rows hold it). Each is replayed green unchanged and diverges when changed;
no activity body runs during replay."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from azure_kit import START, azurite, line_of, record, run_cli, write_task_hub

APP_SOURCE = Path(__file__).resolve().parent / "azure_refund_desk" / "function_app.py"
TASK_HUB = "RefundDeskHub"
RUNS = {
    # instance id -> (orchestrator, input)
    "refund-small": ("settle_refund", {"id": "small", "amount": 30}),  # the charge-back succeeds
    "refund-declined": ("settle_refund", {"id": "declined", "amount": 250}),  # it fails: the voucher is sent
    "audit-even": ("audit_refund", {"id": "even", "amount": 40}),
    "audit-uneven": ("audit_refund", {"id": "uneven", "amount": 90}),  # the orchestrator fails
    "rebook": ("rebook_refund", {"id": "rebook"}),  # task_any, call_activity_with_retry, new_uuid
    "notify": ("notify_bank", {"id": "notify"}),  # call_http; the bank's URL is the test server's
    "sweep": ("sweep_refunds", {"round": 1}),  # continues as new with round 2
}
BANK_REQUESTS: list[str] = []


class _Bank(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
        BANK_REQUESTS.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8"))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from azure_refund_desk import function_app

    folder = tmp_path_factory.mktemp("azure-refund-desk")
    marker = folder / "activities-ran.log"
    function_app.MARKER["path"] = str(marker)
    bank = http.server.HTTPServer(("127.0.0.1", 0), _Bank)
    threading.Thread(target=bank.serve_forever, daemon=True).start()
    inputs = {instance: (name, dict(value)) for instance, (name, value) in RUNS.items()}
    inputs["notify"][1]["bank_url"] = f"http://127.0.0.1:{bank.server_address[1]}/refunds"
    try:
        runs = [record(function_app.app, name, instance, value, created=START + timedelta(minutes=n))
                for n, (instance, (name, value)) in enumerate(inputs.items())]
    finally:
        function_app.MARKER["path"] = None
    assert BANK_REQUESTS == ['{"refund": "notify"}']  # the recording made the request for real
    assert {run.instance_id: run.runtime_status for run in runs} == {
        "refund-small": "Completed", "refund-declined": "Completed", "audit-even": "Completed", "audit-uneven": "Failed",
        "rebook": "Completed", "notify": "Completed", "sweep": "ContinuedAsNew",
    }
    assert "charge_back" in marker.read_text()  # the recording ran the activities for real
    (folder / "azurite").mkdir()
    with azurite(folder / "azurite") as server:
        write_task_hub(server.service(), runs, TASK_HUB)
        out = folder / "histories"
        done = run_cli("import", "azure-durable", "--connection-string", server.connection_string, "--task-hub", TASK_HUB,
                       "--out", str(out), "--no-redact")
        assert done.returncode == 0, done.stdout + done.stderr
        try:
            yield out
        finally:
            bank.shutdown()


def _project(folder: Path, replacements: list[tuple[str, str]]) -> Path:
    source = APP_SOURCE.read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times in the app"
        source = source.replace(old, new)
    (folder / "refund_app.py").write_text(source, encoding="utf-8")
    return folder / "refund_app.py"


def _replay(histories: Path, folder: Path, marker: Path) -> dict[str, dict[str, Any]]:
    files = sorted(str(path) for path in histories.glob("*.json"))
    done = run_cli("replay", "--format", "json", *files, "-w", "refund_app:app", cwd=folder,
                   env={"REFUND_DESK_MARKER": str(marker)})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return {result["workflow"]["id"]: result for result in json.loads(done.stdout)["results"]}


def test_the_failures_are_imported_as_recorded(histories: Path) -> None:
    declined = json.loads((histories / "refund-declined.json").read_text())
    assert [(e["kind"], e["name"]) for e in declined["events"]] == [("step", "charge_back"), ("step", "send_voucher"), ("timer", "timer")]
    assert "declined the charge-back" in json.dumps(declined["events"][0])
    uneven = json.loads((histories / "audit-uneven.json").read_text())
    assert uneven["status"] == "failed"


def test_unchanged_code_replays_the_caught_and_the_failing_runs_green(histories: Path, tmp_path: Path) -> None:
    _project(tmp_path, [])
    marker = tmp_path / "marker.log"
    results = _replay(histories, tmp_path, marker)
    assert {key: value["status"] for key, value in results.items()} == dict.fromkeys(RUNS, "passed")
    assert results["audit-uneven"]["run_status"] == "failed"
    assert not marker.exists(), marker.read_text()


def test_a_changed_handler_of_a_failed_activity_diverges_at_its_line(histories: Path, tmp_path: Path) -> None:
    """The recorded failure is thrown into the orchestrator: the ``except`` branch runs, and its renamed
    activity is where the declined run diverges; the run whose charge-back succeeded still passes."""
    app = _project(tmp_path, [('call_activity("send_voucher"', 'call_activity("send_gift_card"')])
    results = _replay(histories, tmp_path, tmp_path / "marker.log")
    assert results["refund-small"]["status"] == "passed"
    divergence = results["refund-declined"]["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert (divergence["issued"]["kind"], divergence["issued"]["name"]) == ("step", "send_gift_card")
    assert divergence["source"]["line"] == line_of(app, 'call_activity("send_gift_card"')


def test_a_changed_timer_fire_time_is_an_args_mismatch_at_the_timer(histories: Path, tmp_path: Path) -> None:
    app = _project(tmp_path, [("timedelta(minutes=5)", "timedelta(minutes=15)")])
    marker = tmp_path / "marker.log"
    results = _replay(histories, tmp_path, marker)
    for instance in ("refund-small", "refund-declined"):
        divergence = results[instance]["divergence"]
        assert divergence["kind"] == "args-mismatch", divergence
        assert (divergence["recorded"]["kind"], divergence["issued"]["kind"]) == ("timer", "timer")
        assert "+600 s" in divergence["message"]
        assert divergence["source"]["line"] == line_of(app, "yield context.create_timer(cool_off)")
    assert results["audit-even"]["status"] == "passed"
    assert not marker.exists(), marker.read_text()


def test_a_failed_orchestrator_that_now_returns_is_a_result_mismatch(histories: Path, tmp_path: Path) -> None:
    _project(tmp_path, [("if ledger[\"balance\"] != refund[\"amount\"]:", "if ledger[\"balance\"] < 0:")])
    results = _replay(histories, tmp_path, tmp_path / "marker.log")
    assert results["audit-even"]["status"] == "passed"
    divergence = results["audit-uneven"]["divergence"]
    assert divergence["kind"] == "result-mismatch"
    assert "where the history failed with" in divergence["message"]


def test_a_completed_orchestrator_that_now_fails_is_a_result_mismatch(histories: Path, tmp_path: Path) -> None:
    _project(tmp_path, [("if ledger[\"balance\"] != refund[\"amount\"]:", "if ledger[\"balance\"] >= 0:")])
    results = _replay(histories, tmp_path, tmp_path / "marker.log")
    assert results["audit-uneven"]["status"] == "passed"  # it failed then and fails now: the message is not compared
    divergence = results["audit-even"]["divergence"]
    assert divergence["kind"] == "result-mismatch"
    assert "now fails with ValueError" in divergence["message"]


def test_task_any_retry_options_and_new_uuid_replay_with_the_recorded_values(histories: Path, tmp_path: Path) -> None:
    """``new_uuid`` is drawn again from the instance id and the replayed clock: the activity inputs that carry
    it are compared (a different value would be an args-mismatch warning) and the output holds the same id."""
    _project(tmp_path, [])
    result = _replay(histories, tmp_path, tmp_path / "marker.log")["rebook"]
    assert result["status"] == "passed", result
    assert result["warnings"] == []
    recorded = json.loads((histories / "rebook.json").read_text())
    assert [(e["kind"], e["name"]) for e in recorded["events"]] == [("step", "quote_carrier"), ("step", "quote_carrier"), ("step", "book_carrier")]
    assert recorded["result"]["booking"] == "booked post for 7"
    assert all(event.get("args_digest") for event in recorded["events"])  # the inputs holding the id are compared


def test_a_changed_uuid_source_is_a_divergence(histories: Path, tmp_path: Path) -> None:
    """``uuid.uuid4()`` in its place draws another id: the output differs from the recorded one, and the
    call is reported as a hazard at its line beside it."""
    app = _project(tmp_path, [("import os\n", "import os\nimport uuid\n"), ("ticket = context.new_uuid()", "ticket = str(uuid.uuid4())")])
    result = _replay(histories, tmp_path, tmp_path / "marker.log")["rebook"]
    assert result["status"] == "diverged", result
    assert result["divergence"]["kind"] == "result-mismatch", result["divergence"]
    [hazard] = result["hazards"]
    assert hazard["kind"] == "nondeterministic-call" and "uuid.uuid4()" in hazard["message"], hazard
    assert hazard["source"]["line"] == line_of(app, "ticket = str(uuid.uuid4())")


def test_a_renamed_activity_with_retry_diverges_at_its_line(histories: Path, tmp_path: Path) -> None:
    app = _project(tmp_path, [('call_activity_with_retry("book_carrier"', 'call_activity_with_retry("book_courier"')])
    divergence = _replay(histories, tmp_path, tmp_path / "marker.log")["rebook"]["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert (divergence["issued"]["kind"], divergence["issued"]["name"]) == ("step", "book_courier")
    assert divergence["source"]["line"] == line_of(app, 'call_activity_with_retry("book_courier"')


HTTP_NOTE = "call_http requests were matched by position only: their method, URL, headers and body were not compared"


def test_call_http_replays_without_a_request_and_says_what_it_did_not_compare(histories: Path, tmp_path: Path) -> None:
    _project(tmp_path, [])
    results = _replay(histories, tmp_path, tmp_path / "marker.log")
    assert results["notify"]["status"] == "passed", results["notify"]
    assert any(HTTP_NOTE in note for note in results["notify"]["notes"])
    assert not any(HTTP_NOTE in note for note in results["rebook"]["notes"])
    assert BANK_REQUESTS == ['{"refund": "notify"}']  # replay made no request
    recorded = json.loads((histories / "notify.json").read_text())
    assert [(e["kind"], e["name"]) for e in recorded["events"]] == [("step", "BuiltIn::HttpActivity"), ("step", "file_receipt")]


def test_a_call_http_moved_after_the_activity_diverges_at_its_line(histories: Path, tmp_path: Path) -> None:
    app = _project(tmp_path, [(
        '    answer = yield context.call_http("POST", refund["bank_url"], {"refund": refund["id"]})\n'
        '    receipt = yield context.call_activity("file_receipt", refund["id"])\n',
        '    receipt = yield context.call_activity("file_receipt", refund["id"])\n'
        '    answer = yield context.call_http("POST", refund["bank_url"], {"refund": refund["id"]})\n',
    )])
    divergence = _replay(histories, tmp_path, tmp_path / "marker.log")["notify"]["divergence"]
    assert divergence["kind"] == "command-mismatch"
    assert (divergence["recorded"]["name"], divergence["issued"]["name"]) == ("BuiltIn::HttpActivity", "file_receipt")
    assert divergence["source"]["line"] == line_of(app, 'receipt = yield context.call_activity("file_receipt", refund["id"])')


def test_a_generation_that_continued_as_new_replays_and_a_return_in_its_place_diverges(histories: Path, tmp_path: Path) -> None:
    recorded = json.loads((histories / "sweep.json").read_text())
    assert [(e["kind"], e["name"]) for e in recorded["events"]] == [("step", "file_receipt"), ("continue-as-new", "continue_as_new")]
    _project(tmp_path, [])
    assert _replay(histories, tmp_path, tmp_path / "marker.log")["sweep"]["status"] == "passed"
    _project(tmp_path, [('if sweep["round"] < 2:', 'if sweep["round"] < 1:')])
    result = _replay(histories, tmp_path, tmp_path / "marker.log")["sweep"]
    assert result["status"] == "diverged", result
    assert result["divergence"]["recorded"]["kind"] == "continue-as-new", result["divergence"]


def test_continuing_with_another_input_is_not_compared(histories: Path, tmp_path: Path) -> None:
    """The new generation's input is not compared (the row says so): only that the code continues as new."""
    _project(tmp_path, [('context.continue_as_new({"round": sweep["round"] + 1})', 'context.continue_as_new({"round": 7})')])
    result = _replay(histories, tmp_path, tmp_path / "marker.log")["sweep"]
    assert result["status"] == "passed"
    assert "Azure Durable continue_as_new: the next generation's input was not compared" in result["notes"]
