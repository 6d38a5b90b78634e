"""LangGraph threads imported from a real SqliteSaver keep their status through replay: the approved
thread finished (``completed``), the waiting one stopped at its interrupt (``parked``, in flight), a thread
whose entrypoint raised ``failed``; a reorder breaks both recorded order threads and the summary tells the
parked thread that breaks from the finished one that diverges."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import import_histories, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import more

from replaytest.cli import cli


def test_reordered_code_breaks_the_parked_thread_and_diverges_from_the_finished_one(recorded) -> None:
    spec = "lg_apps.agent_reordered:order_agent"
    result = CliRunner().invoke(cli, ["replay", str(recorded.histories), "--workflows", spec, "--format", "json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [(r["workflow"]["id"], r["status"], r["run_status"], r["in_flight"]) for r in report["results"]] == [
        ("approved", "diverged", "completed", False),
        ("waiting", "diverged", "parked", True),
    ]
    assert (report["summary"]["diverged_in_flight"], report["summary"]["diverged_finished"]) == (1, 1)
    text = CliRunner().invoke(cli, ["replay", str(recorded.histories), "--workflows", spec]).output.splitlines()
    summary = text.index("replayed 2 histories: 0 passed, 2 diverged, 0 stale, 0 error; 0 warning(s)")
    assert text[summary + 1 : summary + 3] == ["in-flight runs that break: 1 (1 parked)", "finished runs that diverge: 1 (1 completed)"]


def test_a_thread_whose_entrypoint_raised_is_a_failed_run(tmp_path: Path) -> None:
    db = tmp_path / "more.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        with pytest.raises(ValueError):
            more.failing_agent.copy(update={"checkpointer": SqliteSaver(conn)}).invoke(4, thread("f"))
    finally:
        conn.close()
    import_histories(db, tmp_path / "out", "--workflows", "lg_apps.more:failing_agent")
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "out/failing_agent-f.json"), "--workflows",
                                      "lg_apps.more:failing_agent", "--format", "json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.output)["results"]
    assert (entry["status"], entry["run_status"], entry["in_flight"]) == ("passed", "failed", False)
