"""``replaytest import refresh`` on a real SqliteSaver: the import records how it was made (relative to the
folder it ran from), the agent goes on for real (a parked thread resumes, a new thread starts), and the
refresh, run from elsewhere with the folder given relative to there, imports again: one added, one changed,
one unchanged. A saver that cannot be read changes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import AGENT_SPEC, record_order_runs, thread
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import agent

from replaytest.cli import cli
from replaytest.history import load_history


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_refresh_imports_the_threads_again_with_the_recorded_command(
    effects: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    record_order_runs(project / "checkpoints.sqlite")
    monkeypatch.chdir(project)
    code, output = _invoke("import", "langgraph", "--checkpointer", "sqlite:///checkpoints.sqlite",
                           "--workflows", AGENT_SPEC, "--out", "histories")
    assert code == 0, output
    histories = project / "histories"
    record = json.loads((histories / ".replaytest-imports").read_text(encoding="utf-8"))
    assert record["imports"] == [{
        "engine": "langgraph", "cwd": "..", "left_out": [],
        "command": ["--checkpointer", "sqlite:///checkpoints.sqlite", "--workflows", AGENT_SPEC],
        "files": ["order_agent-approved.json", "order_agent-waiting.json"],
    }]
    approved = (histories / "order_agent-approved.json").read_bytes()

    # The agent goes on: the parked thread is approved and finishes, a new thread stops at its interrupt.
    conn = sqlite3.connect(project / "checkpoints.sqlite", check_same_thread=False)
    try:
        graph = agent.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert graph.invoke(Command(resume={"approved": True}), thread("waiting"))["receipt"]["sent"]
        assert "__interrupt__" in graph.invoke({"item": "chair"}, thread("third"))
    finally:
        conn.close()

    # Run from elsewhere, with the folder given relative to there: the recorded folder, not this one, decides
    # what the relative URL means, and the histories land in the folder named (not under the recorded one).
    monkeypatch.chdir(tmp_path)
    code, output = _invoke("import", "refresh", "project/histories")
    assert code == 0, output
    assert (f"replaytest import langgraph --checkpointer sqlite:///checkpoints.sqlite --workflows {AGENT_SPEC}: "
            "1 added, 1 changed, 1 unchanged, 0 gone") in output
    assert not (project / "project").exists()
    # What the import says of each file names where it is now, not the hidden folder it was written to first.
    assert "project/histories/order_agent-third.json: order_agent thread 'third' parked" in output
    assert ".replaytest-refresh-" not in output
    assert load_history(histories / "order_agent-waiting.json").status == "completed"
    assert load_history(histories / "order_agent-third.json").status == "parked"
    assert (histories / "order_agent-approved.json").read_bytes() == approved
    assert not [path for path in histories.iterdir() if path.name.startswith(".replaytest-refresh-")]
    files = json.loads((histories / ".replaytest-imports").read_text(encoding="utf-8"))["imports"][0]["files"]
    assert files == ["order_agent-approved.json", "order_agent-third.json", "order_agent-waiting.json"]

    # A saver that cannot be read: the import fails, and every file is as it was.
    before = _contents(histories)
    (project / "checkpoints.sqlite").write_bytes(b"not a database")
    code, output = _invoke("import", "refresh", str(histories))
    assert code == 2, output
    assert "not refreshed, nothing changed: the import exited 2" in output
    assert _contents(histories) == before
