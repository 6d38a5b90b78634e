"""The same LangGraph functional-API agents (``tests/langgraph/lg_apps``) recorded for real into a SqliteSaver
file and into a PostgresSaver database on the test Postgres (the session's ``postgres`` server, started by
``tests/conftest.py`` on 127.0.0.1), so the tests can compare what replaytest imports from each."""

from __future__ import annotations

import itertools
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from postgres_server import PostgresServer

# The agents live beside the SQLite tests; one copy serves both savers.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "langgraph"))

from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

_DATABASE_NUMBERS = itertools.count(1)


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """A fresh, empty database on the test server (one per test, so threads never mix)."""
    return postgres.create_database(f"checkpoints_{next(_DATABASE_NUMBERS)}")


@contextmanager
def postgres_saver(url: str) -> Iterator[PostgresSaver]:
    """A PostgresSaver as an application sets it up (``setup()`` creates its tables)."""
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver


@contextmanager
def sqlite_saver(db: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


Recorder = Callable[[object], None]
