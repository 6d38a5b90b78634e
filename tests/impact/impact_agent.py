"""An invoice-dispute agent on the journal runtime, and three later versions of it, for the impact tests.

``invoice_dispute`` loads the disputed invoice and the customer's payment record (two independent steps),
asks a model to draft a recommendation, then waits for a reviewer's ``decision`` signal: approved disputes
get a credit note and a notice, rejected ones only a notice. The changed versions keep the workflow type:

* ``audit_after_decision``: an audit-log step inserted right after the wait (parked runs have not reached it);
* ``payments_first``: the two lookups swapped, before the wait (every run breaks at the first event);
* ``credit_limit_check``: approved disputes now check the credit limit first (only the approved branch);
* ``reworded_recommendation``: the recommendation prompt reworded (prompt drift at the model step);
* ``dated_credit_note``: the credit note dated with the wall clock (a nondeterministic read, approved branch).

Step bodies are local stand-ins (an in-memory ledger) so histories record anywhere; lines that change are
tagged ``# [tag]`` so tests find their numbers.
"""

from __future__ import annotations

import time
from typing import Any

from replaytest.journal import Prompt, workflow

RECOMMEND = Prompt("recommend", "Recommend approve or reject for this dispute:\n{reason}\nPayments: {payments}")
RECOMMEND_V2 = Prompt("recommend", "You review invoice disputes. Approve or reject?\n{reason}\nLate payments: {payments}")

INVOICES = {"INV-100": 120.0, "INV-200": 940.0, "INV-300": 35.5, "INV-400": 410.0, "INV-500": 77.0}


def load_invoice(claim: dict[str, Any]) -> dict[str, Any]:
    return {"id": claim["invoice"], "amount": INVOICES[claim["invoice"]]}


def load_payments(claim: dict[str, Any]) -> dict[str, Any]:
    return {"customer": claim["customer"], "late_payments": 0}


def draft_recommendation(prompt_text: str) -> str:
    """Stands in for a model call (deterministic, no network)."""
    return "approve" if "damaged" in prompt_text or "twice" in prompt_text else "reject"


def write_audit_log(claim: dict[str, Any], decision: dict[str, Any]) -> dict[str, Any]:
    return {"logged": claim["invoice"], "approved": decision["approve"]}


def check_credit_limit(invoice: dict[str, Any]) -> bool:
    return invoice["amount"] < 5000


def issue_credit_note(invoice: dict[str, Any], idempotency_key: str) -> dict[str, Any]:
    # The key makes a resumed or retried credit a no-op in the real ledger.
    return {"credit_note": f"CN-{invoice['id']}", "amount": invoice["amount"]}


def notify_customer(claim: dict[str, Any], text: str, idempotency_key: str) -> dict[str, Any]:
    return {"to": claim["customer"], "text": text}


def _recommend(ctx: Any, claim: dict[str, Any], payments: dict[str, Any]) -> str:
    text = RECOMMEND.render(reason=claim["reason"], payments=payments["late_payments"])
    return str(ctx.model("recommend", draft_recommendation, text, prompt=RECOMMEND))


def _reject(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    ctx.step("notify customer", notify_customer, claim, "dispute rejected", idempotency_key=ctx.idempotency_key())
    return {"outcome": "rejected"}


@workflow(name="invoice_dispute", version="1")
def invoice_dispute(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if not decision["approve"]:
        return _reject(ctx, claim)
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}


@workflow(name="invoice_dispute", version="2")
def audit_after_decision(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    ctx.step("write audit log", write_audit_log, claim, decision)  # [audit]
    if not decision["approve"]:
        return _reject(ctx, claim)
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}


@workflow(name="invoice_dispute", version="3")
def payments_first(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    payments = ctx.step("load payments", load_payments, claim)  # [swapped]
    invoice = ctx.step("load invoice", load_invoice, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if not decision["approve"]:
        return _reject(ctx, claim)
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}


@workflow(name="invoice_dispute", version="4")
def credit_limit_check(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if not decision["approve"]:
        return _reject(ctx, claim)
    if not ctx.step("check credit limit", check_credit_limit, invoice):  # [limit]
        return _reject(ctx, claim)
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}


@workflow(name="invoice_dispute", version="5")
def reworded_recommendation(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    text = RECOMMEND_V2.render(reason=claim["reason"], payments=payments["late_payments"])
    recommendation = ctx.model("recommend", draft_recommendation, text, prompt=RECOMMEND_V2)  # [reworded]
    decision = ctx.wait_signal("decision")
    if not decision["approve"]:
        return _reject(ctx, claim)
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}


@workflow(name="invoice_dispute", version="6")
def dated_credit_note(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    invoice = ctx.step("load invoice", load_invoice, claim)
    payments = ctx.step("load payments", load_payments, claim)
    recommendation = _recommend(ctx, claim, payments)
    decision = ctx.wait_signal("decision")
    if not decision["approve"]:
        return _reject(ctx, claim)
    invoice = {**invoice, "dated": int(time.time())}  # [clock]
    note = ctx.step("issue credit note", issue_credit_note, invoice, idempotency_key=ctx.idempotency_key())
    ctx.step("notify customer", notify_customer, claim, f"credited {note['amount']}", idempotency_key=ctx.idempotency_key())
    return {"outcome": "credited", "credit_note": note["credit_note"], "recommended": recommendation}
