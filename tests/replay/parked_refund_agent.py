"""A refund agent on the journal runtime that waits for a human's approval, and four later versions of it.

``refund_agent`` classifies the ticket (model), looks the order up (step), waits for the ``approval``
signal, then refunds and e-mails. Every step body appends its name to the effects log named in the input,
so a test can see that a replay ran none of them. The changed versions keep the workflow type:

* ``fraud_check_first``: a fraud check step inserted before the wait;
* ``small_refunds_paid``: refunds under 50 are paid without waiting (a branch before the wait);
* ``survey_after``: a survey step after the refund (after the wait: a parked run has not reached it);
* ``no_wait``: the approval is no longer asked for;
* ``fails_after_lookup``: a validation that raises after the lookup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replaytest.journal import workflow


def _log(ticket: dict[str, Any], effect: str) -> None:
    with open(ticket["effects"], "a", encoding="utf-8") as log:
        log.write(effect + "\n")


def classify(ticket: dict[str, Any]) -> str:
    _log(ticket, "classify")
    return "refund" if "broken" in ticket["text"] else "question"


def lookup_order(ticket: dict[str, Any]) -> dict[str, Any]:
    _log(ticket, "lookup_order")
    return {"id": ticket["order"], "total": ticket["total"]}


def check_fraud(ticket: dict[str, Any]) -> bool:
    _log(ticket, "check_fraud")
    return False


def issue_refund(ticket: dict[str, Any], amount: float) -> dict[str, Any]:
    _log(ticket, "issue_refund")
    return {"refund": f"R-{ticket['order']}", "amount": amount}


def send_email(ticket: dict[str, Any], text: str) -> dict[str, Any]:
    _log(ticket, "send_email")
    return {"sent": True}


def send_survey(ticket: dict[str, Any]) -> dict[str, Any]:
    _log(ticket, "send_survey")
    return {"survey": True}


def _refund_and_reply(ctx: Any, ticket: dict[str, Any], order: dict[str, Any]) -> dict[str, Any]:
    refund = ctx.step("issue refund", issue_refund, ticket, order["total"], idempotency_key=ctx.idempotency_key())
    ctx.step("send email", send_email, ticket, f"refunded {refund['amount']}", idempotency_key=ctx.idempotency_key())
    return refund


@workflow(name="refund_agent", version="1")
def refund_agent(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    kind = ctx.step("classify", classify, ticket)
    order = ctx.step("lookup order", lookup_order, ticket)
    if kind != "refund":
        return {"refund": None}
    approval = ctx.wait_signal("approval")
    if not approval or not approval.get("ok"):
        ctx.step("send email", send_email, ticket, "refund declined", idempotency_key=ctx.idempotency_key())
        return {"refund": None}
    return {"refund": _refund_and_reply(ctx, ticket, order)["refund"]}


@workflow(name="refund_agent", version="2")
def fraud_check_first(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    kind = ctx.step("classify", classify, ticket)
    order = ctx.step("lookup order", lookup_order, ticket)
    if kind != "refund":
        return {"refund": None}
    ctx.step("check fraud", check_fraud, ticket)  # [fraud]
    approval = ctx.wait_signal("approval")
    if not approval or not approval.get("ok"):
        ctx.step("send email", send_email, ticket, "refund declined", idempotency_key=ctx.idempotency_key())
        return {"refund": None}
    return {"refund": _refund_and_reply(ctx, ticket, order)["refund"]}


@workflow(name="refund_agent", version="3")
def small_refunds_paid(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    kind = ctx.step("classify", classify, ticket)
    order = ctx.step("lookup order", lookup_order, ticket)
    if kind != "refund":
        return {"refund": None}
    if order["total"] < 50:
        refund = ctx.step("issue refund", issue_refund, ticket, order["total"], idempotency_key=ctx.idempotency_key())  # [autopay]
        return {"refund": refund["refund"]}
    approval = ctx.wait_signal("approval")
    if not approval or not approval.get("ok"):
        ctx.step("send email", send_email, ticket, "refund declined", idempotency_key=ctx.idempotency_key())
        return {"refund": None}
    return {"refund": _refund_and_reply(ctx, ticket, order)["refund"]}


@workflow(name="refund_agent", version="4")
def survey_after(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    kind = ctx.step("classify", classify, ticket)
    order = ctx.step("lookup order", lookup_order, ticket)
    if kind != "refund":
        return {"refund": None}
    approval = ctx.wait_signal("approval")
    if not approval or not approval.get("ok"):
        ctx.step("send email", send_email, ticket, "refund declined", idempotency_key=ctx.idempotency_key())
        return {"refund": None}
    refund = _refund_and_reply(ctx, ticket, order)
    ctx.step("send survey", send_survey, ticket)
    return {"refund": refund["refund"]}


@workflow(name="refund_agent", version="5")
def no_wait(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    kind = ctx.step("classify", classify, ticket)
    ctx.step("lookup order", lookup_order, ticket)
    return {"refund": None, "kind": kind}  # [no-wait]


@workflow(name="refund_agent", version="6")
def fails_after_lookup(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    ctx.step("classify", classify, ticket)
    order = ctx.step("lookup order", lookup_order, ticket)
    if order["total"] > 0:
        raise ValueError("refunds are paused")  # [raise]
    return {"refund": None}


def ticket(folder: Path, total: float = 30.0) -> dict[str, Any]:
    return {"text": "my kettle arrived broken", "order": "K-7", "total": total, "effects": str(folder / "effects.log")}
