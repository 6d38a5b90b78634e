"""Workflow code for the patch histories (type ``Patched``), through a patch's life cycle.

``histories/patched_v1_history.json`` was recorded by ``PatchedV1`` (one activity), and
``histories/patched_v2_history.json`` by ``PatchedV2`` (``workflow.patched("v2")`` guarding a new
timer, so the history holds a ``core_patch`` marker for ``v2``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_wf_hello import say

_TIMEOUT = timedelta(seconds=5)


@workflow.defn(name="Patched")
class PatchedV1:
    """Before the change."""

    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Patched")
class PatchedV2:
    """The change behind ``workflow.patched("v2")``: old runs keep the old path."""

    @workflow.run
    async def run(self, name: str) -> str:
        if workflow.patched("v2"):
            await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Patched")
class PatchedV3Deprecated:
    """No pre-patch run is open any more: the patch is deprecated, the new path unconditional."""

    @workflow.run
    async def run(self, name: str) -> str:
        workflow.deprecate_patch("v2")
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Patched")
class PatchRemovedTooEarly:
    """The patch call removed while histories with the ``v2`` marker are still replayed."""

    @workflow.run
    async def run(self, name: str) -> str:
        await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="Patched")
class PatchRenamed:
    """The patch id changed from ``v2`` to ``v3``."""

    @workflow.run
    async def run(self, name: str) -> str:
        if workflow.patched("v3"):
            await asyncio.sleep(0.1)
        return await workflow.execute_activity(say, name, start_to_close_timeout=_TIMEOUT)
