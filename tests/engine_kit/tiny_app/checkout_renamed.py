"""``checkout`` with its second step renamed: a replay of an old history must stop at that line."""

from tiny_engine import workflow


@workflow
def checkout(order):  # type: ignore[no-untyped-def]
    price = yield ("step", "price", order["id"])
    receipt = yield ("step", "capture", price)
    return receipt
