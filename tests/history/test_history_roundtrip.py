"""Writing: stable bytes across save/load/save, contract key order, blobs by hash and their verification."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_samples import VALID

from replaytest.history import (
    BLOB_THRESHOLD,
    Event,
    History,
    HistoryError,
    WorkflowInfo,
    history_from_dict,
    load_history,
    save_history,
)


def test_save_load_save_gives_identical_bytes(tmp_path: Path) -> None:
    history = history_from_dict(VALID)
    first = tmp_path / "a" / "run.json"
    save_history(history, first)
    loaded = load_history(first)
    assert loaded == history
    second = tmp_path / "b" / "run.json"
    save_history(loaded, second)
    assert first.read_bytes() == second.read_bytes()


def test_file_is_pretty_utf8_in_contract_key_order(tmp_path: Path) -> None:
    data = json.loads(json.dumps(VALID))
    data["input"]["note"] = "Grüße — 東京"
    target = tmp_path / "run.json"
    save_history(history_from_dict(data), target)
    text = target.read_text(encoding="utf-8")
    assert "Grüße — 東京" in text  # no \u escapes, no base64
    assert text.startswith('{\n  "format": "replaytest-history",\n  "format_version": 1,\n  "workflow": {')
    assert text.endswith("}\n")
    assert list(json.loads(text)) == ["format", "format_version", "workflow", "code_version", "prompt_versions", "status", "input", "events", "result"]
    assert list(json.loads(text)["events"][0]) == ["seq", "kind", "name", "args_digest", "prompt", "result"]
    # payload key order is the recorded order, not sorted
    assert list(json.loads(text)["input"]) == ["ticket", "customer", "note"]


def _big_history() -> History:
    big = {"rows": ["x" * 100] * (BLOB_THRESHOLD // 100 + 10)}
    return History(
        workflow=WorkflowInfo("wf", "w-1", "r-1"),
        status="completed",
        events=(Event(1, "step", "fetch", result=big), Event(2, "step", "small", result={"ok": True})),
    )


def test_large_result_goes_to_content_addressed_blob(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    save_history(_big_history(), target)
    event = json.loads(target.read_text())["events"][0]
    assert "result" not in event
    ref = event["result_ref"]
    blob = tmp_path / "blobs" / "sha256" / ref.removeprefix("sha256:")
    assert blob.is_file()
    loaded = load_history(target)
    assert loaded.events[0].result_ref == ref
    assert loaded.event_result(loaded.events[0]) == _big_history().events[0].result
    assert loaded.event_result(loaded.events[1]) == {"ok": True}
    assert "result" in json.loads(target.read_text())["events"][1]


def test_saving_elsewhere_copies_referenced_blobs(tmp_path: Path) -> None:
    save_history(_big_history(), tmp_path / "a" / "run.json")
    moved = save_history(load_history(tmp_path / "a" / "run.json"), tmp_path / "b" / "run.json")
    assert moved.event_result(moved.events[0]) == _big_history().events[0].result
    assert (tmp_path / "a" / "run.json").read_bytes() == (tmp_path / "b" / "run.json").read_bytes()


def test_tampered_blob_fails_load_with_event_path(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    save_history(_big_history(), target)
    ref = json.loads(target.read_text())["events"][0]["result_ref"]
    blob = tmp_path / "blobs" / "sha256" / ref.removeprefix("sha256:")
    blob.write_bytes(blob.read_bytes().replace(b"x", b"y", 1))
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert caught.value.path == target
    assert caught.value.json_path == "$.events[0].result_ref"
    assert "does not match its hash" in caught.value.message


def test_missing_blob_fails_load_with_event_path(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    save_history(_big_history(), target)
    for blob in (tmp_path / "blobs" / "sha256").iterdir():
        blob.unlink()
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert caught.value.json_path == "$.events[0].result_ref"
    assert "cannot be read" in caught.value.message


def test_non_json_result_cannot_be_saved(tmp_path: Path) -> None:
    history = History(workflow=WorkflowInfo("wf", "w"), status="running", events=(Event(1, "step", "s", result={1, 2}),))
    with pytest.raises(HistoryError) as caught:
        save_history(history, tmp_path / "run.json")
    assert caught.value.json_path == "$.events[0].result"
    assert not (tmp_path / "run.json").exists()
