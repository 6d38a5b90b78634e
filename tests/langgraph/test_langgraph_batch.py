"""A LangGraph history replay cannot check, in a folder of imported threads: it is an error naming why,
the real threads keep their verdicts, and excluding it makes the exit code theirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from conftest import AGENT_SPEC

from replaytest.cli import cli


def replay(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["replay", *args, "--workflows", AGENT_SPEC, "--format", "json"])
    return result.exit_code, json.loads(result.output)


def test_an_unsupported_history_is_an_error_beside_the_threads_that_replay(recorded, tmp_path: Path) -> None:
    folder = tmp_path / "histories"
    shutil.copytree(recorded.histories, folder)
    # A thread someone edited by hand: LangGraph records no durable timers, so replay cannot match one.
    document = json.loads((folder / "order_agent-approved.json").read_text())
    document["workflow"]["id"] = "approved-edited"
    document["events"].append({"seq": len(document["events"]) + 1, "kind": "timer", "name": "cool-down", "duration_s": 60})
    (folder / "order_agent-edited.json").write_text(json.dumps(document, indent=2))
    code, report = replay(str(folder))
    assert code == 2, report
    assert [(r["workflow"]["id"], r["status"]) for r in report["results"]] == [
        ("approved", "passed"), ("approved-edited", "error"), ("waiting", "passed"),
    ]
    [edited] = [r for r in report["results"] if r["status"] == "error"]
    number = len(document["events"])
    assert edited["error"] == f"event #{number} is a timer 'cool-down', which LangGraph histories do not hold"
    code, report = replay(str(folder), "--exclude", "*-edited.json")
    assert code == 0, report
    assert [r["workflow"]["id"] for r in report["results"]] == ["approved", "waiting"]
    assert report["summary"]["excluded"] == 1
    assert report["excluded"][0]["history"].endswith("histories/order_agent-edited.json")
