"""Helpers of the LangGraph Postgres tests: a fresh database on the session's test Postgres, the two savers as an
application opens them, the agents of ``tests/langgraph/lg_apps`` (one copy serves both savers; imported from
here, which puts that folder on the path) and the runs recorded into either, and a history without the ids
LangGraph makes when it records.

This folder has no conftest.py on purpose: the LangGraph tests import names from their own ``conftest``, and a
second module of that name loaded in the same run (``pytest tests/langgraph tests/langgraph_postgres``) would
take its place."""

from __future__ import annotations

import copy
import itertools
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from postgres_server import PostgresServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "langgraph"))

from lg_apps import agent, more, support  # noqa: E402

__all__ = ["agent", "more", "support"]  # re-exported: the tests import the agents from here
_DATABASE_NUMBERS = itertools.count(1)


def fresh_database(postgres: PostgresServer) -> str:
    """The URL of a new, empty database on the test server (one per test, so threads never mix)."""
    return postgres.create_database(f"checkpoints_{next(_DATABASE_NUMBERS)}")

RECORD_TIME_IDS = "<id made when recorded>"


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


def without_record_time_ids(document: dict) -> dict:
    """The history with its run id (the input checkpoint's id, made from the clock when LangGraph records) and
    each step's ``task_id`` (LangGraph's hash of that id) replaced: the ids two recordings cannot share."""
    document = copy.deepcopy(document)
    document["workflow"]["run_id"] = RECORD_TIME_IDS

    def replaced(part: dict) -> None:
        """Replace the ids in a history's events and kept checkpoint bookkeeping, and in the history of the
        subgraph a parked node runs (its own task ids and channel versions), recursively."""
        for event in part["events"]:
            if "task_id" in event:
                event["task_id"] = RECORD_TIME_IDS
            if "subgraph" in event:
                replaced(event["subgraph"])
        kept = (part.get("graph") or {}).get("checkpoint")
        if kept is not None:
            # A parked thread's bookkeeping: the task ids of its writes, and each channel version's random part
            # (``<counter>.<random>``, drawn by the saver when it wrote the checkpoint).
            def counter(version: object) -> object:
                return version.split(".")[0] if isinstance(version, str) else version

            kept["channel_versions"] = {name: counter(v) for name, v in kept["channel_versions"].items()}
            kept["versions_seen"] = {node: {name: counter(v) for name, v in seen.items()}
                                     for node, seen in kept["versions_seen"].items()}
            for write in kept["writes"]:
                write["task_id"] = RECORD_TIME_IDS

    replaced(document)
    return document
