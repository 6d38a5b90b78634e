"""``memory_graph`` with ``human_review`` reading the customer's profile from the store before it asks."""

from __future__ import annotations

from langgraph.store.base import BaseStore
from langgraph.types import interrupt

from graph_apps.effects import effect
from graph_apps.memory_graph import QUESTION, STORE, Ticket, build


def human_review(state: Ticket, *, store: BaseStore) -> dict:
    profile = store.get(("profiles",), state["customer"])
    tone = profile.value["tone"] if profile is not None else state["tone"]
    answer = interrupt({"question": QUESTION, "customer": state["customer"], "tone": tone})
    effect(f"human_review {answer}")
    return {"approved": answer == "approve"}


graph = build(human_review).compile(store=STORE)
