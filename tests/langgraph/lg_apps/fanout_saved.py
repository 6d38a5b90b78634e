"""``fanout.py`` edited in what ``entrypoint.final`` saves for ``previous`` only (the returned value kept)."""

from __future__ import annotations

from langgraph.func import entrypoint

from lg_apps.more import add


@entrypoint()
def final_tally(amount: int, *, previous: int | None = None) -> entrypoint.final[str, int]:
    total = add(previous or 0, amount).result()
    return entrypoint.final(value=f"added {amount}", save=total + 1)
