"""``replaytest diff`` and ``replaytest redact`` accept Temporal history JSON; a redacted Temporal history
still replays against the code that recorded it."""

from __future__ import annotations

import json
from pathlib import Path

import temporal_wf_hello as hello
from click.testing import CliRunner

from replaytest.cli import cli

HISTORIES = Path(__file__).resolve().parent / "histories"


def test_diff_of_two_temporal_histories_shows_the_first_differing_command(tmp_path: Path) -> None:
    document = json.loads((HISTORIES / "hello_timer_history.json").read_text(encoding="utf-8"))
    for event in document["events"]:
        if event["eventId"] == "16":
            event["activityTaskScheduledEventAttributes"]["activityType"]["name"] = "shout"
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(document), encoding="utf-8")
    runner = CliRunner()
    same = runner.invoke(cli, ["diff", str(HISTORIES / "hello_timer_history.json"), str(HISTORIES / "hello_timer_history.json")])
    assert same.exit_code == 0 and "identical command streams" in same.output
    differs = runner.invoke(cli, ["diff", str(HISTORIES / "hello_timer_history.json"), str(changed)])
    assert differs.exit_code == 1, differs.output
    assert "command-mismatch at event #3: A recorded activity 'say', B activity 'shout'" in differs.output


def test_a_redacted_temporal_history_still_replays(tmp_path: Path, replay) -> None:
    document = json.loads((HISTORIES / "hello_timer_history.json").read_text(encoding="utf-8"))
    document["events"][0]["workflowExecutionStartedEventAttributes"]["memo"] = {"fields": {"contact": {
        "metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "ImRhbmFAY29ycC5leGFtcGxlIg=="}}}
    source = tmp_path / "hello.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["redact", "--out", str(tmp_path / "out"), str(source)])
    assert result.exit_code == 0, result.output
    redacted = tmp_path / "out" / "hello.json"
    data = json.loads(redacted.read_text(encoding="utf-8"))
    assert data["redacted"] == ["$.events[0].workflowExecutionStartedEventAttributes.memo.fields.contact.data"]
    assert replay(redacted, hello.Hello).status == "passed"
