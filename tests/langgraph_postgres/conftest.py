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


def thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def record_agents(saver: object) -> None:
    """The same runs on whichever saver: every status an imported functional thread can have.

    order_agent ``approved`` and support_agent ``B-90``: parked at the approval, resumed, completed;
    order_agent ``waiting`` and support_agent ``A-17``: parked at the approval; asking_agent ``ask``: parked
    inside a task's body, and ``asked``: resumed from there and completed; tally ``t``: invoked twice (the
    second run gets the first one's value as ``previous``); nested_agent ``n``: tasks calling tasks;
    failing_agent ``f``: a task's failure ends the run."""
    from langgraph.types import Command
    from lg_apps import agent, more, support

    def run(entrypoint: object) -> object:
        return entrypoint.copy(update={"checkpointer": saver})  # type: ignore[attr-defined]

    orders = run(agent.order_agent)
    assert "__interrupt__" in orders.invoke({"item": "lamp"}, thread("approved"))
    assert orders.invoke(Command(resume={"approved": True}), thread("approved"))["receipt"]["sent"] is True
    assert "__interrupt__" in orders.invoke({"item": "desk"}, thread("waiting"))
    refunds = run(support.support_agent)
    assert "__interrupt__" in refunds.invoke({"order_id": "A-17"}, thread("A-17"))
    assert "__interrupt__" in refunds.invoke({"order_id": "B-90"}, thread("B-90"))
    assert refunds.invoke(Command(resume="approve"), thread("B-90"))["refund"] == {"refunded": 400.0}
    asking = run(more.asking_agent)
    assert "__interrupt__" in asking.invoke("lamps", thread("ask"))
    assert "__interrupt__" in asking.invoke("desks", thread("asked"))
    assert asking.invoke(Command(resume="yes"), thread("asked")) == "desks 3 yes"
    tally = run(more.tally)
    assert [tally.invoke(amount, thread("t")) for amount in (5, 7)] == [5, 12]
    assert run(more.nested_agent).invoke(1, thread("n")) == (1 * 2 + 1) + (2 * 2 + 1)
    failing = run(more.failing_agent)
    with pytest.raises(ValueError, match="cannot handle 4"):
        failing.invoke(4, thread("f"))


AGENT_SPECS = ("lg_apps.agent:order_agent", "lg_apps.support:support_agent", "lg_apps.more:asking_agent",
               "lg_apps.more:tally", "lg_apps.more:nested_agent", "lg_apps.more:failing_agent")
