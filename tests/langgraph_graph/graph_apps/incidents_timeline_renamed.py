"""The incident desk with its timeline key renamed ``events`` (a deploy that renames a DeltaChannel state key:
the recorded timeline no longer reaches any node)."""

from __future__ import annotations

from typing import Annotated, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from graph_apps.effects import effect


def append_entries(timeline: list[str] | None, batches: list[list[str]]) -> list[str]:
    """The timeline with each batch of new entries after it (batching-invariant, as DeltaChannel requires)."""
    merged = list(timeline or [])
    for batch in batches:
        merged.extend(batch)
    return merged


class Incident(TypedDict, total=False):
    service: str
    events: Annotated[list[str], DeltaChannel(append_entries)]
    acknowledged_by: str


def open_incident(state: Incident) -> dict:
    effect(f"open_incident {state['service']}")
    return {"events": [f"{state['service']}: error rate above 5%"]}


def gather_signals(state: Incident) -> dict:
    effect(f"gather_signals {state['service']}")
    return {"events": [f"{state['service']}: deploy 41 went out 3 minutes earlier"]}


def page_on_call(state: Incident) -> dict:
    engineer = interrupt({"acknowledge": state["service"], "timeline": state["events"]})
    effect(f"page_on_call {state['service']} {engineer}")
    return {"acknowledged_by": engineer}


def resolve(state: Incident) -> dict:
    effect(f"resolve {state['service']}")
    return {"events": [f"resolved by {state['acknowledged_by']}"]}


builder = StateGraph(Incident)
builder.add_node("open_incident", open_incident)
builder.add_node("gather_signals", gather_signals)
builder.add_node("page_on_call", page_on_call)
builder.add_node("resolve", resolve)
builder.add_edge(START, "open_incident")
builder.add_edge("open_incident", "gather_signals")
builder.add_edge("gather_signals", "page_on_call")
builder.add_edge("page_on_call", "resolve")
builder.add_edge("resolve", END)
graph = builder.compile()
