"""RT303: a blocking or non-durable sleep where the framework has a durable timer."""

from __future__ import annotations

import ast

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import CallFact, Invalid, Rule

_YIELDING = frozenset({"time.sleep", "asyncio.sleep", "trio.sleep", "anyio.sleep"})


def _is_zero(node: ast.expr) -> bool:
    """An int or float literal equal to zero (``0``, ``0.0``, ``0_0``); not ``False``, ``0j`` or ``-0``."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 0


class SleepsWithoutDurableTimer(Rule):
    """
    ## What it does
    Finds `time.sleep()` and, where the framework offers another durable sleep, `asyncio.sleep()`
    (and trio/anyio/gevent sleeps) in orchestration code. In Temporal `asyncio.sleep` *is* a durable
    timer and is not reported; in DBOS it is, because `DBOS.sleep` is the durable one. Frameworks
    without a durable sleep (the LangGraph functional API) get no sleep findings.

    ## Why is this bad?
    A plain sleep is not recorded: after a restart the workflow sleeps the whole duration again, and a
    blocking sleep stalls the worker's event loop, failing deadlock detection.

    ## Example
    ```python
    time.sleep(60)
    ```

    ## Use instead
    ```python
    DBOS.sleep(60)
    ```

    ## Fix safety
    Rewrites keep the duration; they are safe when the durable sleep has the same signature and call
    style (`DBOS.sleep`, the journal's `ctx.sleep` in a synchronous workflow), and only for a single
    argument (`asyncio.sleep(delay, result)` returns `result`). `time.sleep(...)` -> `await
    asyncio.sleep(...)` in Temporal is unsafe and offered only directly inside an `async def`; in a
    synchronous function or a lambda no fix is offered (an `await` there would not compile).
    """

    code = "RT303"
    name = "sleeps-without-durable-timer"
    category = "sleep"
    summary = "Non-durable sleep in orchestration code"
    what = "sleeps without a durable timer"
    calls = {name: "" for name in ("time.sleep", "asyncio.sleep", "trio.sleep", "anyio.sleep", "gevent.sleep")}

    def accept_call(self, call: CallFact) -> bool:
        # ``await asyncio.sleep(0)`` yields to the event loop once (``time.sleep(0)`` to other threads);
        # it waits for nothing, so it is not a timer, and turning it into a durable sleep would add a
        # checkpointed operation.
        if call.qualname in _YIELDING and call.positional:
            return not _is_zero(call.positional[0])
        return True

    def applies_to(self, effect: Effect, profile: FrameworkProfile) -> bool:
        return bool(profile.durable_sleeps) and effect.qualname not in profile.durable_sleeps

    VALID = (
        """
import asyncio
from temporalio import workflow

@workflow.defn
class Wait:
    @workflow.run
    async def run(self) -> None:
        await asyncio.sleep(60)
""",
        """
import asyncio
from dbos import DBOS

@DBOS.workflow()
async def poll() -> None:
    await asyncio.sleep(0)
""",
        """
import time
from langgraph.func import entrypoint

@entrypoint()
def agent(question: str) -> str:
    time.sleep(1)
    return question
""",
    )
    INVALID = (
        Invalid(
            """
import time
from temporalio import workflow

@workflow.defn
class Wait:
    @workflow.run
    async def run(self) -> None:
        time.sleep(60)
""",
            line=8, column=9,
            message='time.sleep() sleeps without a durable timer in workflow code; use asyncio.sleep() or workflow.sleep() (durable timers)', fix='await asyncio.sleep(60)', fix_safe=False,
        ),
        Invalid(
            """
import asyncio
from dbos import DBOS

@DBOS.workflow()
async def wait() -> None:
    await asyncio.sleep(60)
""",
            line=6, column=11,
            message='asyncio.sleep() sleeps without a durable timer in workflow code; use DBOS.sleep() / DBOS.sleep_async()', fix='DBOS.sleep_async(60)', fix_safe=True,
        ),
    )
