"""LangGraph's functional API: a task, the effect named by the input, a task."""

from __future__ import annotations

from langgraph.func import entrypoint, task

from escape_app.moves import perform


@task
def stamp(text: str) -> str:
    return text


@entrypoint()
def escape_graph(name: str) -> str:
    stamp(name).result()
    perform(name)
    return stamp(name).result()
