"""RT101: reading the wall clock in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import CallFact, Invalid, Rule

# Reading these without an argument means "now"; with one they convert a given time.
_NOW_WITHOUT_ARGUMENT = {"time.localtime", "time.gmtime", "time.ctime", "time.asctime"}


class ReadsWallClock(Rule):
    """
    ## What it does
    Finds reads of the wall clock or a process timer (`datetime.now()`, `time.time()`, `date.today()`,
    `time.localtime()` without argument, ...) in orchestration code, directly or through a helper.
    A read in the `except` handler of a `try` whose body only calls the engine's own clock, which fails
    only outside a workflow (`try: now = workflow.now()` / `except Exception: now = datetime.now()`), is
    the fallback for callers outside a workflow and never runs in one, so it is not reported; a `try`
    body doing anything else that may fail is.

    A read whose value only fills log output — an argument of a logging call (`logging.info(...)`, a
    `logging.getLogger(...)` logger's methods, `self.logger` bound to one, `DBOS.logger`, `workflow.logger`,
    loguru's `logger`, `print`), as an f-string part, a `%`-format or `str.format` argument, directly or
    through local variables used nowhere else — is reported only where the engine rejects the read itself:
    on Temporal, whose workflow sandbox fails the workflow task at `datetime.now()` (the message says so).
    DBOS, LangGraph (functional entrypoints and graph nodes), Restate, Azure Durable Functions, AWS
    durable functions and the journal re-run the code as plain Python and compare only what they recorded
    (steps, tasks, journal entries, checkpoints), so a replay or recovery merely logs another time: not
    reported there. A value that also goes anywhere else (a step's input, a return, a branch, an attribute,
    another call) is reported as before. replaytest's own replay guard still notes such a read as a value
    trip (see `hazards`), since it cannot see where the value goes.

    ## Why is this bad?
    A durable engine resumes a workflow by re-running its code against the recorded history. The clock
    returns a different value on every replay, so any decision taken on it can differ from the recorded
    run and the replay diverges.

    ## Example
    ```python
    @workflow.run
    async def run(self) -> None:
        deadline = datetime.now() + timedelta(days=1)
    ```

    ## Use instead
    ```python
    @workflow.run
    async def run(self) -> None:
        deadline = workflow.now() + timedelta(days=1)
    ```

    ## Fix safety
    A fix is safe only when the rewritten call returns the same kind of value in the same zone:
    `datetime.utcnow()` -> `workflow.now().replace(tzinfo=None)` (naive UTC both),
    `datetime.now(ZoneInfo(...))` / `datetime.now(timezone.utc)` -> `workflow.now().astimezone(...)`
    (aware, same zone), `time.time()` -> `workflow.time()`. `datetime.now()` is naive *local*
    time, which depends on the worker's zone: its fix `workflow.now().replace(tzinfo=None)` keeps the
    value naive but is UTC, so it is unsafe (equal only where the zone is UTC); so is `datetime.now(tz)`
    with a `tz` that might be None. Replacements with another type (Azure's `current_utc_datetime`,
    Restate's `ctx.time()`) are unsafe. No fix is offered where the replacement's name is shadowed.
    """

    code = "RT101"
    name = "reads-wall-clock"
    category = "clock"
    summary = "Wall-clock or timer read in orchestration code"
    what = "reads the wall clock"
    calls = {
        name: ""
        for name in (
            "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns", "time.perf_counter",
            "time.perf_counter_ns", "time.process_time", "time.process_time_ns", "time.thread_time",
            "time.thread_time_ns", "time.localtime", "time.gmtime", "time.ctime", "time.asctime",
            "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
            "datetime.date.today", "pendulum.now", "pendulum.today", "arrow.now", "arrow.utcnow",
        )
    }

    def accept_call(self, call: CallFact) -> bool:
        return not (call.qualname in _NOW_WITHOUT_ARGUMENT and call.node.args)

    def only_reads(self, call: CallFact) -> bool:
        return True

    VALID = (
        """
from datetime import datetime
from temporalio import workflow

@workflow.defn
class Greeting:
    @workflow.run
    async def run(self) -> str:
        return workflow.now().isoformat()
""",
        """
import time
from temporalio import workflow

@workflow.defn
class Stamp:
    @workflow.run
    async def run(self, seconds: float) -> str:
        return time.strftime("%Y", time.gmtime(seconds))
""",
        """
from datetime import datetime
from temporalio import activity

@activity.defn
async def stamp() -> str:
    return datetime.now().isoformat()
""",
        """
from datetime import datetime
from temporalio import workflow

def today() -> str:
    try:
        from temporalio import workflow as wf
        now = wf.now()
    except Exception:
        now = datetime.now()
    return now.strftime("%Y-%m-%d")

@workflow.defn
class Greeting:
    @workflow.run
    async def run(self) -> str:
        return today()
""",
        """
import logging
from datetime import datetime
from dbos import DBOS

log = logging.getLogger(__name__)

@DBOS.step()
def publish(table: str) -> None:
    log.info("published %s", table)

@DBOS.workflow()
def write_audit_publish(table: str) -> None:
    started = datetime.now()
    log.info("run for %s started at %s", table, started)
    publish(table)
    DBOS.logger.info(f"All done at {datetime.now()}")
""",
    )
    INVALID = (
        Invalid(
            """
import time
from temporalio import workflow

@workflow.defn
class Status:
    @workflow.run
    async def run(self) -> None:
        self.started = workflow.now()

    @workflow.query
    def age(self) -> float:
        return time.time() - self.started.timestamp()
""",
            line=12, column=16,
            message=(
                "time.time() reads the wall clock in a query handler, where it does not break replay (queries "
                "are not recorded) but Temporal's workflow sandbox rejects it at run time; use workflow.now()"
            ),
            fix="workflow.time()", fix_safe=True,
        ),
        Invalid(
            """
from datetime import datetime
from temporalio import workflow

@workflow.defn
class Greeting:
    @workflow.run
    async def run(self) -> str:
        return datetime.now().isoformat()
""",
            line=8, column=16,
            message='datetime.now() reads the wall clock in workflow code; use workflow.now()', fix='workflow.now().replace(tzinfo=None)', fix_safe=False,
        ),
        Invalid(
            """
import datetime as dt
from temporalio import workflow

def stamp() -> str:
    return dt.datetime.now().isoformat()

@workflow.defn
class Greeting:
    @workflow.run
    async def run(self) -> str:
        return stamp()
""",
            line=11, column=16,
            message='stamp() reaches dt.datetime.now(), which reads the wall clock in workflow code; use workflow.now()',
        ),
        Invalid(
            """
from datetime import datetime
from dbos import DBOS

@DBOS.step()
def publish(table: str, at: str) -> None:
    pass

@DBOS.workflow()
def write_audit_publish(table: str) -> None:
    started = datetime.now()
    DBOS.logger.info(f"run started at {started}")
    publish(table, started.isoformat())
""",
            line=10, column=15,
            message='datetime.now() reads the wall clock in workflow code; use a @DBOS.step() function that reads the clock',
        ),
        Invalid(
            """
from datetime import datetime
from temporalio import workflow

@workflow.defn
class Greeting:
    @workflow.run
    async def run(self) -> None:
        workflow.logger.info(f"started at {datetime.now()}")
""",
            line=8, column=44,
            message=(
                "datetime.now() reads the wall clock in workflow code, only for a log line, where it does not break "
                "replay but Temporal's workflow sandbox rejects it at run time; use workflow.now()"
            ),
            fix='workflow.now().replace(tzinfo=None)', fix_safe=False,
        ),
        Invalid(
            """
import time
from dbos import DBOS

@DBOS.workflow()
def poll() -> float:
    return time.monotonic()
""",
            line=6, column=12,
            message='time.monotonic() reads the wall clock in workflow code; use a @DBOS.step() function that reads the clock',
        ),
        Invalid(
            """
from datetime import datetime
from temporalio import workflow

def today(fmt: str) -> str:
    try:
        return workflow.now().strftime(fmt)
    except ValueError:
        return datetime.now().strftime("%Y-%m-%d")

@workflow.defn
class Greeting:
    @workflow.run
    async def run(self, fmt: str) -> str:
        return today(fmt)
""",
            line=14, column=16,
            message='today() reaches datetime.now(), which reads the wall clock in workflow code; use workflow.now()',
        ),
    )
