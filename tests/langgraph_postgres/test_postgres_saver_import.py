"""Threads recorded by a real PostgresSaver (on the test Postgres) imported with ``histories_from_saver`` and
through the saver's public API (``SaverThreads``): Postgres stores each checkpoint as JSONB, which keeps
object keys in its own order (shorter keys first), not in the order LangGraph wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from conftest import postgres_saver
from langgraph.types import Command
from lg_apps import agent

from replaytest.history import load_history
from replaytest.plugins.langgraph_import import CurrentCode, SaverThreads, histories_from_saver, iter_threads

LAMP_RECEIPT = {"sent": True, "summary": "intro about the lamp / body about the lamp"}
APPROVED_EVENTS = [
    ("step", "fetch_price", 40.0), ("step", "draft", "intro about the lamp"), ("step", "draft", "body about the lamp"),
    ("step", "notify", LAMP_RECEIPT), ("signal", "interrupt", {"approved": True}),
]


def thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def record_resumed_then_completed(saver: object) -> None:
    graph = agent.order_agent.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke({"item": "lamp"}, thread("approved"))
    assert graph.invoke(Command(resume={"approved": True}), thread("approved"))["receipt"] == LAMP_RECEIPT


def test_postgres_reorders_versions_seen_so_its_first_key_is_not_the_entrypoint(postgres_url: str) -> None:
    """The stored fact the importer once relied on: the completed run's loop checkpoint lists the nodes it
    saw, the @task names among them, and JSONB puts the shorter names first."""
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
    with psycopg.connect(postgres_url) as conn:
        [(seen,)] = conn.execute(
            "SELECT checkpoint -> 'versions_seen' FROM checkpoints WHERE metadata ->> 'source' = 'loop'"
        ).fetchall()
    assert list(seen) == ["draft", "notify", "__input__", "fetch_price", "order_agent", "__interrupt__"]


def test_histories_from_saver_imports_a_resumed_then_completed_thread(postgres_url: str, tmp_path: Path) -> None:
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
        written, refused = histories_from_saver(saver, tmp_path, workflows=[agent.order_agent])
        # The saver's connection is back out of the import's read-only transaction: it still records.
        assert "__interrupt__" in agent.order_agent.copy(update={"checkpointer": saver}).invoke({"item": "desk"}, thread("later"))
    assert refused == []
    [(path, item)] = written
    assert path.name == "order_agent-approved.json" and item.notes == []
    history = load_history(path)
    assert (history.workflow.type, history.status) == ("order_agent", "completed")
    assert [(e.kind, e.name, e.result) for e in history.events] == APPROVED_EVENTS
    assert [e.extra.get("call_index") for e in history.events[:4]] == [0, 1, 2, 3]
    assert history.result == {"price": 40.0, "intro": "intro about the lamp", "body": "body about the lamp",
                              "receipt": LAMP_RECEIPT}


def test_the_saver_api_without_task_paths_finds_the_entrypoint_whatever_the_key_order(postgres_url: str) -> None:
    """``SaverThreads`` (any saver, no task paths) names the entrypoint from the node that consumed the
    input channel, not from the first key of ``versions_seen``."""
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
        code = CurrentCode(frozenset({"fetch_price", "draft", "notify"}), frozenset({"order_agent"}))
        [imported] = list(iter_threads(SaverThreads(saver), (), None, code))
    assert not isinstance(imported, Exception), imported
    document = json.loads(json.dumps(imported.document))
    assert (document["workflow"]["type"], document["status"]) == ("order_agent", "completed")
    assert [(e["kind"], e["name"], e.get("result")) for e in document["events"]] == APPROVED_EVENTS
