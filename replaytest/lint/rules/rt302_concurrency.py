"""RT302: threads, process pools, subprocesses and order-racing concurrency in orchestration code."""

from __future__ import annotations

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Invalid, Rule


class StartsUnrecordedConcurrency(Rule):
    """
    ## What it does
    Finds threads, thread and process pools, subprocesses, `asyncio.to_thread` / `run_in_executor`,
    blocking thread primitives (`Event().wait()`, `Lock.acquire()` or `with lock:` on a `Lock`, `RLock`,
    `Semaphore` or `Condition`, `Condition.wait()`), reads of the
    thread identity (`threading.current_thread()`, `get_ident()`), and
    the framework-specific constructs whose completion order is not recorded (`asyncio.wait` and
    `asyncio.as_completed` in Temporal) in orchestration code. `asyncio.gather` is not reported: Temporal
    orders the commands it issues, and DBOS numbers operations when they are called — except a DBOS patch
    check (`DBOS.patch`, `patch_async`, `deprecate_patch*`) in a gathered coroutine, directly or in a
    helper it calls, whose operation number depends on how the coroutines interleave.

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
    } | {
        name: "blocks on a thread primitive the engine does not record"
        for name in (
            "threading.Event.wait", "threading.Lock.acquire", "threading.RLock.acquire", "threading.Condition.wait",
            "threading.Condition.wait_for", "threading.Semaphore.acquire", "threading.BoundedSemaphore.acquire",
            "threading.Barrier.wait", "threading.Condition.acquire",
            # ``with lock:`` acquires it (``with`` statements are recorded as calls of ``__enter__``).
            "threading.Lock.__enter__", "threading.RLock.__enter__", "threading.Condition.__enter__",
            "threading.Semaphore.__enter__", "threading.BoundedSemaphore.__enter__",
        )
    } | {
        name: "reads which thread runs the code, which differs between the recorded run and the replay"
        for name in ("threading.current_thread", "threading.get_ident", "threading.get_native_id")
    }
    # Findings only where a profile lists them (``extra_effects``).
    wording = {
        "asyncio.wait": "completes in an order the engine does not record",
        "asyncio.as_completed": "completes in an order the engine does not record",
    }
    # Findings only in coroutines a profile's ``concurrent_calls`` gathers (``order_sensitive_calls``).
    in_gathered = {
        f"dbos.DBOS.{name}": (
            "checks a patch in a coroutine run by asyncio.gather(); DBOS gives the check an operation number "
            "that depends on how the gathered coroutines interleave (DBOSPatchNondeterminismError)",
            "the patch check in the workflow before asyncio.gather() and pass its result to the coroutines",
        )
        for name in ("patch", "patch_async", "deprecate_patch", "deprecate_patch_async")
    }

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        if effect.qualname in self.in_gathered:
            what, instead = self.in_gathered[effect.qualname]
            if via is not None:
                return f"{via} reaches {effect.subject}, which {what}; make {instead}"
            return f"{effect.subject} {what}; make {instead}"
        if effect.qualname in self.wording:
            return super().message(effect, profile, via)
        # Threads, pools and subprocesses: the work belongs in a recorded step, not in the framework's
        # concurrency primitives (``workflow.wait()`` does not run a thread).
        replacement = (profile.replacements.get("network") if profile else None) or "a recorded step"
        what = self.calls.get(effect.qualname) or self.what
        if via is not None:
            return f"{via} reaches {effect.subject}, which {what} in workflow code; move the work into {replacement}"
        return f"{effect.subject} {what} in workflow code; move the work into {replacement}"

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
        """
import asyncio
from dbos import DBOS

@DBOS.step()
async def handle(item: str) -> str:
    return item.upper()

@DBOS.workflow()
async def fan_out(items: list) -> list:
    return await asyncio.gather(*(handle(i) for i in items))
""",
        # An asyncio lock does not block the thread; a lock made in the ``with`` is fresh and never waits.
        """
import asyncio
import threading
from temporalio import workflow

@workflow.defn
class Guarded:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()

    @workflow.run
    async def run(self) -> int:
        async with self.lock:
            pass
        with threading.Lock():
            return 1
""",
        # A patch check before the gather, or in a helper called outside one, has a fixed position.
        """
import asyncio
from dbos import DBOS

@DBOS.step()
async def charge(item: str) -> str:
    return item

async def choose() -> bool:
    return await DBOS.patch_async("use-v2")

@DBOS.workflow()
async def fan_out(items: list) -> list:
    v2 = await DBOS.patch_async("use-v2") and await choose()
    return await asyncio.gather(*(charge(i + "-v2" if v2 else i) for i in items))
""",
    )
    INVALID = (
        Invalid(
            """
import subprocess
from temporalio import workflow

@workflow.defn
class Build:
    @workflow.run
    async def run(self) -> str:
        return subprocess.check_output(["git", "rev-parse", "HEAD"]).decode()
""",
            line=8, column=16,
            message='subprocess.check_output() starts concurrent work the engine does not record in workflow code; move the work into an activity (workflow.execute_activity)',
        ),
        Invalid(
            """
import asyncio
from temporalio import workflow

@workflow.defn
class Race:
    @workflow.run
    async def run(self, tasks: list) -> None:
        await asyncio.wait(tasks)
""",
            line=8, column=15,
            message='asyncio.wait() completes in an order the engine does not record in workflow code; use workflow.wait() / workflow.as_completed() or activities', fix='workflow.wait(tasks)', fix_safe=False,
        ),
        Invalid(
            """
import threading
from dbos import DBOS

@DBOS.workflow()
def fan_out(items: list) -> None:
    threading.Thread(target=print, args=(items,)).start()
""",
            line=6, column=5,
            message='threading.Thread() starts concurrent work the engine does not record in workflow code; move the work into a @DBOS.step() function',
        ),
        Invalid(
            """
import threading
from dbos import DBOS

LOCK = threading.RLock()

@DBOS.workflow()
def tally(items: list) -> int:
    with LOCK:
        return len(items)
""",
            line=8, column=10,
            message=(
                "with LOCK blocks on a thread primitive the engine does not record in workflow code; move the work "
                "into a @DBOS.step() function"
            ),
        ),
        Invalid(
            """
import asyncio
from dbos import DBOS

@DBOS.step()
async def charge(item: str) -> str:
    return item

async def handle(item: str) -> str:
    if await DBOS.patch_async("use-v2"):
        return await charge(item + "-v2")
    return await charge(item)

@DBOS.workflow()
async def fan_out(items: list) -> list:
    return await asyncio.gather(*(handle(i) for i in items))
""",
            line=15, column=35,
            message=(
                "handle() reaches DBOS.patch_async(), which checks a patch in a coroutine run by asyncio.gather(); "
                "DBOS gives the check an operation number that depends on how the gathered coroutines interleave "
                "(DBOSPatchNondeterminismError); make the patch check in the workflow before asyncio.gather() and "
                "pass its result to the coroutines"
            ),
        ),
        Invalid(
            """
import asyncio
from dbos import DBOS

@DBOS.step()
async def charge(item: str) -> str:
    return item

@DBOS.workflow()
async def fan_out(item: str) -> list:
    return await asyncio.gather(DBOS.patch_async("use-v2"), charge(item))
""",
            line=10, column=33,
            message=(
                "DBOS.patch_async() checks a patch in a coroutine run by asyncio.gather(); DBOS gives the check an "
                "operation number that depends on how the gathered coroutines interleave "
                "(DBOSPatchNondeterminismError); make the patch check in the workflow before asyncio.gather() and "
                "pass its result to the coroutines"
            ),
        ),
    )
