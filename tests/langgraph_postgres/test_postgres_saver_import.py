"""Threads recorded by a real PostgresSaver (on the test Postgres) imported with ``histories_from_saver`` and
through the saver's public API (``SaverThreads``): Postgres stores each checkpoint as JSONB, which keeps
object keys in its own order (shorter keys first), not in the order LangGraph wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from langgraph.types import Command
from postgres_server import PostgresServer
from saver_kit import agent, fresh_database, postgres_saver, thread

from replaytest.history import load_history
from replaytest.plugins.langgraph.importer import CurrentCode, SaverThreads, histories_from_saver, iter_threads

LAMP_RECEIPT = {"sent": True, "summary": "intro about the lamp / body about the lamp"}
APPROVED_EVENTS = [
    ("step", "fetch_price", 40.0), ("step", "draft", "intro about the lamp"), ("step", "draft", "body about the lamp"),
    ("step", "notify", LAMP_RECEIPT), ("signal", "interrupt", {"approved": True}),
]


def record_resumed_then_completed(saver: object) -> None:
    graph = agent.order_agent.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke({"item": "lamp"}, thread("approved"))
    assert graph.invoke(Command(resume={"approved": True}), thread("approved"))["receipt"] == LAMP_RECEIPT


def test_postgres_reorders_versions_seen_so_its_first_key_is_not_the_entrypoint(postgres: PostgresServer) -> None:
    """The stored fact the importer once relied on: the completed run's loop checkpoint lists the nodes it
    saw, the @task names among them, and JSONB puts the shorter names first."""
    postgres_url = fresh_database(postgres)
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
    with psycopg.connect(postgres_url) as conn:
        [(seen,)] = conn.execute(
            "SELECT checkpoint -> 'versions_seen' FROM checkpoints WHERE metadata ->> 'source' = 'loop'"
        ).fetchall()
    assert list(seen) == ["draft", "notify", "__input__", "fetch_price", "order_agent", "__interrupt__"]


def test_histories_from_saver_imports_a_resumed_then_completed_thread(postgres: PostgresServer, tmp_path: Path) -> None:
    postgres_url = fresh_database(postgres)
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
        written, refused = histories_from_saver(saver, tmp_path, workflows=[agent.order_agent])
        # The saver's connection is back out of the import's read-only transaction: it still records.
        later = agent.order_agent.copy(update={"checkpointer": saver}).invoke({"item": "desk"}, thread("later"))
        assert "__interrupt__" in later
    assert refused == []
    [(path, item)] = written
    assert path.name == "order_agent-approved.json" and item.notes == []
    history = load_history(path)
    assert (history.workflow.type, history.status) == ("order_agent", "completed")
    assert [(e.kind, e.name, e.result) for e in history.events] == APPROVED_EVENTS
    assert [e.extra.get("call_index") for e in history.events[:4]] == [0, 1, 2, 3]
    assert history.result == {"price": 40.0, "intro": "intro about the lamp", "body": "body about the lamp",
                              "receipt": LAMP_RECEIPT}


def test_the_saver_api_without_task_paths_finds_the_entrypoint_whatever_the_key_order(postgres: PostgresServer) -> None:
    """``SaverThreads`` (any saver, no task paths) names the entrypoint from the node that consumed the
    input channel, not from the first key of ``versions_seen``."""
    postgres_url = fresh_database(postgres)
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
        code = CurrentCode(frozenset({"fetch_price", "draft", "notify"}), frozenset({"order_agent"}))
        [imported] = list(iter_threads(SaverThreads(saver), (), None, code))
    assert not isinstance(imported, Exception), imported
    document = json.loads(json.dumps(imported.document))
    assert (document["workflow"]["type"], document["status"]) == ("order_agent", "completed")
    assert [(e["kind"], e["name"], e.get("result")) for e in document["events"]] == APPROVED_EVENTS


def test_a_saver_on_a_connection_pool_is_read_the_same_way(postgres: PostgresServer, tmp_path: Path) -> None:
    postgres_url = fresh_database(postgres)
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    # As LangGraph's documentation sets a pool up for the saver.
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(postgres_url, kwargs=kwargs, min_size=1, max_size=2, open=True) as pool:
        saver = PostgresSaver(pool)
        saver.setup()
        record_resumed_then_completed(saver)
        written, refused = histories_from_saver(saver, tmp_path, workflows=[agent.order_agent])
    assert refused == []
    [(path, _)] = written
    history = load_history(path)
    assert (path.name, history.status) == ("order_agent-approved.json", "completed")
    assert [(e.kind, e.name, e.result) for e in history.events] == APPROVED_EVENTS


def test_a_corrupt_write_refuses_its_thread_alone_naming_the_write(postgres: PostgresServer, tmp_path: Path) -> None:
    postgres_url = fresh_database(postgres)
    with postgres_saver(postgres_url) as saver:
        record_resumed_then_completed(saver)
        agent.order_agent.copy(update={"checkpointer": saver}).invoke({"item": "desk"}, thread("waiting"))
    with psycopg.connect(postgres_url) as conn:
        # A msgpack array declaring 4,294,967,295 items in five bytes: the task result of the price lookup.
        [(checkpoint_id, task_id)] = conn.execute(
            "UPDATE checkpoint_writes SET blob = '\\xddffffffff'::bytea WHERE thread_id = 'approved' "
            "AND task_path LIKE '%, 0000000000, 0000000001' RETURNING checkpoint_id, task_id"
        ).fetchall()
    with postgres_saver(postgres_url) as saver:
        written, refused = histories_from_saver(saver, tmp_path, workflows=[agent.order_agent])
    assert [path.name for path, _ in written] == ["order_agent-waiting.json"]
    [reason] = refused
    assert reason.startswith(
        f"<PostgresSaver>: thread 'approved' checkpoint {checkpoint_id} write __return__ of task {task_id}: "
        "malformed msgpack: the array at byte 0 declares 4,294,967,295 item(s)"
    ), reason
