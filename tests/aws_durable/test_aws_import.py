"""``replaytest import aws-durable``: executions recorded with the testing SDK's local runner, saved as the
Lambda API's JSON, become one neutral history each; bad input is a clear error, never a silent pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_kit import ROOT, run_cli


def _histories(folder: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in folder.glob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        found[document["input"]["id"]] = document
    return found


def test_each_execution_is_one_history_with_its_operations_in_order(imported) -> None:  # type: ignore[no-untyped-def]
    histories = _histories(imported.histories)
    assert set(histories) == {"o-small", "o-big", "o-wait"}
    big = histories["o-big"]
    assert big["workflow"]["engine"] == "aws_durable"
    assert big["workflow"]["type"] == "orders"  # the Lambda function's name
    assert big["code_version"] == "$LATEST"
    assert big["status"] == "completed"
    assert big["result"]["status"] == "shipped"
    assert [(e["kind"], e["name"]) for e in big["events"]] == [
        ("step", "check_stock"), ("step", "check_stock"), ("step", "check_stock"), ("step", "price_order"),
        ("step", "approval"), ("signal", "approval create callback id"), ("step", "approval submitter"),
        ("step", "print_label"), ("step", "book_courier"), ("step", "pack"), ("step", "weigh_box"), ("timer", "seal"),
    ]
    # The SDK's typed envelope unwrapped into JSON data.
    assert big["events"][3]["result"] == {"total": 150, "lines": 3}
    assert big["events"][5]["result"] == "yes"
    pack = big["events"][9]["aws"]
    assert (pack["type"], pack["sub_type"], pack["status"]) == ("CONTEXT", "RunInChildContext", "SUCCEEDED")
    assert big["events"][10]["aws"]["parent_id"] == pack["id"]


def test_statuses_running_parks_at_the_callback_and_a_wait_has_its_duration(imported) -> None:  # type: ignore[no-untyped-def]
    histories = _histories(imported.histories)
    waiting = histories["o-wait"]
    assert waiting["status"] == "parked"
    assert waiting["waiting"] == {"kind": "signal", "name": "approval create callback id"}
    small = histories["o-small"]
    assert small["status"] == "completed"
    timer = next(e for e in small["events"] if e["kind"] == "timer")
    assert (timer["name"], timer["duration_s"]) == ("cool_off", 2.0)


def _documents(recording, name: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    return json.loads(recording.files[name].read_text(encoding="utf-8"))


def test_failed_timed_out_and_stopped_are_failed_with_the_error(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    execution, page = _documents(recording, "order-small")
    documents = []
    for status, error in (("FAILED", {"ErrorType": "ValueError", "ErrorMessage": "no stock"}), ("TIMED_OUT", None), ("STOPPED", None)):
        changed = {**execution, "Status": status, "DurableExecutionArn": execution["DurableExecutionArn"].replace("/", f"-{status}/", 1)}
        changed.pop("Result", None)
        if error is not None:
            changed["Error"] = error
        documents += [changed, page]
    source = tmp_path / "failed.json"
    source.write_text(json.dumps(documents), encoding="utf-8")
    # The pages' ExecutionStarted id is the ARN's last segment, so the changed ARNs still match.
    done = run_cli("import", "aws-durable", str(source), "--out", str(tmp_path / "out"), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    found = {}
    for path in (tmp_path / "out").glob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        found[document["workflow"]["id"].split("/")[0].rsplit("-", 1)[-1]] = (document["status"], document["error"])
    assert found["FAILED"] == ("failed", {"type": "ValueError", "message": "no stock"})
    assert found["TIMED_OUT"] == ("failed", {"type": "TimedOut", "message": "the execution ended TIMED_OUT"})
    assert found["STOPPED"] == ("failed", {"type": "Stopped", "message": "the execution ended STOPPED"})


def test_bad_input_is_a_clear_error(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    execution, page = _documents(recording, "order-big")
    cases = {
        "page-first.json": ([page, execution], "a history page before any execution"),
        "not-json.json": (None, "not JSON"),
        "neither.json": ({"hello": 1}, "neither a GetDurableExecution response"),
    }
    for name, (document, message) in cases.items():
        path = tmp_path / name
        path.write_text("{not json" if document is None else json.dumps(document), encoding="utf-8")
        done = run_cli("import", "aws-durable", str(path), "--out", str(tmp_path / "out"), cwd=ROOT)
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert message in done.stderr, (name, done.stderr)
    assert not list((tmp_path / "out").glob("*.json"))


def test_a_truncated_result_or_another_executions_pages_refuse_that_run_only(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    big, big_page = _documents(recording, "order-big")
    small, small_page = _documents(recording, "order-small")
    truncated = json.loads(json.dumps(big_page))
    step = next(e for e in truncated["Events"] if e["EventType"] == "StepSucceeded" and e["Name"] == "price_order")
    step["StepSucceededDetails"]["Result"]["Truncated"] = True
    other = {**small, "DurableExecutionArn": small["DurableExecutionArn"].rsplit("/", 1)[0] + "/inv-other"}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([big, truncated, other, small_page, small, small_page]), encoding="utf-8")
    done = run_cli("import", "aws-durable", str(path), "--out", str(tmp_path / "out"), cwd=ROOT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "truncated the result of step 'price_order'" in done.stderr
    assert "the history pages are of execution 'inv-12345678-1234-1234-1234-123456789012', not this one" in done.stderr
    assert "imported 1 history" in done.stdout and "2 run(s) refused" in done.stdout
    assert [json.loads(p.read_text())["input"]["id"] for p in (tmp_path / "out").glob("*.json")] == ["o-small"]


def test_payloads_are_never_unpickled(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A result that is pickle bytes in an envelope tag the SDK does not have is refused, not loaded."""
    execution, page = _documents(recording, "order-small")
    page = json.loads(json.dumps(page))
    step = next(e for e in page["Events"] if e["EventType"] == "StepSucceeded")
    step["StepSucceededDetails"]["Result"]["Payload"] = json.dumps({"t": "pickle", "v": "gASVAAAAAAAAAAB9lC4="})
    path = tmp_path / "pickled.json"
    path.write_text(json.dumps([execution, page]), encoding="utf-8")
    done = run_cli("import", "aws-durable", str(path), "--out", str(tmp_path / "out"), cwd=ROOT)
    assert done.returncode == 2
    assert "unknown envelope tag 'pickle'" in done.stderr


def test_redaction_leaves_what_rebuilds_the_operations(recording, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    done = run_cli("import", "aws-durable", str(recording.files["order-big"]), "--out", str(tmp_path / "out"),
                   "--redact-key", "status", "--redact-path", "$.events[*].aws.callback_id", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["result"]["status"] != "shipped"  # a value: redacted
    callback = next(e for e in document["events"] if e["kind"] == "signal")
    assert callback["aws"]["callback_id"] != _documents(recording, "order-big")[1]["Events"][10]["CallbackStartedDetails"]["CallbackId"]
    assert all(e["aws"]["status"] == "SUCCEEDED" for e in document["events"])  # the engine's own field: kept
