"""``memory_graph`` with ``human_review`` asking another question."""

from __future__ import annotations

from langgraph.store.base import BaseStore
from langgraph.types import interrupt

from graph_apps.effects import effect
from graph_apps.memory_graph import STORE, Ticket, build


def human_review(state: Ticket, *, store: BaseStore) -> dict:
    store.put(("asked",), state["customer"], {"question": "refund this customer in full?"})
    answer = interrupt({"question": "refund this customer in full?", "customer": state["customer"], "tone": state["tone"]})
    effect(f"human_review {answer}")
    return {"approved": answer == "approve"}


graph = build(human_review).compile(store=STORE)
