"""``retrying.py`` with the retried task and the draft called in the other order."""

from __future__ import annotations

from langgraph.func import entrypoint

from lg_apps.retrying import flaky_quote
from lg_apps.tasks import draft


@entrypoint()
def quoting_agent(item: str) -> dict:
    intro = draft("intro", item).result()
    price = flaky_quote(item).result()
    return {"price": price, "intro": intro}
