"""Edited versions of ``more.py``'s entrypoints."""

from __future__ import annotations

from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.more import add, ask, confirm, lookup


@entrypoint()
def tally(amount: int, *, previous: int | None = None) -> int:
    return add(previous or 0, amount).result() + (previous or 0)  # counts the previous total twice


@entrypoint()
async def async_agent(item: str) -> dict:
    done = await confirm(item)
    code = await lookup(item)
    answer = interrupt({"code": code})
    return {"code": code, "answer": answer, "done": done}


@entrypoint()
def asking_agent(topic: str) -> str:
    first = add(1, 2).result()
    second = add(first, 3).result()  # a new call before the task whose body waits for the answer
    return f"{topic} {second} {ask(topic).result()}"
