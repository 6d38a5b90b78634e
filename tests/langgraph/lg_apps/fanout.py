"""Functional-API forms the other apps do not use: two task calls started before either result is read
(parallel tasks), and an entrypoint returning ``entrypoint.final`` (a return value other than the value
saved for the next invocation's ``previous``)."""

from __future__ import annotations

from langgraph.func import entrypoint

from lg_apps.more import add
from lg_apps.tasks import draft, fetch_price


@entrypoint()
def fanout_agent(item: str) -> dict:
    price = fetch_price(item)
    intro = draft("intro", item)
    return {"price": price.result(), "intro": intro.result()}


@entrypoint()
def final_tally(amount: int, *, previous: int | None = None) -> entrypoint.final[str, int]:
    total = add(previous or 0, amount).result()
    return entrypoint.final(value=f"added {amount}", save=total)
