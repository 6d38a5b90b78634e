"""A refund agent on LangGraph's functional API, recorded into a SqliteSaver database as fuzzing seeds.

Its stored values use every msgpack extension kind LangGraph writes for an agent like it: a dataclass
(with a UUID, a datetime, a Decimal and a frozenset inside), a pydantic model, a date and bytes, plus
nested lists and maps. ``record`` leaves three threads: ``completed`` (interrupted for approval,
resumed, refunded), ``parked`` (waiting at the approval) and ``failed`` (no policy covers the complaint).
"""

from __future__ import annotations

import datetime
import decimal
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path

import pydantic
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

ORDER_ID = "0b6c1f55-8f2e-4c3b-9d4e-3a1f2b5c6d7e"


@dataclass
class Order:
    order_id: uuid.UUID
    placed: datetime.datetime
    total: decimal.Decimal
    tags: frozenset


class Decision(pydantic.BaseModel):
    refund: bool
    reason: str
    amount: float


@task
def look_up_order(order_id: str) -> Order:
    placed = datetime.datetime(2026, 11, 3, 9, 30, tzinfo=datetime.timezone.utc)
    return Order(uuid.UUID(order_id), placed, decimal.Decimal("89.90"), frozenset({"express", "gift"}))


@task
def check_policy(order: Order, complaint: str) -> Decision:
    if "never arrived" not in complaint and "broken" not in complaint:
        raise ValueError(f"no refund policy covers {complaint!r}")
    return Decision(refund=True, reason=complaint, amount=float(order.total))


@task
def issue_refund(decision: Decision) -> dict:
    return {"refunded": decision.amount, "on": datetime.date(2026, 11, 5), "reference": b"\x00rf-19"}


@entrypoint()
def refund_agent(request: dict) -> dict:
    order = look_up_order(request["order_id"]).result()
    decision = check_policy(order, request["complaint"]).result()
    approved = interrupt({"amount": decision.amount, "messages": [{"role": "user", "content": request["complaint"]}]})
    receipt = issue_refund(decision).result() if approved["ok"] else None
    return {"decision": decision, "receipt": receipt, "trail": [[["checked", {"steps": [1, 2.5, None]}]]]}


def _thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def record(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = refund_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        graph.invoke({"order_id": ORDER_ID, "complaint": "parcel never arrived"}, _thread("completed"))
        done = graph.invoke(Command(resume={"ok": True}), _thread("completed"))
        assert done["receipt"]["refunded"] == 89.9, done
        assert "__interrupt__" in graph.invoke({"order_id": ORDER_ID, "complaint": "lid broken"}, _thread("parked"))
        try:
            graph.invoke({"order_id": ORDER_ID, "complaint": "wrong colour"}, _thread("failed"))
        except ValueError:
            pass
        else:  # pragma: no cover - the seed must hold a failed thread
            raise AssertionError("the failed thread did not fail")
    finally:
        conn.close()
