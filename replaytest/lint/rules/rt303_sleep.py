"""RT303: a blocking or non-durable sleep where the framework has a durable timer.

Written against libcst's tree with matchers, as a Fixit rule is (``uses_libcst``; the example the rule API's
docs point plugin authors to): the ``ast`` pass resolves each call's callee, the rule matches the calls of a
sleep function in libcst's tree and reports them where the pass saw them. Its tree is built only for parsed
files that mention ``sleep`` and call one of the sleep functions outside steps.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst

    from replaytest.lint.libcst_facts import LibcstFacts

SLEEPS = frozenset({"time.sleep", "asyncio.sleep", "trio.sleep", "anyio.sleep", "gevent.sleep"})
_YIELDING = frozenset({"time.sleep", "asyncio.sleep", "trio.sleep", "anyio.sleep"})


def _spelled(node: libcst.BaseExpression) -> str:
    """How the source spells a callee, compactly (``asyncio.sleep``, ``clock().sleep``): as findings of
    every rule spell it (``syntax.dotted_text``)."""
    import libcst

    if isinstance(node, libcst.Name):
        return node.value
    if isinstance(node, libcst.Attribute):
        return f"{_spelled(node.value)}.{node.attr.value}"
    if isinstance(node, libcst.Call):
        return f"{_spelled(node.func)}()"
    if isinstance(node, libcst.Subscript):
        return f"{_spelled(node.value)}[...]"
    return "(...)"


def _waits_for_nothing(call: libcst.Call) -> bool:
    """``sleep(0)``: the first positional argument an int or float literal equal to zero (``0``, ``0.0``,
    ``0_0``); not ``False``, ``0j`` or ``-0``."""
    import libcst.matchers as m

    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if not positional:
        return False
    return m.matches(positional[0].value, m.Integer(value=m.MatchIfTrue(_zero)) | m.Float(value=m.MatchIfTrue(_zero)))


def _zero(literal: str) -> bool:
    """A number literal's text (``0``, ``0x0``, ``00``, ``0_0``, ``0e5``) denoting zero."""
    return bool(ast.literal_eval(literal) == 0)


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
    uses_libcst = True
    libcst_screen = (b"sleep",)
    libraries = ("trio", "anyio", "gevent")

    def on_libcst_module(self, facts: LibcstFacts) -> None:
        # libcst is imported here, not at the top: this module is loaded by every run, libcst only by runs
        # that parse a file mentioning a sleep.
        if not SLEEPS & facts.reportable_callees:
            return  # no sleep called where it could be reported: the tree is never parsed
        import libcst
        import libcst.matchers as m

        for call in m.findall(facts.module, m.Call()):
            if not isinstance(call, libcst.Call):
                continue
            qualname = facts.qualname(call)
            if qualname not in SLEEPS:
                continue
            # ``await asyncio.sleep(0)`` yields to the event loop once (``time.sleep(0)`` to other threads);
            # it waits for nothing, so it is not a timer, and turning it into a durable sleep would add a
            # checkpointed operation.
            if qualname in _YIELDING and _waits_for_nothing(call):
                continue
            facts.report(self, call, f"{_spelled(call.func)}()", qualname)

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
