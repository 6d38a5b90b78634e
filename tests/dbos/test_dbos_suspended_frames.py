"""The issuing line of an async workflow, read from another thread: DBOS checks an async step's record in a
worker (``asyncio.to_thread``), which can start before the workflow's coroutine has reached its ``await``.
The frames must still be the whole chain of awaits, however the two threads interleave."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from replaytest.plugins.dbos import internals as dbos_sysdb


def _run_registered(workflow: Any) -> Any:
    """Run ``workflow`` on a new loop in this thread, registered the way a replayed async workflow is."""
    loop = asyncio.new_event_loop()
    entry = (workflow, threading.get_ident())
    dbos_sysdb._running.append(entry)
    try:
        return loop.run_until_complete(workflow)
    finally:
        dbos_sysdb._running.remove(entry)
        loop.close()


def test_a_check_that_starts_before_the_workflow_suspends_still_sees_the_whole_chain() -> None:
    seen: list[list[str]] = []
    started = threading.Event()

    def check_in_worker() -> None:
        started.set()
        seen.append([frame.f_code.co_name for frame in dbos_sysdb.suspended_frames()])

    async def the_step() -> None:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, check_in_worker)
        # The worker runs while this coroutine is still executing, as it does on a loaded machine.
        started.wait(5)
        time.sleep(0.05)
        await future

    async def pack_parcel() -> None:
        await the_step()

    _run_registered(pack_parcel())
    assert seen == [["pack_parcel", "the_step"]]


def test_a_check_on_the_loop_thread_itself_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[Any] = []
    monkeypatch.setattr(dbos_sysdb, "_wait_until_suspended", waited.append)

    async def pack_parcel() -> list[str]:
        return [frame.f_code.co_name for frame in dbos_sysdb.suspended_frames()]

    # Its own coroutine never suspends while it runs: waiting for that would only run out the bound.
    assert _run_registered(pack_parcel()) == ["pack_parcel"]
    assert waited == []
