"""Helpers and fixtures of the graph-API tests, imported by name (no conftest.py here: a second folder's
conftest module would shadow tests/langgraph's when both folders run in one process). Real graph-API threads
recorded into real SqliteSaver databases, and their import into histories.

``recorded`` runs the support desk (``graph_apps/support.py``) for real: thread ``refund-A-17`` is left
waiting in ``human_review``, ``refund-B-90`` is approved and completes, ``question-C-3`` (no refund asked)
ends after ``classify``. ``recorded_research`` runs the research desk (``Send`` fan-out, a subgraph) to
its sign-off interrupt. Node bodies write to the effects log, which is how tests tell whether they ran."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from graph_apps import effects, research, support
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.cli import cli

SUPPORT_SPEC = "graph_apps.support:graph"
RESEARCH_SPEC = "graph_apps.research:graph"


def thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def ticket(order_id: str, text: str) -> dict:
    return {"ticket": {"order_id": order_id, "text": text}}


@dataclass(frozen=True)
class Recorded:
    db: Path
    histories: Path
    effects_while_recording: list[str]


def effect_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.fixture
def effects_log(tmp_path: Path) -> Iterator[Path]:
    """Point the node bodies' effects at a fresh file for one test."""
    path = tmp_path / "effects.log"
    effects.EFFECTS = path
    try:
        yield path
    finally:
        effects.EFFECTS = None


def record_support_runs(saver: object) -> None:
    """The support desk's three threads, recorded into whichever saver (SqliteSaver, PostgresSaver, ...)."""
    graph = support.graph.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke(ticket("A-17", "It arrived broken, I want a refund"), thread("refund-A-17"))
    assert "__interrupt__" in graph.invoke(ticket("B-90", "Please refund my order"), thread("refund-B-90"))
    done = graph.invoke(Command(resume="approve"), thread("refund-B-90"))
    assert done["receipt"] == "paid 35.00"
    assert graph.invoke(ticket("C-3", "When does the shop open?"), thread("question-C-3"))["category"] == "question"


def record_research_run(saver: object) -> None:
    """The research desk's thread, left at its sign-off interrupt, recorded into whichever saver."""
    graph = research.graph.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke({"question": "standing desks"}, thread("desks"))


def record_support_threads(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        record_support_runs(SqliteSaver(conn))
    finally:
        conn.close()


def record_research_thread(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        record_research_run(SqliteSaver(conn))
    finally:
        conn.close()


def sqlite_saver_stores_task_paths() -> bool:
    """langgraph-checkpoint-sqlite keeps each write's task path from 3.1.2 on (the oldest supported, 3.0.0, does
    not). Without it a @task call made inside a node cannot be told from a node's step: the importer writes it as
    '?' with NO_TASK_PATHS and exits 2 (docs/design.md says so), which the tests check on such a saver."""
    conn = sqlite3.connect(":memory:")
    try:
        SqliteSaver(conn).setup()
        return "task_path" in {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
    finally:
        conn.close()


NO_TASK_PATHS = ("name no node this importer could recover (written as '?'): this saver stores no task paths and no "
                 "current node's recomputed task id matches (give the graph with --workflows)")


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def import_histories(db: Path, out: Path, *args: str) -> tuple[int, str]:
    code, stdout, stderr = run_cli("import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(out), *args)
    return code, stdout + stderr


def _record(tmp_path_factory: pytest.TempPathFactory, name: str, record, spec: str) -> Recorded:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp(name)
    db = root / "checkpoints.sqlite"
    effects.EFFECTS = root / "effects.log"
    try:
        record(db)
    finally:
        effects.EFFECTS = None
    code, output = import_histories(db, root / "histories", "--workflows", spec, "--no-redact")
    assert code == 0, output
    return Recorded(db, root / "histories", effect_lines(root / "effects.log"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory, "support", record_support_threads, SUPPORT_SPEC)


@pytest.fixture(scope="module")
def recorded_research(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory, "research", record_research_thread, RESEARCH_SPEC)
