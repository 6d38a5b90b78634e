"""Workflow code for the two 2022 histories recorded by Temporal's Python SDK test suite.

It reproduces the SDK's test workflow: with ``should_cause_nondeterminism`` the recorded code slept
only while replaying, so replaying the "nondeterministic" history against it must fail.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow


@dataclass
class SayHelloParams:
    name: str
    should_wait: bool = False
    should_error: bool = False
    should_cause_nondeterminism: bool = False


@activity.defn
async def say_hello(name: str) -> str:
    return f"Hello, {name}!"


@workflow.defn
class SayHelloWorkflow:
    def __init__(self) -> None:
        self._finish = False

    @workflow.run
    async def run(self, params: SayHelloParams) -> str:
        result = await workflow.execute_activity(say_hello, params.name, schedule_to_close_timeout=timedelta(seconds=60))
        if params.should_cause_nondeterminism and workflow.unsafe.is_replaying():
            await asyncio.sleep(0.1)
        if params.should_wait:
            await workflow.wait_condition(lambda: self._finish)
        if params.should_error:
            raise ValueError("Intentional error")
        return result

    @workflow.signal
    def finish(self) -> None:
        self._finish = True
