"""``fanout.py`` edited: the two parallel tasks started in the other order, and ``entrypoint.final``
returning another value."""

from __future__ import annotations

from langgraph.func import entrypoint

from lg_apps.more import add
from lg_apps.tasks import draft, fetch_price


@entrypoint()
def fanout_agent(item: str) -> dict:
    intro = draft("intro", item)
    price = fetch_price(item)
    return {"price": price.result(), "intro": intro.result()}


@entrypoint()
def final_tally(amount: int, *, previous: int | None = None) -> entrypoint.final[str, int]:
    total = add(previous or 0, amount).result()
    return entrypoint.final(value=f"added {amount} to {previous}", save=total)
