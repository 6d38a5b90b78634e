"""A returns desk on the journal runtime whose runs end in every recorded status: ``returns_desk`` is the
production version (completed when a human approves, parked while nobody has, failed for an order it
cannot find), ``returns_desk_renamed`` a later edit that renamed its order lookup step, so every run of
the old code diverges at that step."""

from __future__ import annotations

from typing import Any

from replaytest.journal import Prompt, workflow

TRIAGE = Prompt("triage", "Is this message a return request? Answer yes or no:\n{text}")
ORDERS = {"R-1": {"id": "R-1", "total": 30.0}, "R-2": {"id": "R-2", "total": 12.5}}


def classify(prompt_text: str) -> str:
    return "yes" if "return" in prompt_text else "no"


def find_order(order_id: str) -> dict[str, Any] | None:
    return ORDERS.get(order_id)


def refund(order_id: str, amount: float, idempotency_key: str) -> dict[str, Any]:
    return {"order": order_id, "amount": amount, "key": idempotency_key}


def _desk(ctx: Any, request: dict[str, Any], lookup_step: str) -> dict[str, Any]:
    verdict = ctx.model("triage", classify, TRIAGE.render(text=request["text"]), prompt=TRIAGE)
    order = ctx.step(lookup_step, find_order, request["order"])
    if order is None:
        raise LookupError(f"no order {request['order']!r}")
    approval = ctx.wait_signal("approved")
    if verdict != "yes" or not approval.get("ok"):
        return {"refunded": False}
    ctx.step("refund", refund, order["id"], order["total"], idempotency_key=ctx.idempotency_key())
    return {"refunded": True}


@workflow(name="returns_desk", version="1")
def returns_desk(ctx: Any, request: dict[str, Any]) -> dict[str, Any]:
    return _desk(ctx, request, "look up order")


@workflow(name="returns_desk", version="2")
def returns_desk_renamed(ctx: Any, request: dict[str, Any]) -> dict[str, Any]:
    return _desk(ctx, request, "find order")
