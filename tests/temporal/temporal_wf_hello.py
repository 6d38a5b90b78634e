"""Workflow code for ``histories/hello_timer_history.json`` (type ``Hello``) and changed versions of it.

``Hello`` is the code that recorded the history: activity ``say(name)``, a 0.1 s durable timer, then
``say(<first result>)``. Every other class registers under the same type name and changes one thing.
The module is importable by name because the Temporal sandbox re-imports workflow modules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta

from temporalio import activity, workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

_TIMEOUT = timedelta(seconds=5)


@activity.defn
async def say(name: str) -> str:
    return f"hi {name}"


@activity.defn
async def shout(name: str) -> str:
    return f"HI {name}"


@workflow.defn(name="Hello")
class Hello:
    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloTimerFirst:
    """Reordered: the timer now comes before the first activity."""

    @workflow.run
    async def run(self, name: str) -> str:
        await asyncio.sleep(0.1)
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloRenamedFirst:
    """Renamed: the first activity is now ``shout``."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(shout, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloRenamedSecond:
    """Renamed: the second activity is now ``shout`` (the history has ``say`` twice)."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(shout, first, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloWithoutFirstActivity:
    """Dropped: the first activity is gone."""

    @workflow.run
    async def run(self, name: str) -> str:
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloWithoutTimer:
    """Dropped: the timer is gone."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloWithoutSecondActivity:
    """Dropped: the run returns after the timer."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return first


@workflow.defn(name="Hello")
class HelloExtraTimer:
    """Added: one more timer after the last activity."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        second = await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(1)
        return second


@workflow.defn(name="Hello")
class HelloReadsClock:
    """Reads the wall clock: the sandbox stops it during replay."""

    @workflow.run
    async def run(self, name: str) -> str:
        stamp = datetime.now().isoformat()
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, f"{first} {stamp}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloFailsAtEnd:
    """Fails the workflow where the history completed it."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)
        raise ApplicationError("refused", non_retryable=True)


@workflow.defn(name="Hello")
class HelloRaisesBug:
    """A bug: a plain exception fails the workflow task during replay."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        second = await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)
        return second + {"missing": ""}["key"]


@workflow.defn(dynamic=True)
class AnyWorkflow:
    """A dynamic workflow: it takes every type without a class of its own (here it replays ``Hello``)."""

    @workflow.run
    async def run(self, args: Sequence[RawValue]) -> str:
        name = workflow.payload_converter().from_payload(args[0].payload, str)
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Hello")
class HelloOtherArgument:
    """Changed argument: the second ``say`` now gets the first result in capitals."""

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first.upper(), start_to_close_timeout=_TIMEOUT)  # [upper]


@workflow.defn(name="Hello")
class HelloInsertedCall:
    """Inserted: a second call of the same activity type before the first one; sdk-core matches it with
    the recorded ``say(name)`` (same type) and feeds it that call's result."""

    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.execute_activity(say, "intro", start_to_close_timeout=_TIMEOUT)  # [inserted]
        first = await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, first, start_to_close_timeout=_TIMEOUT)
