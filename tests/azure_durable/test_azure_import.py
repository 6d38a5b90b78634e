"""``replaytest import azure-durable``: selecting runs in the task hub tables (Azurite), what a history
keeps of the Durable Task events, bad rows and files, and the HTTP API's condensed output."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from azure_kit import START, TASK_HUB, Imported, RecordedRun, all_runs, http_status, run_cli, table_rows, write_task_hub


def _import(imported: Imported, out: Path, *args: str, task_hub: str = TASK_HUB) -> tuple[int, str, list[str]]:
    done = run_cli("import", "azure-durable", "--connection-string", imported.azurite.connection_string, "--task-hub", task_hub,
                   "--out", str(out), "--no-redact", *args)
    ids = sorted(json.loads(path.read_text())["workflow"]["id"] for path in out.glob("*.json")) if out.exists() else []
    return done.returncode, done.stdout + done.stderr, ids


def test_instance_status_and_created_time_select_runs(imported: Imported, tmp_path: Path) -> None:
    code, output, ids = _import(imported, tmp_path / "one", "--instance", "order-big")
    assert (code, ids) == (0, ["order-big"]), output
    code, output, ids = _import(imported, tmp_path / "running", "--status", "Running")
    assert (code, ids) == (0, ["order-waiting"]), output
    cutoff = START + timedelta(minutes=2)
    expected = sorted(run.instance_id for run in all_runs(imported.runs) if run.created >= cutoff)
    code, output, ids = _import(imported, tmp_path / "late", "--created-after", cutoff.isoformat().replace("+00:00", "Z"))
    assert (code, ids) == (0, expected), output
    assert "order-big" not in ids and "order-rejected" in ids


def test_an_unknown_instance_is_an_error(imported: Imported, tmp_path: Path) -> None:
    code, output, _ = _import(imported, tmp_path / "none", "--instance", "no-such-order")
    assert code == 2
    assert "no-such-order" in output and "no rows" in output


def test_the_sdk_history_rebuilt_from_an_imported_file_is_the_recorded_one(imported: Imported) -> None:
    from replaytest.history import load_history
    from replaytest.plugins.azure_durable.dtfx_history import EVENT_NAMES, sdk_history

    run = next(r for r in imported.runs if r.instance_id == "order-big")
    rebuilt = sdk_history(load_history(imported.histories / "order-big.json"))
    assert rebuilt[-1]["EventType"] == 12  # one more OrchestratorStarted: every recorded event counts as replayed
    fields = ("EventId", "Name", "TaskScheduledId", "TimerId", "Result", "Input")

    def shape(event: dict[str, Any], kind: str) -> tuple[Any, ...]:
        values = [json.loads(event[f]) if f in ("Result", "Input") and event.get(f) is not None else event.get(f) for f in fields]
        return (kind, *values)

    recorded = [shape(e, e["EventType"]) for e in run.events if e["EventType"] not in ("OrchestratorCompleted", "ExecutionCompleted")]
    # The rebuilt ExecutionStarted carries the input; scheduling events need no input to replay.
    ignore_input = [s[:-1] + ((s[-1],) if s[0] in ("ExecutionStarted", "EventRaised") else (None,)) for s in recorded]
    assert [shape(e, EVENT_NAMES[e["EventType"]]) for e in rebuilt[:-1]] == ignore_input


def _broken_run(imported: Imported, instance: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    source = next(r for r in imported.runs if r.instance_id == "order-small")
    run = RecordedRun(instance, source.name, source.input, [dict(e) for e in source.events], source.runtime_status, source.output)
    return table_rows(run)


def test_a_payload_that_is_not_json_refuses_the_run_naming_row_and_column(imported: Imported, tmp_path: Path) -> None:
    instance, rows = _broken_run(imported, "broken-json")
    completed = next(row for row in rows if row.get("EventType") == "TaskCompleted")
    completed["Result"] = "gAN9cQAu"  # a base64 pickle, as a hostile row might hold
    service = imported.azurite.service()
    service.create_table_if_not_exists("BrokenHubInstances").upsert_entity(instance)
    service.create_table_if_not_exists("BrokenHubHistory").submit_transaction([("upsert", row) for row in rows])
    code, output, ids = _import(imported, tmp_path / "out", task_hub="BrokenHub")
    assert code == 2 and ids == []
    assert f"BrokenHubHistory row broken-json/{completed['RowKey']}, column Result: the payload is not JSON" in output


def test_a_result_stored_in_a_blob_refuses_the_run_and_says_so(imported: Imported, tmp_path: Path) -> None:
    instance, rows = _broken_run(imported, "large-result")
    completed = next(row for row in rows if row.get("EventType") == "TaskCompleted")
    completed.pop("Result")
    completed["ResultBlobName"] = "large-result/history-0000000000000007-TaskCompleted-Result.json.gz"
    service = imported.azurite.service()
    service.create_table_if_not_exists("BlobHubInstances").upsert_entity(instance)
    service.create_table_if_not_exists("BlobHubHistory").submit_transaction([("upsert", row) for row in rows])
    code, output, _ = _import(imported, tmp_path / "out", task_hub="BlobHub")
    assert code == 2
    assert "column Result is stored in blob 'large-result/history-0000000000000007-TaskCompleted-Result.json.gz'" in output
    assert "not fetch" in output


def test_http_api_output_imports_with_a_note_and_replays(imported: Imported, tmp_path: Path) -> None:
    statuses = [http_status(run) for run in imported.runs]
    source = tmp_path / "status.json"
    source.write_text(json.dumps(statuses))
    out = tmp_path / "http"
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(out), "--no-redact")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: the HTTP API's history is condensed" in done.stderr
    big = json.loads((out / "order-big.json").read_text())
    assert [(e["kind"], e["name"]) for e in big["events"]] == [
        ("step", "check_stock"), ("step", "check_stock"), ("step", "check_stock"), ("step", "price_order"),
        ("timer", "timer"), ("signal", "approval"), ("child-workflow", "ship_order"),
    ]
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'http-import'\n")
    replayed = run_cli("replay", "--format", "json", str(out), "-w", "approvals.function_app:app", cwd=tmp_path)
    report = json.loads(replayed.stdout)
    assert {r["workflow"]["id"]: r["status"] for r in report["results"]} == {
        "order-big": "passed", "order-small": "passed", "order-rejected": "passed", "order-waiting": "passed",
    }
    assert all(any("condensed" in note for note in r["notes"]) for r in report["results"])


def test_an_instance_listed_twice_in_the_http_file_is_refused_and_not_written(imported: Imported, tmp_path: Path) -> None:
    """Two statuses of one instance would write one file, the second over the first: neither is written."""
    statuses = [http_status(run) for run in imported.runs]
    first = statuses[0]
    later = json.loads(json.dumps(first))
    later["runtimeStatus"] = "Terminated"
    statuses.append(later)
    source = tmp_path / "status.json"
    source.write_text(json.dumps(statuses))
    out = tmp_path / "http"
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(out), "--no-redact")
    assert done.returncode == 2, done.stdout + done.stderr
    instance = first["instanceId"]
    assert f"instance {instance!r} was not written" in done.stderr
    assert f"$[0], $[{len(statuses) - 1}]" in done.stderr and str(source) in done.stderr
    written = sorted(json.loads(path.read_text())["workflow"]["id"] for path in out.glob("*.json"))
    assert written == sorted(status["instanceId"] for status in statuses[1:-1])
    assert f"imported {len(statuses) - 2} histories" in done.stderr + done.stdout


def test_a_file_that_is_not_json_is_an_error_naming_it(tmp_path: Path) -> None:
    source = tmp_path / "status.json"
    source.write_text('{"instanceId": "x", "historyEvents": [}')
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert str(source) in done.stderr


def test_an_http_status_without_history_says_how_to_fetch_it(tmp_path: Path) -> None:
    source = tmp_path / "status.json"
    source.write_text(json.dumps({"instanceId": "x", "name": "order_approval", "runtimeStatus": "Completed"}))
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "$.historyEvents is missing" in done.stderr and "showHistory=true" in done.stderr


def test_writing_the_task_hub_twice_imports_the_same_histories(imported: Imported, tmp_path: Path) -> None:
    """A re-import over the same folder replaces each run's own file (never another run's)."""
    write_task_hub(imported.azurite.service(), imported.runs)
    code, output, ids = _import(imported, imported.histories)
    assert code == 0, output
    assert len(ids) == 6


def test_an_activity_input_stored_in_a_blob_is_dropped_and_the_replay_notes_it(imported: Imported, tmp_path: Path) -> None:
    instance, rows = _broken_run(imported, "large-input")
    scheduled = next(row for row in rows if row.get("EventType") == "TaskScheduled")
    scheduled.pop("Input")
    scheduled["InputBlobName"] = "large-input/history-0000000000000002-TaskScheduled-Input.json.gz"
    service = imported.azurite.service()
    service.create_table_if_not_exists("InputHubInstances").upsert_entity(instance)
    service.create_table_if_not_exists("InputHubHistory").submit_transaction([("upsert", row) for row in rows])
    out = tmp_path / "out"
    code, output, ids = _import(imported, out, task_hub="InputHub")
    assert (code, ids) == (0, ["large-input"]), output
    assert "note: some activity inputs are stored in blobs" in output
    first = json.loads((out / "large-input.json").read_text())["events"][0]
    assert "args_digest" not in first and first["azure"]["input_not_stored"] is True
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'blob-input'\n")
    replayed = json.loads(run_cli("replay", "--format", "json", str(out), "-w", "approvals.function_app:app", cwd=tmp_path).stdout)
    result = replayed["results"][0]
    assert result["status"] == "passed"
    assert any("inputs were not stored" in note for note in result["notes"]), result["notes"]


def _waiting_run(imported: Imported, instance: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    source = next(r for r in imported.runs if r.instance_id == "order-waiting")
    return table_rows(RecordedRun(instance, source.name, source.input, [dict(e) for e in source.events], source.runtime_status))


def test_a_terminated_run_is_failed_and_replays_to_where_it_was_stopped(imported: Imported, tmp_path: Path) -> None:
    instance, rows = _waiting_run(imported, "terminated-order")
    instance["RuntimeStatus"] = "Terminated"
    service = imported.azurite.service()
    service.create_table_if_not_exists("StopHubInstances").upsert_entity(instance)
    service.create_table_if_not_exists("StopHubHistory").submit_transaction([("upsert", row) for row in rows])
    out = tmp_path / "out"
    code, output, ids = _import(imported, out, task_hub="StopHub")
    assert (code, ids) == (0, ["terminated-order"]), output
    document = json.loads((out / "terminated-order.json").read_text())
    assert document["status"] == "failed" and document["error"]["type"] == "Terminated"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'terminated'\n")
    replayed = json.loads(run_cli("replay", "--format", "json", str(out), "-w", "approvals.function_app:app", cwd=tmp_path).stdout)
    assert replayed["results"][0]["status"] == "passed", replayed["results"][0]


def test_an_unknown_event_type_refuses_the_run_naming_the_row(imported: Imported, tmp_path: Path) -> None:
    instance, rows = _waiting_run(imported, "odd-event")
    rows[3]["EventType"] = "TaskExploded"
    service = imported.azurite.service()
    service.create_table_if_not_exists("OddHubInstances").upsert_entity(instance)
    service.create_table_if_not_exists("OddHubHistory").submit_transaction([("upsert", row) for row in rows])
    code, output, ids = _import(imported, tmp_path / "out", task_hub="OddHub")
    assert code == 2 and ids == []
    assert f"OddHubHistory row odd-event/{rows[3]['RowKey']}: EventType 'TaskExploded' is not a Durable Task event type" in output
