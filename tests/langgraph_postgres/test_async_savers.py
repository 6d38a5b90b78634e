"""The async savers through the same readers: threads recorded with ``ainvoke`` into an ``AsyncSqliteSaver``
and an ``AsyncPostgresSaver`` (on the test Postgres) import with ``ahistories_from_saver`` to the histories the
same runs give through a synchronous SqliteSaver; ``histories_from_saver`` refuses an async saver, saying
what to call instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from postgres_server import PostgresServer
from saver_kit import agent, fresh_database, sqlite_saver, thread, without_record_time_ids

from replaytest.plugins.langgraph.async_savers import ahistories_from_saver
from replaytest.plugins.langgraph.importer import ImportRefused, histories_from_saver

NAMES = ["order_agent-approved.json", "order_agent-waiting.json"]


async def arecord(saver: object) -> None:
    graph = agent.order_agent.copy(update={"checkpointer": saver})
    await graph.ainvoke({"item": "lamp"}, thread("approved"))
    await graph.ainvoke(Command(resume={"approved": True}), thread("approved"))
    await graph.ainvoke({"item": "desk"}, thread("waiting"))


def synchronous_histories(tmp_path: Path) -> dict[str, dict]:
    with sqlite_saver(tmp_path / "sync.sqlite") as saver:
        graph = agent.order_agent.copy(update={"checkpointer": saver})
        graph.invoke({"item": "lamp"}, thread("approved"))
        graph.invoke(Command(resume={"approved": True}), thread("approved"))
        graph.invoke({"item": "desk"}, thread("waiting"))
        written, refused = histories_from_saver(saver, tmp_path / "sync", workflows=[agent.order_agent])
    assert refused == [] and sorted(p.name for p, _ in written) == NAMES
    documents = {p.name: without_record_time_ids(json.loads(p.read_text())) for p, _ in written}
    # The SQL reader lists the nested runs it looked for (none here); the async savers, read through their API,
    # do not look for them, and their histories say nothing of them.
    assert {name: document.pop("nested_namespaces") for name, document in documents.items()} == dict.fromkeys(NAMES, [])
    return documents


def imported(written: list, refused: list) -> dict[str, dict]:
    assert refused == []
    return {path.name: without_record_time_ids(json.loads(path.read_text())) for path, _ in written}


def test_an_async_sqlite_saver_imports_like_the_sync_one(tmp_path: Path) -> None:
    async def run() -> tuple[list, list]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")) as saver:
            await arecord(saver)
            result = await ahistories_from_saver(saver, tmp_path / "async", workflows=[agent.order_agent])
            # The saver is still usable afterwards: the import released its lock.
            assert (await saver.aget_tuple(thread("waiting"))) is not None
            return result

    histories = imported(*asyncio.run(run()))
    assert sorted(histories) == NAMES
    assert histories == synchronous_histories(tmp_path)
    assert (histories["order_agent-approved.json"]["status"], histories["order_agent-waiting.json"]["status"]) == (
        "completed", "parked")


def test_an_async_postgres_saver_imports_like_the_sync_sqlite_one(postgres: PostgresServer, tmp_path: Path) -> None:
    postgres_url = fresh_database(postgres)
    async def run() -> tuple[list, list]:
        async with AsyncPostgresSaver.from_conn_string(postgres_url) as saver:
            await saver.setup()
            await arecord(saver)
            result = await ahistories_from_saver(saver, tmp_path / "async", workflows=[agent.order_agent])
            await arecord_more(saver)  # the connection is back out of the import's read-only transaction
            return result

    async def arecord_more(saver: object) -> None:
        graph = agent.order_agent.copy(update={"checkpointer": saver})
        await graph.ainvoke({"item": "chair"}, thread("later"))

    histories = imported(*asyncio.run(run()))
    assert sorted(histories) == NAMES
    assert histories == synchronous_histories(tmp_path)
    assert histories["order_agent-approved.json"]["status"] == "completed"


def test_histories_from_saver_refuses_an_async_saver_and_names_the_async_twin(tmp_path: Path) -> None:
    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")) as saver:
            with pytest.raises(ImportRefused, match=r"AsyncSqliteSaver is an async saver: use await "
                               r"replaytest\.plugins\.langgraph\.async_savers\.ahistories_from_saver\(saver, out, \.\.\.\)"):
                histories_from_saver(saver, tmp_path / "out")

    asyncio.run(run())
    assert not (tmp_path / "out").exists()
