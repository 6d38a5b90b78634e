"""A thread invoked several times: each invocation adds to the total it saved last time (``previous``),
asks a reviewer to confirm (interrupt), and records the new total."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.more import add


@entrypoint()
def counter(amount: int, *, previous: int | None = None) -> int:
    total = add(previous or 0, amount).result()
    if interrupt({"total": total}):
        total = add(total, 0).result()
    return total
