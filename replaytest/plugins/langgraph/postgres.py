"""LangGraph's Postgres checkpointer read for ``replaytest import langgraph``: what ``PostgresSaver`` and
``AsyncPostgresSaver`` (langgraph-checkpoint-postgres) store, read with plain SQL into the importer's rows
(``CheckpointRow``, ``WriteRow`` of ``langgraph.importer``), the same rows ``SqliteThreads`` yields.

What the saver stores, in the tables its migrations create on the connection's ``search_path`` (replaytest
never runs those migrations, never writes, and reads inside one read-only, repeatable-read transaction, so
every thread comes from the same snapshot of the database and a saver writing meanwhile changes nothing):

* ``checkpoints``: one row per checkpoint, the checkpoint as JSONB with its primitive channel values inline
  (``channel_values``) and ``channel_versions`` naming the version of every channel; ``metadata`` as JSONB.
  JSONB does not keep object keys in the order they were written, so nothing here relies on key order.
* ``checkpoint_blobs``: the other channel values, one row per (channel, version), ``type`` and ``blob`` as the
  saver's serializer wrote them (``type`` ``empty``: the channel held no value at that version).
* ``checkpoint_writes``: one row per write, with its ``task_path`` (added by the saver's last migration; a
  database set up before it has the column empty, and call indexes then come from the task ids).

Values are decoded by ``langgraph.values`` (no imports, no unpickling) within the decode budget: Postgres
measures each cell (``octet_length``) and a cell over ``max_stored_bytes`` is never fetched.
``PostgresThreads`` reads through a connection of its own (a ``postgresql://`` URL) or a ``PostgresSaver``'s
connection or pool; ``AsyncPostgresThreads`` is its twin for an ``AsyncPostgresSaver``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.importer import (
    SUBGRAPH_CHANNELS,
    CheckpointRow,
    ImportRefused,
    WriteRow,
    _check_size,
    _checkpoint_row,
    _decode,
    _shown,
)

TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
_EMPTY_BLOB = "empty"  # the blob type the saver writes for a channel without a value at that version
# SET TRANSACTION must be the transaction's first statement; it also makes any write fail in Postgres itself.
_READ_ONLY = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"

# The tables the saver's unqualified names resolve to on the search_path, and their columns: from the catalog,
# which (unlike information_schema) shows them to a role that may not read them, so Postgres can say so.
_TABLES_SQL = (
    "SELECT c.relname, a.attname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a "
    "ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
    "WHERE c.oid IN (SELECT to_regclass(name) FROM unnest(%s::text[]) AS name)"
)
_THREADS_SQL = (
    "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints WHERE checkpoint_ns = '' "
    "GROUP BY thread_id ORDER BY latest DESC, thread_id"
)
# Parameters: the decode budget twice, the thread id. The JSONB is measured as the text it would be sent as.
_CHECKPOINTS_SQL = (
    "SELECT checkpoint_id, parent_checkpoint_id, "
    "CASE WHEN octet_length(checkpoint::text) <= %s THEN checkpoint END, octet_length(checkpoint::text), "
    "CASE WHEN octet_length(metadata::text) <= %s THEN metadata END, octet_length(metadata::text) "
    "FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id"
)
# Parameters: the thread id.
_NAMESPACES_SQL = "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = %s AND checkpoint_ns != '' ORDER BY 1"
_BLOBS_SQL = (
    "SELECT channel, version, type, CASE WHEN octet_length(blob) <= %s THEN blob END, octet_length(blob) "
    "FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = ''"
)


def _writes_sql(has_task_path: bool) -> str:
    """Parameters: the decode budget, the thread id. Ordered as the saver orders a checkpoint's pending writes."""
    task_path, order = ("task_path", "task_path, ") if has_task_path else ("NULL", "")
    return (
        f"SELECT checkpoint_id, task_id, {task_path}, idx, channel, type, "
        "CASE WHEN octet_length(blob) <= %s THEN blob END, octet_length(blob) "
        f"FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id, {order}task_id, idx"
    )


def shown_url(url: str) -> str:
    """A ``postgresql://`` URL for messages: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _budget() -> int:
    from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

    return DEFAULT_BUDGET.max_stored_bytes


def _schema_problem(label: str, rows: Iterable[Sequence[Any]]) -> tuple[str | None, bool]:
    """(why these tables are not a PostgresSaver's, whether writes have a task_path column)."""
    columns: dict[str, set[str]] = {}
    for table, column in rows:
        columns.setdefault(table, set()).add(column)
    missing = [table for table in TABLES if table not in columns]
    if missing:
        return (
            f"{label}: not a LangGraph PostgresSaver database (no {', '.join(missing)} table(s) on its search_path; "
            "the saver's setup() creates them, replaytest only reads)",
            False,
        )
    return None, "task_path" in columns["checkpoint_writes"]


class _RowDecoder:
    """Turns the fetched rows of one thread into the importer's rows (shared by the sync and async readers)."""

    def __init__(self, label: str) -> None:
        self.label = label

    def checkpoints(
        self, thread_id: str, rows: Iterable[Sequence[Any]], blob_rows: Iterable[Sequence[Any]]
    ) -> list[CheckpointRow]:
        blobs = {(channel, version): (type_name, blob, size) for channel, version, type_name, blob, size in blob_rows}
        decoded: dict[tuple[str, str], Any] = {}
        checkpoints = []
        for checkpoint_id, parent_id, checkpoint, checkpoint_size, metadata, metadata_size in rows:
            where = f"{self.label}: thread {thread_id!r} checkpoint {_shown(checkpoint_id)}"
            _check_size(checkpoint_size, where, "checkpoint")
            _check_size(metadata_size, where, "metadata")
            if not isinstance(checkpoint, dict):
                raise ImportRefused(f"{where}: the checkpoint is a JSON {type(checkpoint).__name__}, not an object")
            versions = checkpoint.get("channel_versions") or {}
            if not isinstance(versions, dict):
                raise ImportRefused(f"{where}: its channel_versions is {type(versions).__name__}, not an object")
            values = dict(checkpoint.get("channel_values") or {})
            for channel, version in versions.items():
                key = (channel, str(version))
                if key not in blobs:
                    continue  # an inline primitive value, or none
                type_name, blob, size = blobs[key]
                if type_name == _EMPTY_BLOB:
                    values.pop(channel, None)
                    continue
                if key not in decoded:
                    blob_where = f"{where} channel {_shown(channel)} version {_shown(version)}"
                    _check_size(size, blob_where, "value")
                    decoded[key] = _decode(type_name, blob, blob_where)
                values[channel] = decoded[key]
            full = {**checkpoint, "channel_values": values}
            checkpoints.append(_checkpoint_row(checkpoint_id, parent_id, full, metadata or {}, where))
        return checkpoints

    def writes(self, thread_id: str, rows: Iterable[Sequence[Any]]) -> list[WriteRow]:
        writes = []
        for checkpoint_id, task_id, task_path, idx, channel, type_name, blob, size in rows:
            where = (f"{self.label}: thread {thread_id!r} checkpoint {_shown(checkpoint_id)} "
                     f"write {_shown(channel)} of task {_shown(task_id)}")
            _check_size(size, where, "value")
            if task_path == "" and task_id != lg.NULL_TASK_ID:
                task_path = None  # written before the saver's task_path migration: the column's default
            writes.append(WriteRow(checkpoint_id, task_id, task_path, idx, channel, _decode(type_name, blob, where)))
        return writes


def _pool_types() -> tuple[Any, Any] | None:
    try:
        from psycopg_pool import AsyncConnectionPool, ConnectionPool
    except ImportError:
        return None
    return ConnectionPool, AsyncConnectionPool


class PostgresThreads:
    """Threads of a ``PostgresSaver`` database, read with plain SQL in one read-only transaction that
    lasts until ``close()``. ``connect(url)`` opens a connection of its own; ``of_saver(saver)`` reads
    through a ``PostgresSaver``'s connection (or a connection of its pool), holding the saver's lock."""

    def __init__(self, conn: Any, label: str, cleanup: contextlib.ExitStack) -> None:
        import psycopg

        self.conn = conn
        self.decoder = _RowDecoder(label)
        self.cleanup = cleanup
        try:
            # force_rollback: whatever happens, the transaction ends in a rollback, never a commit.
            cleanup.enter_context(conn.transaction(force_rollback=True))
            conn.execute(_READ_ONLY)
            problem, self.has_task_path = _schema_problem(label, self._rows(_TABLES_SQL, (list(TABLES),)))
        except psycopg.Error as error:
            cleanup.close()
            raise ImportRefused(f"{label}: {_error_text(error)}") from None
        except BaseException:
            cleanup.close()
            raise
        if problem:
            cleanup.close()
            raise ImportRefused(problem)

    @classmethod
    def connect(cls, url: str) -> PostgresThreads:
        import psycopg

        label = shown_url(url)
        cleanup = contextlib.ExitStack()
        try:
            conn = cleanup.enter_context(psycopg.connect(url, autocommit=True, connect_timeout=30))
        except psycopg.Error as error:
            raise ImportRefused(f"{label}: cannot connect: {_error_text(error)}") from None
        return cls(conn, label, cleanup)

    @classmethod
    def of_saver(cls, saver: Any) -> PostgresThreads:
        import psycopg

        label = "<PostgresSaver>"
        cleanup = contextlib.ExitStack()
        try:
            cleanup.enter_context(saver.lock)
            conn = saver.conn
            pools = _pool_types()
            if pools is not None and isinstance(conn, pools[0]):
                conn = cleanup.enter_context(conn.connection())
        except psycopg.Error as error:
            cleanup.close()
            raise ImportRefused(f"{label}: {_error_text(error)}") from None
        except BaseException:
            cleanup.close()
            raise
        return cls(conn, label, cleanup)

    def close(self) -> None:
        self.cleanup.close()

    def thread_ids(self, limit: int | None) -> list[str]:
        """Threads, most recently checkpointed first."""
        rows = self._fetch(_THREADS_SQL + (" LIMIT %s" if limit else ""), (limit,) if limit else ())
        return [row[0] for row in rows]

    def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        checkpoints, blobs, writes = self._fetch_all(_thread_queries(thread_id, self.has_task_path))
        return self.decoder.checkpoints(thread_id, checkpoints, blobs), self.decoder.writes(thread_id, writes)

    # Runs in namespaces of their own (nested runs, subgraphs): ``langgraph.nested.NamespaceSource``.
    def namespaces(self, thread_id: str) -> list[str]:
        return [row[0] for row in self._fetch(_NAMESPACES_SQL, (thread_id,))]

    def read_namespace(self, thread_id: str, namespace: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        checkpoints, blobs, writes = self._fetch_all(_thread_queries(thread_id, self.has_task_path, namespace))
        return self.decoder.checkpoints(thread_id, checkpoints, blobs), self.decoder.writes(thread_id, writes)

    def write_order(self, thread_id: str, namespace: str, checkpoint_id: str | None) -> dict[str, int] | None:
        return None  # Postgres keeps no order of writes across tasks

    def subgraph_writes(self, thread_id: str) -> list[WriteRow]:
        """The prompt records, interrupts and resumes in the thread's subgraph namespaces
        (``importer.SqliteThreads.subgraph_writes``)."""
        sql = _writes_sql(self.has_task_path).replace("checkpoint_ns = ''", "checkpoint_ns != '' AND channel = ANY(%s)")
        return self.decoder.writes(thread_id, self._fetch(sql, (_budget(), thread_id, list(SUBGRAPH_CHANNELS))))

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._fetch_all([(sql, params)])[0]

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._fetch_all([(sql, params)], refuse=False)[0]

    def _fetch_all(self, queries: Sequence[tuple[str, Sequence[Any]]], refuse: bool = True) -> list[list[Any]]:
        """Each query's rows as tuples, whatever row factory the saver's connection was opened with
        (PostgresSaver uses dict rows); pipelined, so a thread's queries cost one round trip, where libpq can."""
        import psycopg
        from psycopg.rows import tuple_row

        try:
            with contextlib.ExitStack() as stack:
                if psycopg.Pipeline.is_supported():
                    stack.enter_context(self.conn.pipeline())
                cursors = [stack.enter_context(self.conn.cursor(row_factory=tuple_row)) for _ in queries]
                for cursor, (sql, params) in zip(cursors, queries):
                    cursor.execute(sql, params)
                return [list(cursor.fetchall()) for cursor in cursors]
        except psycopg.Error as error:
            if not refuse:
                raise
            raise ImportRefused(f"{self.decoder.label}: {_error_text(error)}") from None


def _thread_queries(thread_id: str, has_task_path: bool, namespace: str = "") -> list[tuple[str, Sequence[Any]]]:
    """A thread's checkpoints, blobs and writes (what ``_RowDecoder`` takes), each cell within the budget; of
    the root namespace, or of ``namespace`` (a nested run's or a subgraph's)."""
    budget = _budget()
    queries: list[tuple[str, Sequence[Any]]] = [
        (_CHECKPOINTS_SQL, (budget, budget, thread_id)),
        (_BLOBS_SQL, (budget, thread_id)),
        (_writes_sql(has_task_path), (budget, thread_id)),
    ]
    if not namespace:
        return queries
    return [(sql.replace("checkpoint_ns = ''", "checkpoint_ns = %s"), (*params, namespace)) for sql, params in queries]


async def _async_rows(conn: Any, sql: str, params: Sequence[Any]) -> list[Any]:
    from psycopg.rows import tuple_row

    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(sql, params)
        return list(await cursor.fetchall())


class AsyncPostgresThreads:
    """``PostgresThreads`` for an ``AsyncPostgresSaver`` (its ``AsyncConnection`` or a connection of its
    pool, holding the saver's lock): ``await AsyncPostgresThreads.of_saver(saver)``, then ``await`` its
    ``thread_ids`` and ``read``, and ``await aclose()``."""

    def __init__(self, conn: Any, label: str, cleanup: contextlib.AsyncExitStack, has_task_path: bool) -> None:
        self.conn = conn
        self.decoder = _RowDecoder(label)
        self.cleanup = cleanup
        self.has_task_path = has_task_path

    @classmethod
    async def of_saver(cls, saver: Any) -> AsyncPostgresThreads:
        import psycopg

        label = "<AsyncPostgresSaver>"
        cleanup = contextlib.AsyncExitStack()
        try:
            await cleanup.enter_async_context(saver.lock)
            conn = saver.conn
            pools = _pool_types()
            if pools is not None and isinstance(conn, pools[1]):
                conn = await cleanup.enter_async_context(conn.connection())
            await cleanup.enter_async_context(conn.transaction(force_rollback=True))
            await conn.execute(_READ_ONLY)
            problem, has_task_path = _schema_problem(label, await _async_rows(conn, _TABLES_SQL, (list(TABLES),)))
        except psycopg.Error as error:
            await cleanup.aclose()
            raise ImportRefused(f"{label}: {_error_text(error)}") from None
        except BaseException:
            await cleanup.aclose()
            raise
        if problem:
            await cleanup.aclose()
            raise ImportRefused(problem)
        return cls(conn, label, cleanup, has_task_path)

    async def aclose(self) -> None:
        await self.cleanup.aclose()

    async def thread_ids(self, limit: int | None) -> list[str]:
        rows = await self._fetch(_THREADS_SQL + (" LIMIT %s" if limit else ""), (limit,) if limit else ())
        return [row[0] for row in rows]

    async def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        checkpoints, blobs, writes = [
            await self._fetch(sql, params) for sql, params in _thread_queries(thread_id, self.has_task_path)
        ]
        return self.decoder.checkpoints(thread_id, checkpoints, blobs), self.decoder.writes(thread_id, writes)

    async def subgraph_writes(self, thread_id: str) -> list[WriteRow]:
        """``PostgresThreads.subgraph_writes``, awaited."""
        sql = _writes_sql(self.has_task_path).replace("checkpoint_ns = ''", "checkpoint_ns != '' AND channel = ANY(%s)")
        return self.decoder.writes(thread_id, await self._fetch(sql, (_budget(), thread_id, list(SUBGRAPH_CHANNELS))))

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[Any]:
        import psycopg

        try:
            return await _async_rows(self.conn, sql, params)
        except psycopg.Error as error:
            raise ImportRefused(f"{self.decoder.label}: {_error_text(error)}") from None


def _error_text(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def is_postgres_saver(saver: Any) -> bool:
    """A langgraph-checkpoint-postgres ``PostgresSaver`` (sync)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return False
    return isinstance(saver, PostgresSaver)


def is_async_postgres_saver(saver: Any) -> bool:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        return False
    return isinstance(saver, AsyncPostgresSaver)
