"""``memory_desk`` changed after the threads were recorded: the tone is looked up by a new task,
``lookup_tone``, where the recorded threads called ``recall``."""

from __future__ import annotations

from langgraph.config import get_store
from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from lg_apps.memory_desk import STORE, TONES, remember, reply
from lg_apps.tasks import _effect


@task
def lookup_tone(user: str) -> str | None:
    _effect(f"lookup_tone {user}")
    item = get_store().get((*TONES, user), "tone")
    return item.value["tone"] if item is not None else None


@entrypoint(store=STORE)
def memory_agent(user: str) -> str:
    tone = lookup_tone(user).result()
    if tone is None:
        tone = interrupt({"question": "which tone does this customer like?", "user": user})
        remember(user, tone).result()
    return reply(user, tone).result()
