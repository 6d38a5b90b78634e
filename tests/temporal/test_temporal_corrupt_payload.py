"""A ``json/plain`` payload whose data is not JSON makes a recorded Temporal history corrupt: an ``error``
naming the file, the event (id and type) and the JSON path of the data, never a divergence (the code
"failing to decode" its input) nor a pass (a payload the replay never decodes). The histories are the
dev-server recordings of ``histories/``, each with one payload damaged as a truncated export would."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
import temporal_wf_hello as hello
import temporal_wf_rich as rich
from click.testing import CliRunner
from temporalio.client import WorkflowHistory

from replaytest.cli import cli
from replaytest.plugins.temporal.payloads import corrupt_json_payload

# Not imported from conftest: run together with tests/impact_e2e, the module named conftest may be that one.
HISTORIES = Path(__file__).resolve().parent / "histories"

TRUNCATED = base64.b64encode(b'{"sku": "lamp-').decode()  # 14 bytes, cut inside a string


def _damaged(tmp_path: Path, name: str, index: int, payloads: Any, data: str = TRUNCATED, encoding: str | None = None) -> Path:
    """A copy of ``histories/<name>`` whose event ``index`` has the first payload ``payloads(attributes)``
    holds replaced by ``data`` (base64), and its encoding by ``encoding`` when given."""
    document = json.loads((HISTORIES / name).read_text(encoding="utf-8"))
    event = document["events"][index]
    attributes = next(value for key, value in event.items() if key.endswith("EventAttributes"))
    payload = payloads(attributes)["payloads"][0]
    payload["data"] = data
    if encoding is not None:
        payload["metadata"]["encoding"] = base64.b64encode(encoding.encode()).decode()
    target = tmp_path / name
    target.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return target


CASES = [
    # Before this check, the two the code decodes replayed as result-mismatch ("the code now raises
    # JSONDecodeError"), and the two it never decodes passed.
    ("hello_timer_history.json", 6, lambda a: a["result"], (hello.Hello,),
     "event 7 (ActivityTaskCompleted) $.events[6].activityTaskCompletedEventAttributes.result.payloads[0].data"),
    ("hello_timer_history.json", 0, lambda a: a["input"], (hello.Hello,),
     "event 1 (WorkflowExecutionStarted) $.events[0].workflowExecutionStartedEventAttributes.input.payloads[0].data"),
    ("hello_timer_history.json", 21, lambda a: a["result"], (hello.Hello,),
     "event 22 (WorkflowExecutionCompleted) $.events[21].workflowExecutionCompletedEventAttributes.result.payloads[0].data"),
    # A local activity's marker: the payloads sit in a protobuf map (details), keyed "result".
    ("rich_history.json", 4, lambda a: a["details"]["result"], (rich.Rich, rich.Child, rich.Audit),
     "event 5 (MarkerRecorded) $.events[4].markerRecordedEventAttributes.details.result.payloads[0].data"),
]


@pytest.mark.parametrize(("name", "index", "payloads", "workflows", "where"), CASES)
def test_a_payload_that_is_not_json_is_a_corrupt_history(replay, tmp_path, name, index, payloads, workflows, where) -> None:
    path = _damaged(tmp_path, name, index, payloads)
    result = replay(path, *workflows)
    assert result.status == "error"
    assert result.divergence is None
    assert result.error == (
        f"{path}: corrupt Temporal history: {where}: a json/plain payload that is not JSON (byte 8 of 14: "
        "Unterminated string starting at); it cannot be replayed"
    )


def test_an_empty_json_payload_is_corrupt_too(replay, tmp_path) -> None:
    path = _damaged(tmp_path, "hello_timer_history.json", 6, lambda a: a["result"], data="")
    result = replay(path, hello.Hello)
    assert result.status == "error"
    assert result.error.endswith("result.payloads[0].data: a json/plain payload that is not JSON (its data is empty); "
                                 "it cannot be replayed")


def test_payloads_of_other_encodings_are_not_read_as_json(tmp_path) -> None:
    path = _damaged(tmp_path, "hello_timer_history.json", 6, lambda a: a["result"],
                    data=base64.b64encode(b"\x00\xffsealed").decode(), encoding="binary/encrypted")
    history = WorkflowHistory.from_json("hello", path.read_text(encoding="utf-8"))
    assert corrupt_json_payload(history.events) is None
    # Every recorded history's payloads decode.
    for recorded in sorted(HISTORIES.glob("*.json")):
        events = WorkflowHistory.from_json(recorded.stem, recorded.read_text(encoding="utf-8")).events
        assert corrupt_json_payload(events) is None, recorded.name


def test_the_command_line_exits_2_and_still_replays_the_sound_history(tmp_path) -> None:
    folder = tmp_path / "histories"
    folder.mkdir()
    (folder / "hello_timer_history.json").write_text((HISTORIES / "hello_timer_history.json").read_text())
    damaged = _damaged(tmp_path, "hello_timer_history.json", 6, lambda a: a["result"])
    damaged.rename(folder / "hello_damaged.json")
    previous = os.getcwd()
    os.chdir(Path(hello.__file__).parent)
    try:
        ran = CliRunner().invoke(cli, ["replay", str(folder), "--workflows", "temporal_wf_hello:Hello"])
    finally:
        os.chdir(previous)
    assert ran.exit_code == 2, ran.output
    assert "hello_damaged.json: corrupt Temporal history: event 7 (ActivityTaskCompleted)" in ran.output
    assert "hello_timer_history.json: Hello id hello-1: passed (22 events)" in ran.output
    assert "replayed 2 histories: 1 passed, 0 diverged, 0 stale, 1 error" in ran.output
