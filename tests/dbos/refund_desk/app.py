"""A support desk's refund agent on DBOS: it classifies a customer's message, looks the order up, waits
for a human's approval (``DBOS.recv``), then refunds and emails the customer. Step bodies append a line
to the file named by ``REFUND_DESK_EFFECTS`` whenever they really run."""

from __future__ import annotations

import os

from dbos import DBOS

EFFECTS = os.environ.get("REFUND_DESK_EFFECTS", "refund-desk-effects.log")
APPROVAL_WAIT_S = 600


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def classify(message: str) -> str:
    effect(f"classify {message}")
    return "refund" if "refund" in message.lower() else "question"


@DBOS.step()
def lookup_order(order_id: str) -> dict:
    effect(f"lookup {order_id}")
    return {"order_id": order_id, "amount": 18.0, "email": "lena@example.com"}


@DBOS.step()
def issue_refund(order_id: str, amount: float) -> str:
    effect(f"refund {order_id} {amount}")
    return f"rf_{order_id}"


@DBOS.step()
def send_email(to: str, text: str) -> bool:
    effect(f"email {to}: {text}")
    return True


@DBOS.workflow()
def handle_refund_request(order_id: str, message: str) -> dict:
    intent = classify(message)
    if intent != "refund":
        return {"order_id": order_id, "intent": intent}
    order = lookup_order(order_id)
    approval = DBOS.recv("approval", timeout_seconds=APPROVAL_WAIT_S)
    if approval != "approved":
        send_email(order["email"], "we could not approve your refund")
        return {"order_id": order_id, "intent": intent, "refund": None}
    refund = issue_refund(order_id, order["amount"])
    send_email(order["email"], f"refund {refund} is on its way")
    return {"order_id": order_id, "intent": intent, "refund": refund}
