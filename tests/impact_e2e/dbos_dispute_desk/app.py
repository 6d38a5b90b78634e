"""An invoice-dispute agent on DBOS: a model step classifies the customer's complaint, the invoice is
looked up, a reviewer's decision arrives by ``DBOS.recv``, the customer is credited when approved and
told the outcome. Step bodies append a line to the file named by ``DISPUTE_DESK_EFFECTS`` whenever they
really run, so a replay that ran one would show."""

from __future__ import annotations

import os

from dbos import DBOS

EFFECTS = os.environ.get("DISPUTE_DESK_EFFECTS", "dispute-desk-effects.log")
REVIEW_WAIT_S = 3600


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def classify_dispute(text: str) -> str:
    effect(f"classify {text}")
    return "billing-error" if "charged twice" in text else "service-complaint"


@DBOS.step()
def lookup_invoice(invoice_id: str) -> dict:
    effect(f"lookup {invoice_id}")
    return {"invoice_id": invoice_id, "customer": f"customer-of-{invoice_id}"}


@DBOS.step()
def issue_credit(invoice_id: str, amount: float) -> str:
    effect(f"credit {invoice_id} {amount}")
    return f"credit-{invoice_id}-{amount:.2f}"


@DBOS.step()
def notify_customer(customer: str, outcome: str) -> bool:
    effect(f"notify {customer} {outcome}")
    return True


@DBOS.step()
def record_audit(invoice_id: str, decision: str) -> str:
    effect(f"audit {invoice_id} {decision}")
    return f"audit {invoice_id} {decision}"


@DBOS.step()
def escalate_to_finance(invoice_id: str, amount: float) -> str:
    effect(f"escalate {invoice_id} {amount}")
    return f"escalated {invoice_id}"


@DBOS.workflow()
def resolve_dispute(dispute: dict) -> dict:
    category = classify_dispute(dispute["text"])
    invoice = lookup_invoice(dispute["invoice_id"])
    decision = DBOS.recv("review", timeout_seconds=REVIEW_WAIT_S)
    credit = None
    if decision == "approve":
        credit = issue_credit(dispute["invoice_id"], dispute["amount"])
    notify_customer(invoice["customer"], decision)
    return {"category": category, "decision": decision, "credit": credit}
