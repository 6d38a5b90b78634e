"""Workflow code for ``histories/hello_timer_history.json`` (type ``Hello``, activity ``say`` twice) whose
first activity is named at run time with a value that differs between runs (RT105): ``id()`` of a fresh
object, which the Temporal sandbox allows. The module is importable by name because the sandbox re-imports
workflow modules."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow

_TIMEOUT = timedelta(seconds=5)


@workflow.defn(name="Hello")
class HelloNamedPerRun:
    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(f"say-{id(object())}", name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity("say", first, start_to_close_timeout=_TIMEOUT)
