"""A refund desk compiled with a store (``compile(store=STORE)``): ``load_profile`` reads the customer's
tone from the store, ``human_review`` notes in the store that the customer was asked, then asks a person
(``interrupt``), ``reply`` remembers the tone. Nodes get the store injected (``store: BaseStore``). Node
bodies append to the effects log."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import interrupt

from graph_apps.effects import effect

STORE = InMemoryStore()
QUESTION = "approve this refund?"


class Ticket(TypedDict, total=False):
    customer: str
    tone: str
    approved: bool


def load_profile(state: Ticket, *, store: BaseStore) -> dict:
    effect(f"load_profile {state['customer']}")
    item = store.get(("profiles",), state["customer"])
    return {"tone": item.value["tone"] if item is not None else "plain"}


def human_review(state: Ticket, *, store: BaseStore) -> dict:
    store.put(("asked",), state["customer"], {"question": QUESTION})
    answer = interrupt({"question": QUESTION, "customer": state["customer"], "tone": state["tone"]})
    effect(f"human_review {answer}")
    return {"approved": answer == "approve"}


def reply(state: Ticket, *, store: BaseStore) -> dict:
    effect(f"reply {state['customer']}")
    store.put(("profiles",), state["customer"], {"tone": state["tone"]})
    return {}


def build(review: object = human_review) -> StateGraph:
    builder = StateGraph(Ticket)
    builder.add_node("load_profile", load_profile)
    builder.add_node("human_review", review)
    builder.add_node("reply", reply)
    builder.add_edge(START, "load_profile")
    builder.add_edge("load_profile", "human_review")
    builder.add_edge("human_review", "reply")
    builder.add_edge("reply", END)
    return builder


graph = build().compile(store=STORE)
