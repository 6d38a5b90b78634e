"""A helper that works in and out of a workflow: it reads ``workflow.now()`` and falls back to the wall clock
in its ``except`` handler, which only a call from outside a workflow reaches. ``Stamped`` calls it from its
run and returns which branch ran, so the real engine shows that the fallback never runs in workflow code.
The module is importable by name because the Temporal sandbox re-imports workflow modules.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow


def stamp() -> tuple[str, str]:
    """(the time, "workflow" or "fallback": which clock was read)."""
    try:
        now = workflow.now()
    except Exception:
        return datetime.now().isoformat(), "fallback"
    return now.isoformat(), "workflow"


@workflow.defn(name="Stamped")
class Stamped:
    @workflow.run
    async def run(self) -> list[str]:
        return list(stamp())
