"""RT302: threads, process pools, subprocesses and order-racing concurrency in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import Rule


class StartsUnrecordedConcurrency(Rule):
    """
    ## What it does
    Finds threads, thread and process pools, subprocesses, `asyncio.to_thread` / `run_in_executor`, and
    the framework-specific constructs whose completion order is not recorded (`asyncio.wait` and
    `asyncio.as_completed` in Temporal, `asyncio.gather` of sub-coroutines in DBOS) in orchestration code.

    ## Why is this bad?
    Work on another thread or process is invisible to the engine and finishes in a different order on
    each run; the workflow's commands come out in another order and the replay diverges.

    ## Example
    ```python
    done, _ = await asyncio.wait(tasks)
    ```

    ## Use instead
    ```python
    done, _ = await workflow.wait(tasks)
    ```

    ## Fix safety
    `asyncio.wait` / `asyncio.as_completed` to `workflow.wait` / `workflow.as_completed` in Temporal take
    the same arguments but need a recent `temporalio`, so the fix is unsafe.
    """

    code = "RT302"
    name = "starts-unrecorded-concurrency"
    category = "concurrency"
    summary = "Threads, pools, subprocesses or racing concurrency in orchestration code"
    what = "starts concurrent work the engine does not record"
    calls = {
        name: ""
        for name in (
            "threading.Thread", "threading.Timer", "_thread.start_new_thread",
            "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
            "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.pool.ThreadPool",
            "multiprocessing.pool.Pool", "subprocess.run", "subprocess.Popen", "subprocess.call",
            "subprocess.check_call", "subprocess.check_output", "subprocess.getoutput",
            "subprocess.getstatusoutput", "os.system", "os.popen", "os.fork", "os.spawnl", "os.spawnv",
            "asyncio.to_thread", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
            "asyncio.get_event_loop.run_in_executor", "asyncio.get_running_loop.run_in_executor",
            "asyncio.AbstractEventLoop.run_in_executor",
        )
    }
    # Findings only where a profile lists them (``extra_effects``).
    wording = {
        "asyncio.wait": "completes in an order the engine does not record",
        "asyncio.as_completed": "completes in an order the engine does not record",
        "asyncio.gather": "runs sub-coroutines concurrently outside the engine's ordering",
    }

    VALID = (
        """
import asyncio
from temporalio import workflow

@workflow.defn
class FanOut:
    @workflow.run
    async def run(self, items: list) -> list:
        return await asyncio.gather(*(workflow.execute_activity("work", i, start_to_close_timeout=None) for i in items))
""",
    )
    INVALID = (
        """
import subprocess
from temporalio import workflow

@workflow.defn
class Build:
    @workflow.run
    async def run(self) -> str:
        return subprocess.check_output(["git", "rev-parse", "HEAD"]).decode()
""",
        """
import asyncio
from temporalio import workflow

@workflow.defn
class Race:
    @workflow.run
    async def run(self, tasks: list) -> None:
        await asyncio.wait(tasks)
""",
        """
import asyncio
from dbos import DBOS

@DBOS.workflow()
async def fan_out(items: list) -> list:
    return await asyncio.gather(*(handle(i) for i in items))
""",
    )
