"""A task the entrypoint reaches through a project helper function counts for the prompts a parked thread
will still use: the helper agent (``lg_apps/helper_agent.py``) parks after ``first_draft`` used REPLY; its next
task, ``polish``, called from the helper ``finish``, renders REPLY again. Recorded on the real engine
(SqliteSaver); a REPLY edited since must fail the parked thread by ``prompts-pending``."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps import helper_agent

from replaytest.cli import cli
from replaytest.plugins.langgraph.prompts import with_prompts

APPS = Path(__file__).resolve().parent / "lg_apps"
SPEC = "lg_apps.helper_agent:helper_agent"


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("langgraph-helper-prompts")
    conn = sqlite3.connect(root / "threads.sqlite", check_same_thread=False)
    try:
        graph = helper_agent.helper_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        assert "__interrupt__" in graph.invoke("my invoice", with_prompts({"configurable": {"thread_id": "parked"}}, graph))
    finally:
        conn.close()
    out = root / "histories"
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{root / 'threads.sqlite'}",
                                      "--out", str(out), "--workflows", SPEC])
    assert result.exit_code == 0, result.output
    return out


def replay(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, texts: str, *args: str) -> dict:
    package = "helper_agent_copy_" + tmp_path.name.replace("-", "_")
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "helper_agent.py", target / "helper_agent.py")
    (target / "helper_texts.py").write_text(texts)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(cli, ["replay", str(histories), "--workflows", f"{package}.helper_agent:helper_agent",
                                      "--format", "json", *args])
    sys.modules.pop(f"{package}.helper_agent", None)
    [found] = json.loads(result.output)["results"]
    return found


def test_a_changed_prompt_of_a_task_reached_through_a_helper_fails_the_parked_thread(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = (APPS / "helper_texts.py").read_text()
    same = replay(tmp_path / "same", histories, monkeypatch, texts)
    assert same["status"] == "passed", same
    # first_draft (recorded) used REPLY, a kept result (a warning under --prompts warn); polish, not run yet, uses it
    # again: the edit is what the thread will meet, which prompts-pending fails.
    edited = replay(tmp_path / "edited", histories, monkeypatch, texts.replace("friendly", "short"), "--prompts", "warn")
    [kept] = edited["warnings"]
    assert kept["message"].startswith("task 'first_draft' now uses prompt version")
    assert edited["status"] == "diverged", edited
    assert edited["divergence"]["kind"] == "prompt-drift"
    assert "will use reply" in edited["divergence"]["message"]
    assert "again, used under" in edited["divergence"]["message"]
    assert edited["divergence"]["source"]["path"].endswith("helper_agent.py")
