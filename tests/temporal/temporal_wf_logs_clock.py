"""The ``Hello`` workflow of ``histories/hello_timer_history.json`` with one line added: a wall-clock read
whose value only fills a log line. Nothing Temporal records depends on it, yet its workflow sandbox rejects
the read itself. Importable by name, as the Temporal sandbox re-imports workflow modules."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from temporalio import activity, workflow

_TIMEOUT = timedelta(seconds=5)


@activity.defn
async def say(name: str) -> str:
    return f"hi {name}"


@workflow.defn(name="Hello")
class HelloLogsClock:
    @workflow.run
    async def run(self, name: str) -> str:
        workflow.logger.info(f"greeting {name} at {datetime.now()}")
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)
