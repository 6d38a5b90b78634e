"""A refund workflow on DBOS that stamps the request with ``datetime.now()`` inside the workflow (the
hazard: DBOS records no value for it). Step bodies append a line to the file named by
``REFUNDS_EFFECTS`` whenever they really run, so tests can assert that replay runs none."""

from __future__ import annotations

import logging
import os
from datetime import datetime

from dbos import DBOS

EFFECTS = os.environ.get("REFUNDS_EFFECTS", "refund-effects.log")
log = logging.getLogger("refunds")


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def look_up_order(order_id: str) -> dict:
    effect(f"look up {order_id}")
    return {"order_id": order_id, "amount": 42.5, "email": "ana@example.com"}


@DBOS.step()
def issue_refund(order_id: str, amount: float) -> str:
    effect(f"refund {order_id} {amount}")
    return f"re_{order_id}"


@DBOS.step()
def email_customer(to: str, text: str) -> bool:
    effect(f"email {to}: {text}")
    return True


@DBOS.workflow()
def refund_order(order_id: str) -> str:
    requested_at = datetime.now()
    log.info("refund for %s requested at %s", order_id, requested_at)
    order = look_up_order(order_id)
    refund = issue_refund(order_id, order["amount"])
    email_customer(order["email"], f"refund {refund} requested on {requested_at:%Y-%m-%d} is on its way")
    return refund
