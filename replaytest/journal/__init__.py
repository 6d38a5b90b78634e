"""The reference durable runtime: workflows on SQLite (``Journal``, ``Worker``) recording neutral
histories, and the command/context layer the replay engine reuses.

Orchestration code::

    @workflow(name="support_agent", version="2026-11-28.1")
    def support_agent(ctx, ticket):
        plan = ctx.model("plan", call_llm, ticket, prompt=PLANNER)
        ctx.step("email", send_mail, plan, key=ctx.idempotency_key())

Runtime: ``Journal(path)``, ``journal.start(support_agent, input)``, ``Worker(journal, [support_agent])
.run_until_idle()``, ``journal.signal(run_id, name, payload)``, ``journal.export(run_id)``.

Workers lease the runs they execute; a heartbeat thread per worker renews the lease while a step runs
(``Heartbeat``), so only a worker that died or stalled loses a run to another, and fencing keeps the
loser from recording anything.
"""

from replaytest.journal.commands import Backend, CallSite, Command
from replaytest.journal.context import AsyncContext, Context, RunInfo
from replaytest.journal.errors import (
    ContinueAsNew,
    ControlFlow,
    JournalDivergence,
    Park,
    StaleLeaseError,
    StepFailed,
    StepTimeout,
)
from replaytest.journal.heartbeat import Heartbeat, Lease
from replaytest.journal.prompts import Prompt
from replaytest.journal.retry import NO_RETRY, RetryPolicy, Timing
from replaytest.journal.store import Claim, Journal
from replaytest.journal.worker import LiveBackend, Worker
from replaytest.journal.workflow import Outcome, WorkflowDef, definition_of, find_workflow, run_workflow, workflow

__all__ = [
    "NO_RETRY",
    "AsyncContext",
    "Backend",
    "CallSite",
    "Claim",
    "Command",
    "Context",
    "ContinueAsNew",
    "ControlFlow",
    "Heartbeat",
    "Journal",
    "JournalDivergence",
    "Lease",
    "LiveBackend",
    "Outcome",
    "Park",
    "Prompt",
    "RetryPolicy",
    "RunInfo",
    "StaleLeaseError",
    "StepFailed",
    "StepTimeout",
    "Timing",
    "WorkflowDef",
    "Worker",
    "definition_of",
    "find_workflow",
    "run_workflow",
    "workflow",
]
