"""A tiny-engine workflow the entry-point test replays, and an edited copy whose second step is renamed."""

from tiny_engine import workflow


@workflow
def checkout(order):  # type: ignore[no-untyped-def]
    price = yield ("step", "price", order["id"])
    receipt = yield ("step", "charge", price)
    return receipt
