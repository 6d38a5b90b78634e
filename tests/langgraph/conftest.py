"""Real LangGraph runs recorded into a real SqliteSaver database, and their import into histories.

``recorded`` runs the order agent (``lg_apps/agent.py``) for real: thread ``approved`` is interrupted for
approval, resumed with ``Command(resume=…)`` and completes; thread ``waiting`` is left at its interrupt.
Task bodies write to an effects file while recording, which is how the tests tell whether they ran."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import agent, tasks

from replaytest.cli import cli

AGENT_SPEC = "lg_apps.agent:order_agent"
# LangGraph's get_config() raises inside asyncio tasks before Python 3.11, so an async entrypoint's
# @task calls cannot even be recorded there.
ASYNC_NEEDS_311 = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="LangGraph runs @task calls of async entrypoints on Python 3.11+ only"
)


def thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


@dataclass(frozen=True)
class Recorded:
    db: Path
    histories: Path
    effects_while_recording: list[str]


@pytest.fixture
def effects(tmp_path: Path) -> Iterator[Path]:
    """Point the task bodies' effects at a fresh file for one test."""
    path = tmp_path / "effects.log"
    tasks.EFFECTS = path
    try:
        yield path
    finally:
        tasks.EFFECTS = None


def effect_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def record_order_runs(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent.order_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        parked = graph.invoke({"item": "lamp"}, thread("approved"))
        assert "__interrupt__" in parked
        done = graph.invoke(Command(resume={"approved": True}), thread("approved"))
        assert done["receipt"] == {"sent": True, "summary": "intro about the lamp / body about the lamp"}
        assert "__interrupt__" in graph.invoke({"item": "desk"}, thread("waiting"))
    finally:
        conn.close()


def import_histories(db: Path, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(out), *args]
    )
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("langgraph")
    db = root / "checkpoints.sqlite"
    tasks.EFFECTS = root / "effects.log"
    try:
        record_order_runs(db)
    finally:
        tasks.EFFECTS = None
    code, output = import_histories(db, root / "histories", "--workflows", AGENT_SPEC)
    assert code == 0, output
    return Recorded(db, root / "histories", effect_lines(root / "effects.log"))
