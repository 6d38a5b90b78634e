"""The returns workflow: the order line's price, a refund decided by the reason given (a damaged item is
refunded in full, a changed mind less a restocking fee), and a credit note numbered from the order."""

from __future__ import annotations

from dbos import DBOS

PRICES = {"kettle": 39.0, "lamp": 24.5, "toaster": 52.0}
RESTOCKING_FEE = 0.15


@DBOS.step()
def price_of(item: str) -> float:
    return PRICES[item]


@DBOS.step()
def decide_refund(price: float, reason: str) -> float:
    return price if reason == "damaged" else round(price * (1 - RESTOCKING_FEE), 2)


@DBOS.step()
def issue_credit_note(order_ref: str, amount: float) -> str:
    return f"CN-{order_ref}-{int(amount * 100)}"


@DBOS.workflow()
def process_return(order_ref: str, item: str, reason: str) -> dict:
    refund = decide_refund(price_of(item), reason)
    return {"order": order_ref, "refund": refund, "credit_note": issue_credit_note(order_ref, refund)}
