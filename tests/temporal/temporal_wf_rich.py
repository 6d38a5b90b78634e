"""Workflow code for ``histories/rich_history.json`` (type ``Rich``): a local activity, a child
workflow, a signal and an activity — and changed versions of it.

``Rich`` recorded the history: local activity ``lookup(order)``, child workflow ``Child``, wait for the
``approve`` signal, then activity ``ship``.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

_TIMEOUT = timedelta(seconds=5)


@activity.defn
async def lookup(order: str) -> str:
    return f"{order}:found"


@activity.defn
async def find(order: str) -> str:
    return f"{order}:found"


@activity.defn
async def ship(order: str) -> str:
    return f"{order}:shipped"


@workflow.defn(name="Child")
class Child:
    @workflow.run
    async def run(self, order: str) -> str:
        return f"{order}:checked"


@workflow.defn(name="Audit")
class Audit:
    @workflow.run
    async def run(self, order: str) -> str:
        return f"{order}:audited"


class _Approval:
    def __init__(self) -> None:
        self.approved = False

    @workflow.signal
    def approve(self) -> None:
        self.approved = True


@workflow.defn(name="Rich")
class Rich(_Approval):
    @workflow.run
    async def run(self, order: str) -> str:
        found = await workflow.execute_local_activity(lookup, order, start_to_close_timeout=_TIMEOUT)
        checked = await workflow.execute_child_workflow(Child.run, found, id=f"{workflow.info().workflow_id}-child")
        await workflow.wait_condition(lambda: self.approved)
        return await workflow.execute_activity(ship, checked, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Rich")
class RichOtherChild(_Approval):
    """The child workflow type changed from ``Child`` to ``Audit``."""

    @workflow.run
    async def run(self, order: str) -> str:
        found = await workflow.execute_local_activity(lookup, order, start_to_close_timeout=_TIMEOUT)
        checked = await workflow.execute_child_workflow(Audit.run, found, id=f"{workflow.info().workflow_id}-child")
        await workflow.wait_condition(lambda: self.approved)
        return await workflow.execute_activity(ship, checked, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Rich")
class RichOtherLocalActivity(_Approval):
    """The local activity changed from ``lookup`` to ``find``."""

    @workflow.run
    async def run(self, order: str) -> str:
        found = await workflow.execute_local_activity(find, order, start_to_close_timeout=_TIMEOUT)
        checked = await workflow.execute_child_workflow(Child.run, found, id=f"{workflow.info().workflow_id}-child")
        await workflow.wait_condition(lambda: self.approved)
        return await workflow.execute_activity(ship, checked, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Rich")
class RichWithoutChild(_Approval):
    """The child workflow is gone: the code waits for the signal, then ships."""

    @workflow.run
    async def run(self, order: str) -> str:
        found = await workflow.execute_local_activity(lookup, order, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.approved)
        return await workflow.execute_activity(ship, found, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Rich")
class RichShipsEarly(_Approval):
    """Ships without waiting for the approval signal: the same commands in the same order, only in an
    earlier workflow task. Temporal's replayer accepts that, so replaytest does too."""

    @workflow.run
    async def run(self, order: str) -> str:
        found = await workflow.execute_local_activity(lookup, order, start_to_close_timeout=_TIMEOUT)
        checked = await workflow.execute_child_workflow(Child.run, found, id=f"{workflow.info().workflow_id}-child")
        return await workflow.execute_activity(ship, checked, start_to_close_timeout=_TIMEOUT)
