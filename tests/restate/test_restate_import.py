"""``replaytest import restate`` against the real server's admin SQL endpoint: selections, statuses, payloads,
a journal the server discarded, and input that cannot be imported or replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from restate_kit import Recording
from restate_shop import orders

from replaytest.history import load_history
from replaytest.plugins.restate import values
from replaytest.plugins.restate.importer import ImportRefused, build_history
from replaytest.plugins.restate.replayer import RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet


def history(recording: Recording, role: str):  # type: ignore[no-untyped-def]
    return load_history(recording.histories / f"{recording.ids[role]}.json")


def test_a_completed_invocation_has_its_commands_input_and_output(recording: Recording) -> None:
    completed = history(recording, "completed")
    assert (completed.workflow.engine, completed.workflow.type, completed.status) == ("restate", "orders/place", "completed")
    assert [(event.kind, event.name) for event in completed.events] == [
        ("step", "reserve"), ("child-workflow", "pricing/quote"), ("step", "charge"), ("child-workflow", "ledger/add"),
    ]
    assert completed.input == {"argument": {"json": {"item": "lamp", "customer": "ann"}}}
    assert completed.result == recording.completed_answer  # what the ingress answered the caller
    assert completed.events[0].result == "reserved lamp"


def test_statuses_map_to_run_statuses(recording: Recording) -> None:
    assert history(recording, "suspended").status == "parked"
    approved = history(recording, "approved")
    assert approved.status == "completed" and approved.result["verdict"] == "approved by clerk"
    failed = history(recording, "failed")
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.message == "order for chair cannot be cancelled"


def test_a_virtual_object_history_keeps_its_key(recording: Recording) -> None:
    keys = sorted(
        load_history(path).input.get("key")
        for path in recording.histories.glob("*.json")
        if json.loads(path.read_text())["workflow"]["type"] == "ledger/add"
    )
    assert keys == ["ann", "bob", "cat"]


def test_selections_by_invocation_status_and_handler(recording: Recording) -> None:
    root = recording.histories.parent
    assert [path.name for path in (root / "one").glob("*.json")] == [f"{recording.ids['completed']}.json"]
    suspended = {f"{recording.ids[role]}.json" for role in ("suspended", "waiting signup")}
    assert {path.name for path in (root / "suspended-only").glob("*.json")} == suspended
    assert [path.name for path in (root / "cancel-only").glob("*.json")] == [f"{recording.ids['failed']}.json"]


def test_a_discarded_journal_is_said_and_not_imported(recording: Recording) -> None:
    assert recording.ids["discarded"] in recording.import_output
    assert "keeps no journal" in recording.import_output
    assert list((recording.histories.parent / "receipts").glob("*.json")) == []


def _recorded_row(recording: Recording, entry_type: str) -> tuple[dict, list[dict]]:
    """The completed invocation's sys_invocation row and journal rows rebuilt from its history (real entries)."""
    completed = history(recording, "completed")
    rows = [{"index": 0, "entry_type": values.INPUT, "raw": values.join_entry(values.input_entry(completed.input["argument"]))[8:].hex()}]
    for event in completed.events:
        for entry in event.extra["journal"]:
            rows.append({"index": entry["index"], "entry_type": entry["type"], "raw": values.join_entry(entry)[8:].hex()})
    invocation = {"id": completed.workflow.id, "target_service_name": "orders", "target_handler_name": "place", "status": "completed"}
    return invocation, rows


def test_the_stored_entries_rebuild_the_recorded_messages(recording: Recording) -> None:
    invocation, rows = _recorded_row(recording, values.INPUT)
    rebuilt = build_history(invocation, rows)
    assert [(e.kind, e.name, e.result) for e in rebuilt.events] == [(e.kind, e.name, e.result) for e in history(recording, "completed").events]


def test_a_payload_that_is_not_json_refuses_the_invocation(recording: Recording) -> None:
    invocation, rows = _recorded_row(recording, values.INPUT)
    run_completion = next(row for row in rows if row["entry_type"] == "Notification: Run")
    pickled = b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01."
    run_completion["raw"] = (values.varint_field(1, 1) + values.length_field(5, values.length_field(1, pickled))).hex()
    with pytest.raises(ImportRefused) as refused:
        build_history(invocation, rows)
    message = str(refused.value)
    assert invocation["id"] in message and f"journal entry {run_completion['index']}" in message and "not JSON" in message


def test_an_unknown_entry_type_refuses_the_invocation(recording: Recording) -> None:
    invocation, rows = _recorded_row(recording, values.INPUT)
    rows[1]["entry_type"] = "Command: Teleport"
    with pytest.raises(ImportRefused, match="Teleport"):
        build_history(invocation, rows)


def test_a_damaged_history_is_an_error_naming_the_file_and_json_path(recording: Recording, tmp_path: Path) -> None:
    document = json.loads((recording.histories / f"{recording.ids['completed']}.json").read_text())
    document["events"][2]["journal"][0]["rest"] = "not hex"
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(document))
    result = RestateReplayer().replay(path, WorkflowSet((orders.orders,)), ReplayOptions())
    assert result.status == "error"
    assert str(path) in str(result.error) and "$.events[2].journal[0]" in str(result.error)


def test_unparsable_history_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"format": "replaytest-history", "workflow": ')
    result = RestateReplayer().replay(path, WorkflowSet((orders.orders,)), ReplayOptions())
    assert result.status == "error" and str(path) in str(result.error)


def test_a_durable_sleep_and_a_one_way_call_are_imported_and_replayed(recording: Recording) -> None:
    failed = history(recording, "failed")
    assert [(event.kind, event.name) for event in failed.events] == [
        ("timer", "sleep"), ("child-workflow", "pricing/quote (send)"), ("step", "look up"),
    ]
    result = RestateReplayer().replay(recording.histories / f"{recording.ids['failed']}.json", WorkflowSet((orders.orders,)), ReplayOptions())
    assert (result.status, result.divergence) == ("passed", None)
