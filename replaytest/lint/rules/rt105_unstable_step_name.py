"""RT105: a step, activity, task or node named with a value that differs between runs."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from replaytest.lint.rule import Invalid, Rule
from replaytest.lint.syntax import short_text

if TYPE_CHECKING:
    from replaytest.lint.facts import ModuleFacts
    from replaytest.lint.model import Effect
    from replaytest.lint.profile import FrameworkProfile

# Values that differ from one run, attempt or process to the next. A process-wide value counts too: a
# recovery or a replay runs in another process (an import-time ``uuid4()`` or hostname differs there).
_PER_RUN_CALLS = frozenset({
    "uuid.uuid1", "uuid.uuid4", "uuid.uuid6", "uuid.uuid7", "time.time", "time.time_ns", "time.monotonic",
    "time.monotonic_ns", "time.perf_counter", "time.perf_counter_ns", "datetime.datetime.now",
    "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today", "os.urandom", "os.getpid",
    "os.getenv", "os.environ.get", "socket.gethostname", "platform.node", "builtins.id", "builtins.hash",
    "threading.get_ident",
})
_PER_RUN_PREFIXES = ("random.", "secrets.", "numpy.random.", "uuid_utils.", "ulid.", "nanoid.", "shortuuid.")
_PER_RUN_READS = frozenset({"os.environ"})
# A set's order (of strings: hash randomisation) differs from one process to the next.
_SET_MEMBER = "set-member"
_SET_ORDER = "a set's iteration order"


class NamesStepUnstably(Rule):
    """
    ## What it does
    Finds a step, activity, task, graph node or child workflow whose name is computed from a value that
    differs between runs: a fresh UUID, the clock, randomness, the process (`os.getpid()`, the hostname,
    the environment, `id()`, `hash()`), or an element of a set (whose order differs from process to
    process). It looks at the name each engine matches recorded work by:

    - Temporal: an activity or child workflow given by name, `workflow.execute_activity("…")`,
      `start_activity`, `execute_local_activity`, `execute_child_workflow`, `start_child_workflow`;
    - DBOS: `@DBOS.step(name=…)`, `@DBOS.transaction(name=…)`, `@DBOS.workflow(name=…)`, and the options'
      name of `DBOS.run_step({"name": …}, fn)` / `run_step_async` (a dict display or `StepOptions(name=…)`);
    - LangGraph: `StateGraph.add_node("…", fn)` and `@task(name=…)`;
    - Restate: `ctx.run("…", fn)`, `ctx.run_typed`;
    - Azure Durable Functions: `context.call_activity("…")`, `call_sub_orchestrator` and their `_with_retry`
      forms;
    - the journal runtime: `ctx.step("…", fn)`, `ctx.model`;
    - AWS Lambda durable functions: `context.step(fn, name=…)`, `wait`, `run_in_child_context`, `map`,
      `parallel`, `invoke`, `wait_for_callback`, `create_callback`, `wait_for_condition`.

    A name built from workflow input or a loop counter is the same on every replay and is not reported.

    ## Why is this bad?
    The engines find what a run recorded by that name. When a replay, a recovery in another process or
    a resumed thread computes another name, the recorded work is not found: Temporal's replay fails the
    history at that activity as non-deterministic; DBOS recovery stops with `DBOSUnexpectedStepError` (one
    function was recorded where another was expected); a LangGraph thread paused in a renamed node resumes
    to nothing — the node does not run and its update is lost, without an error. Azure Durable Functions,
    Restate and the journal record the name with each task or journal entry, so the recorded entry and
    the code no longer agree; the AWS durable SDK stops the replay with `NonDeterministicExecutionError` (the
    checkpoint's name is not the name the code gives).

    ## Example
    ```python
    await workflow.execute_activity(f"charge-{uuid.uuid4()}", order, start_to_close_timeout=timedelta(seconds=30))
    ```

    ## Use instead
    ```python
    await workflow.execute_activity("charge", order, start_to_close_timeout=timedelta(seconds=30))
    ```
    Put what differs per run into the arguments, not the name; iterate `sorted(...)` of a set.
    """

    code = "RT105"
    name = "names-step-unstably"
    category = "step-name"
    summary = "Step, activity, task or node named with a value that differs between runs"
    what = "names a step with a value that differs between runs"
    # A module of DBOS steps only mentions no orchestration marker the profiles screen for.
    screen = (b"dbos.step(", b"dbos.transaction(")

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        # Module-level names bound to a value made once per process (``RUN = uuid.uuid4().hex``), for the
        # module being walked (the walk that filled it, so a new walk starts empty).
        self._walk: object | None = None
        self._per_process: dict[str, str] = {}

    def on_assign(self, facts: ModuleFacts, target: ast.expr, value: ast.expr | None) -> None:
        if facts.function is not None or value is None or not isinstance(target, ast.Name):
            return
        if self._walk is not facts:
            self._walk, self._per_process = facts, {}
        why = self._differs(facts, value)
        if why is not None:
            self._per_process[target.id] = why
        else:
            self._per_process.pop(target.id, None)

    def on_loop(self, facts: ModuleFacts, node: ast.For | ast.AsyncFor | ast.While) -> None:
        # ``for kind in {"a", "b"}:``: the loop variable's values come in the set's order; mark where the
        # body reads it, so a name built from it is known when the naming call is reached.
        if isinstance(node, ast.While) or facts.kind_of(node.iter) != "set":
            return
        targets = {name.id for name in ast.walk(node.target) if isinstance(name, ast.Name)}
        for statement in node.body:
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Name) and inner.id in targets and isinstance(inner.ctx, ast.Load):
                    facts.flag(_SET_MEMBER, inner)

    def on_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        named = facts.step_name(node, qualname)
        if named is None:
            return
        argument, names = named
        why = self._differs(facts, argument)
        if why is not None:
            # Reported wherever it is: a decorator's name is computed at import, a graph is built outside
            # any workflow function.
            facts.report_key(self, argument, short_text(facts.source, argument), why, names)

    def _differs(self, facts: ModuleFacts, argument: ast.expr) -> str | None:
        """What makes the name differ between runs (a call's spelling, or the set's order); None if nothing."""
        if isinstance(argument, ast.Constant):
            return None
        for inner in ast.walk(argument):
            if isinstance(inner, ast.Call):
                qualname = facts.resolve(inner.func)
                if qualname is not None and (qualname in _PER_RUN_CALLS or (
                        qualname.startswith(_PER_RUN_PREFIXES) and not qualname.startswith("random.Random"))):
                    return f"{short_text(facts.source, inner.func)}()"
                if isinstance(inner.func, ast.Attribute) and inner.func.attr == "pop" and not inner.args \
                        and facts.kind_of(inner.func.value) == "set":
                    return _SET_ORDER
                if qualname == "builtins.next" and inner.args and isinstance(inner.args[0], ast.Call) \
                        and facts.resolve(inner.args[0].func) == "builtins.iter" and inner.args[0].args \
                        and facts.kind_of(inner.args[0].args[0]) == "set":
                    return _SET_ORDER
            elif isinstance(inner, ast.Attribute) and facts.resolve(inner) in _PER_RUN_READS:
                return short_text(facts.source, inner)
            elif isinstance(inner, ast.Name):
                if facts.flagged(_SET_MEMBER, inner):
                    return _SET_ORDER
                if self._walk is facts and inner.id in self._per_process and not facts.is_local(inner.id):
                    return self._per_process[inner.id]
                binding = facts.lookup(inner.id)
                if binding is not None and binding[0] == "taint":
                    return str(binding[1])
        return None

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        names = effect.unit or "step"
        return (f"{effect.subject} names the {names} with a value that differs between runs ({effect.qualname}); "
                f"the engine finds the recorded {names} by its name, so a replay or recovery does not: use a fixed "
                "name and pass what varies as an argument")

    VALID = (
        """
from datetime import timedelta
from temporalio import workflow

@workflow.defn
class Charge:
    @workflow.run
    async def run(self, region: str) -> None:
        await workflow.execute_activity("charge", region, start_to_close_timeout=timedelta(seconds=30))
        await workflow.execute_activity(f"charge-{region}", region, start_to_close_timeout=timedelta(seconds=30))
        for kind in sorted({"card", "bank"}):
            await workflow.execute_activity(f"refund-{kind}", start_to_close_timeout=timedelta(seconds=30))
""",
        """
from dbos import DBOS

@DBOS.step(name="fetch-orders")
def fetch_orders() -> list[str]:
    return []
""",
        """
from langgraph.graph import StateGraph

def review(state: dict) -> dict:
    return state

builder = StateGraph(dict)
for stage in ("draft", "review"):
    builder.add_node(f"{stage}_node", review)
""",
        """
import restate

service = restate.Service("orders")

@service.handler()
async def place(ctx: restate.Context, order_id: str) -> str:
    return await ctx.run(f"reserve-{order_id}", lambda: order_id)
""",
        """
import azure.durable_functions as df

app = df.DFApp()

@app.orchestration_trigger(context_name="context")
def orchestrator(context: df.DurableOrchestrationContext):
    return (yield context.call_activity("Charge", context.get_input()))
""",
        """
from replaytest.journal import workflow

@workflow
def pay(ctx, order_id: str) -> str:
    return ctx.step(f"charge-{order_id}", lambda: order_id)
""",
        """
from dbos import DBOS

def fetch(order_id: str) -> str:
    return order_id

@DBOS.workflow()
def sync(order_id: str) -> str:
    DBOS.run_step({"name": f"fetch-{order_id}"}, fetch, order_id)
    return DBOS.run_step(None, fetch, order_id)
""",
        """
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration

@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    order_id = event["order_id"]
    context.wait(Duration.from_seconds(1), name=f"settle-{order_id}")
    return context.step(lambda _: order_id, name="charge")
""",
    )
    INVALID = (
        Invalid(
            """
import uuid
from datetime import timedelta
from temporalio import workflow

@workflow.defn
class Charge:
    @workflow.run
    async def run(self, order: str) -> None:
        await workflow.execute_activity(f"charge-{uuid.uuid4()}", order, start_to_close_timeout=timedelta(seconds=30))
""",
            line=9, column=41,
            message='f"charge-{uuid.uuid4()}" names the activity with a value that differs between runs (uuid.uuid4()); '
                    'the engine finds the recorded activity by its name, so a replay or recovery does not: use a fixed '
                    'name and pass what varies as an argument',
        ),
        Invalid(
            """
from datetime import timedelta
from temporalio import workflow

@workflow.defn
class Refund:
    @workflow.run
    async def run(self) -> None:
        for kind in {"card", "bank"}:
            await workflow.execute_activity(f"refund-{kind}", start_to_close_timeout=timedelta(seconds=30))
""",
            line=9, column=45,
            message='f"refund-{kind}" names the activity with a value that differs between runs (a set\'s iteration '
                    'order); the engine finds the recorded activity by its name, so a replay or recovery does not: use '
                    'a fixed name and pass what varies as an argument',
        ),
        Invalid(
            """
import socket
from dbos import DBOS

@DBOS.step(name=f"fetch-{socket.gethostname()}")
def fetch_orders() -> list[str]:
    return []
""",
            line=4, column=17,
            message='f"fetch-{socket.gethostname()}" names the step with a value that differs between runs '
                    '(socket.gethostname()); the engine finds the recorded step by its name, so a replay or recovery '
                    'does not: use a fixed name and pass what varies as an argument',
        ),
        Invalid(
            """
import uuid
from langgraph.graph import StateGraph

def review(state: dict) -> dict:
    return state

builder = StateGraph(dict)
builder.add_node(f"review_{uuid.uuid4().hex[:8]}", review)
""",
            line=8, column=18,
            message='f"review_{uuid.uuid4().hex[:8]}" names the graph node with a value that differs between runs '
                    '(uuid.uuid4()); the engine finds the recorded graph node by its name, so a replay or recovery '
                    'does not: use a fixed name and pass what varies as an argument',
        ),
        Invalid(
            """
import time
import restate

service = restate.Service("orders")

@service.handler()
async def place(ctx: restate.Context, order_id: str) -> str:
    return await ctx.run(f"reserve-{int(time.time())}", lambda: order_id)
""",
            line=8, column=26,
            message='f"reserve-{int(time.time())}" names the run step with a value that differs between runs '
                    '(time.time()); the engine finds the recorded run step by its name, so a replay or recovery does '
                    'not: use a fixed name and pass what varies as an argument',
        ),
        Invalid(
            """
import random
import azure.durable_functions as df

app = df.DFApp()

@app.orchestration_trigger(context_name="context")
def orchestrator(context: df.DurableOrchestrationContext):
    return (yield context.call_activity(random.choice(["ChargeA", "ChargeB"]), context.get_input()))
""",
            line=8, column=41,
            message='random.choice(["ChargeA", "ChargeB"]) names the activity with a value that differs between runs '
                    '(random.choice()); the engine finds the recorded activity by its name, so a replay or recovery '
                    'does not: use a fixed name and pass what varies as an argument',
        ),
        Invalid(
            """
import uuid
from replaytest.journal import workflow

@workflow
def pay(ctx, order_id: str) -> str:
    step = "charge-" + str(uuid.uuid4())
    return ctx.step(step, lambda: order_id)
""",
            line=7, column=21,
            message='step names the step with a value that differs between runs (uuid.uuid4()); the engine finds the '
                    'recorded step by its name, so a replay or recovery does not: use a fixed name and pass what '
                    'varies as an argument',
        ),
        Invalid(
            """
import uuid
from dbos import DBOS

def fetch(order_id: str) -> str:
    return order_id

@DBOS.workflow()
async def sync(order_id: str) -> str:
    return await DBOS.run_step_async({"name": f"fetch-{uuid.uuid4()}"}, fetch, order_id)
""",
            line=9, column=47,
            message='f"fetch-{uuid.uuid4()}" names the step with a value that differs between runs (uuid.uuid4()); '
                    'the engine finds the recorded step by its name, so a replay or recovery does not: use a fixed '
                    'name and pass what varies as an argument',
        ),
        Invalid(
            """
import time
from aws_durable_execution_sdk_python import DurableContext, durable_execution

@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(lambda _: event["order_id"], name=f"charge-{time.time_ns()}")
""",
            line=6, column=59,
            message='f"charge-{time.time_ns()}" names the step with a value that differs between runs '
                    '(time.time_ns()); the engine finds the recorded step by its name, so a replay or recovery does '
                    'not: use a fixed name and pass what varies as an argument',
        ),
    )
