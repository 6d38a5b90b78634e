"""An invoice-dispute agent on LangGraph's functional API: a model task classifies the complaint, the
invoice is looked up, a reviewer decides (``interrupt``), the customer is credited when approved and
told the outcome. Task bodies append a line to the file named by ``DISPUTE_GRAPH_EFFECTS`` whenever
they really run, so a replay that ran one would show."""

from __future__ import annotations

import os

from langgraph.func import entrypoint, task
from langgraph.types import interrupt


def effect(what: str) -> None:
    with open(os.environ.get("DISPUTE_GRAPH_EFFECTS", "dispute-graph-effects.log"), "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@task
def classify_dispute(text: str) -> str:
    effect(f"classify {text}")
    return "billing-error" if "charged twice" in text else "service-complaint"


@task
def lookup_invoice(invoice_id: str) -> dict:
    effect(f"lookup {invoice_id}")
    return {"invoice_id": invoice_id, "customer": f"customer-of-{invoice_id}"}


@task
def issue_credit(invoice_id: str, amount: float) -> str:
    effect(f"credit {invoice_id} {amount}")
    return f"credit-{invoice_id}-{amount:.2f}"


@task
def notify_customer(customer: str, outcome: str) -> bool:
    effect(f"notify {customer} {outcome}")
    return True


@task
def record_audit(invoice_id: str, decision: str) -> str:
    effect(f"audit {invoice_id} {decision}")
    return f"audit {invoice_id} {decision}"


@entrypoint()
def dispute_agent(dispute: dict) -> dict:
    category = classify_dispute(dispute["text"]).result()
    invoice = lookup_invoice(dispute["invoice_id"]).result()
    decision = interrupt({"question": "approve the credit?", "invoice_id": dispute["invoice_id"], "amount": dispute["amount"]})
    credit = None
    if decision == "approve":
        credit = issue_credit(dispute["invoice_id"], dispute["amount"]).result()
    notify_customer(invoice["customer"], decision).result()
    return {"category": category, "decision": decision, "credit": credit}
