"""``import azure-durable --http-json FILE`` with hostile files: a file over the history size limit is refused before
it is read, one that is not UTF-8 or not strict JSON (200,000 levels deep included) is one line naming it, and
nothing is written (the output folder is not even made); a status of the wrong shape refuses that instance alone,
naming the JSON path. Never a traceback."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from azure_kit import run_cli

VALID: dict[str, Any] = {
    "name": "order_approval", "instanceId": "order-1", "runtimeStatus": "Completed", "input": {"item": "lamp"},
    "output": "shipped", "createdTime": "2026-03-01T09:00:00Z", "lastUpdatedTime": "2026-03-01T09:05:00Z",
    "historyEvents": [
        {"EventType": "ExecutionStarted", "FunctionName": "order_approval", "Timestamp": "2026-03-01T09:00:00Z",
         "Input": {"item": "lamp"}},
        {"EventType": "TaskCompleted", "FunctionName": "check_stock", "Result": True, "ScheduledTime": "2026-03-01T09:00:01Z",
         "Timestamp": "2026-03-01T09:00:02Z"},
        {"EventType": "TaskFailed", "FunctionName": "notify", "Reason": "smtp down", "FailureDetails": {"ErrorMessage": "smtp down"},
         "ScheduledTime": "2026-03-01T09:00:03Z", "Timestamp": "2026-03-01T09:00:04Z"},
        {"EventType": "ExecutionCompleted", "OrchestrationStatus": "Completed", "Result": "shipped",
         "Timestamp": "2026-03-01T09:05:00Z"},
    ],
}


def _import(folder: Path, content: bytes | None = None, *, limit: int | None = None) -> tuple[Any, Path]:
    """``import azure-durable --http-json status.json`` in ``folder`` (a project, with ``limit`` as its
    max-history-bytes when given); ``content`` is written to status.json unless it is there already."""
    table = f"\n[tool.replaytest.replay]\nmax-history-bytes = {limit}\n" if limit is not None else ""
    (folder / "pyproject.toml").write_text(f"[project]\nname = 'hostile'\n{table}", encoding="utf-8")
    source = folder / "status.json"
    if content is not None:
        source.write_bytes(content)
    done = run_cli("import", "azure-durable", "--http-json", str(source), "--out", str(folder / "out"), "--no-redact",
                   cwd=folder, timeout_s=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done, source


def _refused_whole(done: Any, folder: Path, source: Path, said: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [done.stderr.strip()], done.stderr
    assert errors[0].startswith(f"error: {source}") and said in errors[0], errors[0]
    assert not (folder / "out").exists()


def test_the_valid_status_imports(tmp_path: Path) -> None:
    """The hostile cases below are this file, changed."""
    done, _ = _import(tmp_path, json.dumps(VALID).encode())
    assert done.returncode == 0, done.stdout + done.stderr
    assert [path.name for path in (tmp_path / "out").glob("*.json")] == ["order-1.json"]


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    source = tmp_path / "status.json"
    with open(source, "wb") as handle:  # sparse: 600 MiB that cost nothing, unless someone reads them
        handle.truncate(600 * 1024**2)
    done, _ = _import(tmp_path)  # the default limit, 512 MiB
    _refused_whole(done, tmp_path, source, "is 629,145,600 bytes, more than the limit of 536,870,912 bytes; not read")


def test_the_limit_is_the_configured_history_size_limit(tmp_path: Path) -> None:
    statuses = [dict(VALID, instanceId=f"order-{number}") for number in range(2000)]
    content = json.dumps(statuses).encode()
    assert len(content) > 1024 * 1024
    done, source = _import(tmp_path, content, limit=1024 * 1024)
    _refused_whole(done, tmp_path, source, f"is {len(content):,} bytes, more than the limit of 1,048,576 bytes; not read")
    assert "max-history-bytes" in done.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b'{"instanceId": "order-1", "input": ' + b"[" * 600 + b"]" * 600 + b"}", "nested deeper than 400 levels"),
        (json.dumps(VALID).encode().replace(b"lamp", b"l\xe4mp"), "is not UTF-8 (byte"),
        (json.dumps(VALID).encode("utf-16"), "is UTF-16"),
        (b"", "is empty"),
        (b'{"instanceId": "order-1", "instanceId": "order-2"}', "duplicate key"),
        (json.dumps(VALID).encode()[:-40], "invalid JSON"),
        (b'{"instanceId": "order-1", "output": 1e999}', "number is too large"),
    ],
    ids=["200000-deep", "600-deep", "not-utf8", "utf16", "empty", "duplicate-key", "truncated", "infinity"],
)
def test_a_file_that_is_not_strict_json_is_one_line_and_writes_nothing(tmp_path: Path, content: bytes, said: str) -> None:
    done, source = _import(tmp_path, content)
    _refused_whole(done, tmp_path, source, said)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    source = tmp_path / "status.json"
    os.mkfifo(source)
    done, _ = _import(tmp_path)
    _refused_whole(done, tmp_path, source, "cannot be read: is a FIFO, not a regular file")


def _changed(path: str, value: Any) -> dict[str, Any]:
    status = copy.deepcopy(VALID)
    *parents, last = [int(part) if part.isdigit() else part for part in path.split("/")]
    target: Any = status
    for part in parents:
        target = target[part]
    target[last] = value
    return status


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (42, "$ is not an instance status (no instanceId string)"),
        (_changed("runtimeStatus", ["Completed"]), "$.runtimeStatus is an array, not a string"),
        (_changed("name", {"en": "order_approval"}), "$.name is an object, not a string"),
        (_changed("historyEvents/1/FunctionName", 7), "$.historyEvents[1].FunctionName is a number, not a string"),
        (_changed("historyEvents/2/Reason", True), "$.historyEvents[2].Reason is a boolean, not a string"),
        (_changed("historyEvents/2/FailureDetails", "smtp down"), "$.historyEvents[2].FailureDetails is"),
        (_changed("historyEvents/3/FailureDetails", {"ErrorMessage": ["x"]}),
         "$.historyEvents[3].FailureDetails.ErrorMessage is an array, not a string"),
        (_changed("historyEvents/3/OrchestrationStatus", 1), "$.historyEvents[3].OrchestrationStatus is a number"),
        (_changed("historyEvents", {"0": {}}), "$.historyEvents is missing"),
        (_changed("historyEvents/0", ["ExecutionStarted"]), "$.historyEvents[0]: not a history event"),
    ],
    ids=["number", "status-list", "name-object", "function-number", "reason-bool", "details-string", "message-list",
         "orchestration-status", "events-object", "event-list"],
)
def test_a_status_of_the_wrong_shape_refuses_that_instance_only(tmp_path: Path, status: Any, said: str) -> None:
    good = dict(VALID, instanceId="order-good")
    done, source = _import(tmp_path, json.dumps([good, status]).encode())
    assert done.returncode == 2, done.stdout + done.stderr
    # The good instance is written; the bad one is refused in one line naming the file and the path.
    said = said.replace("$", "$[1]", 1)
    refusals = [line for line in done.stderr.splitlines() if line.startswith("refused: ")]
    assert len(refusals) == 1 and f"{source}: " in refusals[0] and said in refusals[0], done.stderr
    assert [path.name for path in (tmp_path / "out").glob("*.json")] == ["order-good.json"]
    assert "imported 1 history" in done.stdout and "1 run(s) refused" in done.stdout
