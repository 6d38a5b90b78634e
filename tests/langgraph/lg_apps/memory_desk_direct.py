"""``memory_desk`` changed after the threads were recorded: after the answer, the entrypoint writes the
tone to the store in its own code (``get_store().put``) rather than through the ``remember`` task."""

from __future__ import annotations

from langgraph.config import get_store
from langgraph.func import entrypoint
from langgraph.types import interrupt

from lg_apps.memory_desk import STORE, TONES, recall, reply


@entrypoint(store=STORE)
def memory_agent(user: str) -> str:
    tone = recall(user).result()
    if tone is None:
        tone = interrupt({"question": "which tone does this customer like?", "user": user})
        get_store().put((*TONES, user), "tone", {"tone": tone})
    return reply(user, tone).result()
