"""What replaytest's LangGraph support is built on, checked against a real SqliteSaver database: the
tables, the channels of the writes, the call counter in ``task_path``, and task ids that can be
recomputed from the entrypoint and ``@task`` names (LangGraph stores no task names)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from importlib.metadata import version

import pytest

from replaytest.plugins.langgraph import internals as lg


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def writes(conn: sqlite3.Connection, thread_id: str) -> list[tuple[str, str, str | None, str]]:
    path = "task_path" if has_task_paths() else "NULL"
    return list(
        conn.execute(
            f"SELECT checkpoint_id, task_id, {path}, channel FROM writes WHERE thread_id = ? ORDER BY rowid", (thread_id,)
        )
    )


def has_task_paths() -> bool:
    """langgraph-checkpoint-sqlite 3.1 added ``writes.task_path``; databases of older ones lack it."""
    return tuple(int(p) for p in version("langgraph-checkpoint-sqlite").split(".")[:2]) >= (3, 1)


def test_the_tables_are_the_ones_the_importer_reads(recorded) -> None:
    with closing(sqlite3.connect(recorded.db)) as conn:
        assert columns(conn, "checkpoints") == [
            "thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata",
        ]
        path = ["task_path"] if has_task_paths() else []
        assert columns(conn, "writes") == [
            "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", *path, "idx", "channel", "type", "value",
        ]


def test_one_invocation_hangs_its_writes_off_its_input_checkpoint(recorded) -> None:
    with closing(sqlite3.connect(recorded.db)) as conn:
        rows = writes(conn, "approved")
        sources = [
            json.loads(meta)["source"]
            for (meta,) in conn.execute("SELECT metadata FROM checkpoints WHERE thread_id = 'approved' ORDER BY checkpoint_id")
        ]
    assert len({checkpoint for checkpoint, *_ in rows}) == 1  # the first run and its resume share it
    assert sources == ["input", "loop"]
    channels = [channel for *_, channel in rows]
    assert channels.count("__return__") == 4
    assert {"__interrupt__", "__resume__", "__end__"} <= set(channels)


def test_a_parked_thread_has_an_interrupt_and_no_end(recorded) -> None:
    with closing(sqlite3.connect(recorded.db)) as conn:
        channels = [channel for *_, channel in writes(conn, "waiting")]
    assert channels.count("__return__") == 3 and "__interrupt__" in channels and "__end__" not in channels


def test_recomputed_ids_name_each_call_and_the_task_path_counts_calls(recorded) -> None:
    with closing(sqlite3.connect(recorded.db)) as conn:
        rows = [row for row in writes(conn, "approved") if row[3] == "__return__"]
        (checkpoint_id,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'approved' ORDER BY checkpoint_id"
        ).fetchone()
    entry = lg.entry_task_id(checkpoint_id, 4, "order_agent", 0)
    expected = ["fetch_price", "draft", "draft", "notify"]
    ids = [lg.call_task_id(checkpoint_id, 4, "order_agent", entry, 0, name, index) for index, name in enumerate(expected)]
    assert sorted(ids) == sorted(task_id for _, task_id, _, _ in rows)  # LangGraph stores no names: ids identify calls
    assert all(lg.call_task_id(checkpoint_id, 4, "order_agent", entry, 0, "compose", i) not in ids for i in range(4))
    if has_task_paths():
        paths = {task_id: path for _, task_id, path, _ in rows}
        assert paths[ids[0]] == "~__pregel_push, ~__pregel_pull, order_agent, 0000000000, 0000000001"
        assert [paths[task_id].split(", ")[3] for task_id in ids] == [f"{i:010d}" for i in range(4)]  # the counter
        assert [lg.parse_task_path(paths[task_id]) for task_id in ids] == [(1, i) for i in range(4)]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("~__pregel_pull, order_agent", (0, None)),
        ("~__pregel_push, ~__pregel_pull, order_agent, 0000000007, 0000000001", (1, 7)),
        ("~__pregel_push, ~__pregel_push, ~__pregel_pull, a, 0000000002, 0000000001, 0000000000, 0000000001", (2, 0)),
        ("", (0, None)),
    ],
)
def test_task_paths_parse_into_depth_and_call_index(path: str, expected: tuple) -> None:
    assert lg.parse_task_path(path) == expected
