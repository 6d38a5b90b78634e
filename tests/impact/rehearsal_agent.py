"""Versions of the impact tests' invoice-dispute agent (``impact_agent.invoice_dispute``) for the journal resume
rehearsal: each is what a team would deploy next, run by the real journal worker and rehearsed by replaytest.

* ``check_before_wait_guarded``: a fraud check inserted before the wait, under ``ctx.patched`` — the parked runs
  passed that point before the deploy, so the journal answers the check False: old path;
* ``audit_after_wait``: an audit step right after the wait (unguarded);
* ``audit_after_wait_guarded``: the same under ``ctx.patched`` — first asked on resume: True, new path;
* ``cooling_off`` / ``cooling_off_longer``: a cooling-off timer of an hour after the wait, then of two hours.
"""

from __future__ import annotations

from typing import Any

from impact_agent import (
    _recommend,
    _reject,
    issue_credit_note,
    load_invoice,
    load_payments,
    notify_customer,
    write_audit_log,
)

from replaytest.journal import workflow


def check_fraud(claim: dict[str, Any]) -> bool:
    return False


def _decided(ctx: Any, claim: dict[str, Any], invoice: dict[str, Any], decision: dict[str, Any], recommendation: str) -> dict[str, Any]:
    if not decision["approve"]:
        return _reject(ctx, claim)
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}


@workflow(name="invoice_dispute", version="2")
def check_before_wait_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    if ctx.patched("dispute-check-fraud"):
        ctx.step("check fraud", check_fraud, claim)
    decision = ctx.wait_signal("decision")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def audit_after_wait(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    ctx.step("write audit log", write_audit_log, claim, decision)
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def audit_after_wait_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if ctx.patched("dispute-write-audit-log"):
        ctx.step("write audit log", write_audit_log, claim, decision)
    return _decided(ctx, claim, invoice, decision, recommendation)


# The same guard with its check negated by mistake: a run that reaches it answers True and skips the audit.
@workflow(name="invoice_dispute", version="2")
def audit_after_wait_negated(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if not ctx.patched("dispute-audit-log-negated"):
        ctx.step("write audit log", write_audit_log, claim, decision)
    return _decided(ctx, claim, invoice, decision, recommendation)


def escalate(invoice: dict[str, Any]) -> str:
    return f"escalated {invoice['id']}"


def _decided_escalating(ctx: Any, claim: dict[str, Any], invoice: dict[str, Any], decision: dict[str, Any],
                        recommendation: str) -> dict[str, Any]:
    if decision["approve"] and invoice["amount"] > 500:
        ctx.step("escalate to finance", escalate, invoice)
        return {"outcome": "escalated", "recommended": recommendation}
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def check_before_wait(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    ctx.step("check fraud", check_fraud, claim)
    decision = ctx.wait_signal("decision")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def invoice_renamed(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("fetch invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def invoice_renamed_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    if ctx.patched("invoice-dispute-fetch-invoice"):
        invoice = ctx.step("fetch invoice", load_invoice, claim)
    else:
        invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def lookups_swapped(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    payments = ctx.step("load payments", load_payments, claim)
    invoice = ctx.step("load invoice", load_invoice, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def lookups_swapped_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    if ctx.patched("invoice-dispute-load-payments"):
        payments = ctx.step("load payments", load_payments, claim)
        invoice = ctx.step("load invoice", load_invoice, claim)
    else:
        invoice = ctx.step("load invoice", load_invoice, claim)
        payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def escalating(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    return _decided_escalating(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def escalating_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if ctx.patched("invoice-dispute-escalate-to-finance"):
        return _decided_escalating(ctx, claim, invoice, decision, recommendation)
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def timer_after_wait(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    ctx.sleep(60, name="cool off")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def timer_after_wait_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if ctx.patched("invoice-dispute-timer"):
        ctx.sleep(60, name="cool off")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="2")
def audit_each_branch_guarded(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    """An audit step in each branch of the decision, each under its own guard: no one run reaches both."""
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if not decision["approve"]:
        if ctx.patched("dispute-audit-rejection"):
            ctx.step("write audit log", write_audit_log, claim, decision)
        return _reject(ctx, claim)
    if ctx.patched("dispute-audit-credit"):
        ctx.step("write audit log", write_audit_log, claim, decision)
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="3")
def cooling_off(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    ctx.sleep(3600, name="cool off")
    return _decided(ctx, claim, invoice, decision, recommendation)


@workflow(name="invoice_dispute", version="4")
def cooling_off_longer(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    ctx.sleep(7200, name="cool off")  # [cool off]
    return _decided(ctx, claim, invoice, decision, recommendation)
