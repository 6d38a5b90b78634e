"""``ahistories_from_saver``: ``histories_from_saver`` for LangGraph's async savers, whose connections belong to
the running event loop and cannot be read from synchronous code there.

An ``AsyncSqliteSaver`` is read with the same SQL as ``SqliteThreads`` through its own ``aiosqlite``
connection, an ``AsyncPostgresSaver`` by ``langgraph.postgres.AsyncPostgresThreads`` (the same SQL as
``PostgresThreads``, in one read-only transaction), each holding the saver's lock while it reads. The rows they
fetch are the same ``CheckpointRow``/``WriteRow`` rows the synchronous readers yield, and go through the same
``iter_threads`` and ``write_histories``, so a thread imports to the same history from either kind of saver.
A synchronous saver given to ``ahistories_from_saver`` is read by ``histories_from_saver``. The history files
are written synchronously, after every thread has been read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.importer import (
    SQLITE_CHECKPOINTS_SQL,
    SQLITE_THREADS_SQL,
    SUBGRAPH_CHANNELS,
    CheckpointRow,
    ImportedThread,
    ImportRefused,
    WriteRow,
    current_code,
    histories_from_saver,
    iter_threads,
    sqlite_checkpoint_rows,
    sqlite_subgraph_writes_sql,
    sqlite_write_rows,
    sqlite_writes_sql,
    write_histories,
)

if TYPE_CHECKING:
    from replaytest.history.redact import Redactor


class AsyncThreadSource(Protocol):
    async def thread_ids(self, limit: int | None) -> list[str]: ...

    async def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]: ...

    async def aclose(self) -> None: ...


def _aiosqlite_connection(conn: Any) -> bool:
    return type(conn).__module__.split(".")[0] == "aiosqlite"


def _psycopg_async_connection(conn: Any) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    if isinstance(conn, psycopg.AsyncConnection):
        return True
    try:
        from psycopg_pool import AsyncConnectionPool
    except ImportError:
        return False
    return isinstance(conn, AsyncConnectionPool)


def is_async_saver(saver: Any) -> bool:
    """A saver whose connection is async (``AsyncSqliteSaver``, ``AsyncPostgresSaver``): only readable from
    its event loop."""
    conn = getattr(saver, "conn", None)
    return _aiosqlite_connection(conn) or _psycopg_async_connection(conn)


class AsyncSqliteThreads:
    """Threads of an ``AsyncSqliteSaver``, read with ``SqliteThreads``' SQL on the saver's connection."""

    label = "<AsyncSqliteSaver>"

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.conn = saver.conn
        self.task_path_columns: list[str] = []

    async def open(self) -> None:
        await self.saver.lock.acquire()
        try:
            tables = {row[0] for row in await self._fetch("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
            if not {"checkpoints", "writes"} <= tables:
                raise ImportRefused(f"{self.label}: not a LangGraph SqliteSaver database (no checkpoints/writes tables)")
            self.task_path_columns = [row[1] for row in await self._fetch("PRAGMA table_info(writes)", ())]
        except BaseException:
            self.saver.lock.release()
            raise

    async def aclose(self) -> None:
        self.saver.lock.release()

    async def thread_ids(self, limit: int | None) -> list[str]:
        rows = await self._fetch(SQLITE_THREADS_SQL + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [row[0] for row in rows]

    async def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

        limit = DEFAULT_BUDGET.max_stored_bytes
        checkpoints = await self._fetch(SQLITE_CHECKPOINTS_SQL, (limit, limit, thread_id))
        writes = await self._fetch(sqlite_writes_sql(self.task_path_columns), (limit, thread_id))
        return (sqlite_checkpoint_rows(self.label, thread_id, checkpoints),
                sqlite_write_rows(self.label, thread_id, writes))

    async def subgraph_writes(self, thread_id: str) -> list[WriteRow]:
        """``SqliteThreads.subgraph_writes``, awaited."""
        from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

        sql = sqlite_subgraph_writes_sql(self.task_path_columns)
        rows = await self._fetch(sql, (DEFAULT_BUDGET.max_stored_bytes, thread_id, *SUBGRAPH_CHANNELS))
        return sqlite_write_rows(self.label, thread_id, rows)

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[Any]:
        import sqlite3

        try:
            async with self.conn.execute(sql, params) as cursor:
                return list(await cursor.fetchall())
        except sqlite3.Error as error:
            raise ImportRefused(f"{self.label}: {error}") from None


class _Fetched:
    """One thread's rows, already read: what ``iter_threads`` then turns into a history."""

    def __init__(self, rows: tuple[list[CheckpointRow], list[WriteRow]], subgraph_rows: list[WriteRow] | None) -> None:
        self.rows = rows
        self.subgraph_rows = subgraph_rows

    def subgraph_writes(self, thread_id: str) -> list[WriteRow] | None:
        return self.subgraph_rows

    def thread_ids(self, limit: int | None) -> list[str]:  # pragma: no cover - always given the thread id
        raise AssertionError("the thread id is given")

    def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        return self.rows

    def close(self) -> None:
        pass


async def aiter_threads(
    source: AsyncThreadSource, thread_ids: Sequence[str], limit: int | None, code: Any, graphs: Sequence[Any] = ()
) -> list[ImportedThread | ImportRefused]:
    """``iter_threads`` for an async source: each selected thread's history, or why it was refused."""
    imported: list[ImportedThread | ImportRefused] = []
    for thread_id in thread_ids or await source.thread_ids(limit):
        try:
            rows = await source.read(thread_id)
            read_subgraphs = getattr(source, "subgraph_writes", None)
            subgraph_rows = await read_subgraphs(thread_id) if read_subgraphs is not None else None
        except ImportRefused as error:
            imported.append(error)
            continue
        except RecursionError:
            imported.append(ImportRefused(f"thread {thread_id!r}: a stored value nests too deeply to import"))
            continue
        imported.extend(iter_threads(_Fetched(rows, subgraph_rows), [thread_id], None, code, graphs))
    return imported


async def _async_source(saver: Any) -> AsyncThreadSource:
    from replaytest.plugins.langgraph import postgres as langgraph_postgres

    if _aiosqlite_connection(saver.conn):
        source = AsyncSqliteThreads(saver)
        await source.open()
        return source
    if langgraph_postgres.is_async_postgres_saver(saver):
        return await langgraph_postgres.AsyncPostgresThreads.of_saver(saver)
    raise ImportRefused(
        f"{type(saver).__name__}: ahistories_from_saver reads AsyncSqliteSaver and AsyncPostgresSaver; "
        "give another saver's synchronous twin to histories_from_saver"
    )


async def ahistories_from_saver(
    saver: Any, out: Path, *, workflows: Iterable[Any] = (), task_names: Iterable[str] = (),
    thread_ids: Sequence[str] = (), limit: int | None = None, redactor: Redactor | None = None,
) -> tuple[list[tuple[Path, ImportedThread]], list[str]]:
    """``histories_from_saver`` for an ``AsyncSqliteSaver`` or ``AsyncPostgresSaver`` (await it on the
    saver's event loop); the same arguments, the same result."""
    if not is_async_saver(saver):
        return histories_from_saver(
            saver, out, workflows=workflows, task_names=task_names, thread_ids=thread_ids, limit=limit, redactor=redactor
        )
    problem = lg.version_problem()
    if problem:
        raise ImportRefused(problem)
    from replaytest.plugins.langgraph.graph_import import graph_code

    workflows = list(workflows)
    code = current_code(workflows, task_names)
    graphs = graph_code(workflows)
    source = await _async_source(saver)
    try:
        imported = await aiter_threads(source, thread_ids, limit, code, graphs)
    finally:
        await source.aclose()
    return write_histories(imported, out, redactor)
