"""An expense-review agent on the journal runtime, before and after a receipt check was added behind
``ctx.patched("receipt-check")`` (the workflow type is the same: these are two deploys of one agent)."""

from __future__ import annotations

from replaytest.journal import workflow


def classify(claim: dict) -> str:
    return "travel" if claim["item"] in ("train", "taxi", "flight") else "office"


def check_receipt(claim: dict) -> dict:
    return {"receipt": "matches", "amount": claim["amount"]}


def reimburse(claim: dict, approval: dict) -> dict:
    return {"paid": claim["amount"] if approval["approved"] else 0, "by": approval["by"]}


@workflow(name="expense_review", version="2026-11-01")
def expense_review_before(ctx, claim):
    category = ctx.step("classify", classify, claim)
    approval = ctx.wait_signal("manager approval")
    payment = ctx.step("reimburse", reimburse, claim, approval)
    return {"category": category, **payment}


@workflow(name="expense_review", version="2026-12-01")
def expense_review(ctx, claim):
    category = ctx.step("classify", classify, claim)
    if ctx.patched("receipt-check"):  # [receipt-check]
        ctx.step("check receipt", check_receipt, claim)
    approval = ctx.wait_signal("manager approval")
    payment = ctx.step("reimburse", reimburse, claim, approval)
    return {"category": category, **payment}
