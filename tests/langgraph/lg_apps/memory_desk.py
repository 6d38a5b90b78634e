"""A support agent with a long-term memory store (``@entrypoint(store=STORE)``): its ``recall`` and
``remember`` tasks read and write the store through ``get_store()``, and when no tone is remembered the
entrypoint asks for one (``interrupt``). ``greeting_agent`` reads the store in its own code (an injected
``store: BaseStore``), which no checkpoint keeps. Task bodies append to the effects file."""

from __future__ import annotations

from langgraph.config import get_store
from langgraph.func import entrypoint, task
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import interrupt

from lg_apps.tasks import _effect

STORE = InMemoryStore()
TONES = ("prefs",)


@task
def recall(user: str) -> str | None:
    _effect(f"recall {user}")
    item = get_store().get((*TONES, user), "tone")
    return item.value["tone"] if item is not None else None


@task
def remember(user: str, tone: str) -> str:
    _effect(f"remember {user} {tone}")
    get_store().put((*TONES, user), "tone", {"tone": tone})
    return tone


@task
def reply(user: str, tone: str) -> str:
    _effect(f"reply {user} {tone}")
    return f"a {tone} reply to {user}"


@entrypoint(store=STORE)
def memory_agent(user: str) -> str:
    tone = recall(user).result()
    if tone is None:
        tone = interrupt({"question": "which tone does this customer like?", "user": user})
        remember(user, tone).result()
    return reply(user, tone).result()


@entrypoint(store=STORE)
def greeting_agent(user: str, *, store: BaseStore) -> str:
    item = store.get((*TONES, user), "tone")
    tone = item.value["tone"] if item is not None else "plain"
    return reply(user, tone).result()
