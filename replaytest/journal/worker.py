"""``Worker`` — claims ready runs and executes them — and ``LiveBackend``, the backend that records.

Executing a run means running its workflow function from the top with a ``LiveBackend``: commands the
journal already holds are answered from it (in order, checked for the same kind and name), the first
new command is performed and committed before the code continues. A crash anywhere therefore loses at
most the command that was in flight; the next worker to claim the run re-runs the function and picks up
exactly there. Whether that in-flight effect happened twice is up to the effect: pass
``ctx.idempotency_key()`` to anything that can deduplicate.

While an execution runs, the worker's ``Heartbeat`` thread keeps its lease alive (every ``lease_s / 3``,
fenced), so a long step is not taken over by another worker; a dead or stopped worker stops renewing
and its lease runs out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import os
import socket
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from replaytest.history.model import ErrorInfo, Event
from replaytest.journal.commands import Command, Thunk
from replaytest.journal.errors import JournalDivergence, Park, StaleLeaseError, StepFailed
from replaytest.journal.heartbeat import Heartbeat, Lease
from replaytest.journal.retry import Timing
from replaytest.journal.store import Claim, EventRow, Journal, dumps
from replaytest.journal.workflow import Outcome, WorkflowDef, definition_of, run_workflow
from replaytest.prompts import prompt_manifest


class LiveBackend:
    """Answers commands from the run's journal and records new ones (fenced by the claim).

    ``lease``, when the worker heartbeats, is checked before every effect: once the heartbeat has found
    the run taken over, no further effect is started (``StaleLeaseError``).
    """

    def __init__(self, journal: Journal, claim: Claim, lease_s: float, lease: Lease | None = None) -> None:
        self.journal = journal
        self.claim = claim
        self.lease_s = lease_s
        self.lease = lease
        self.recorded: dict[int, EventRow] = journal.events(claim.run.run_id)

    def execute(self, command: Command, thunk: Thunk) -> Any:
        recorded = self.recorded.get(command.seq)
        if command.kind == "marker":
            return self._marker(command, recorded)
        if recorded is not None and (recorded.kind, recorded.name) != (command.kind, command.name):
            raise JournalDivergence(
                f"run {self.claim.run.run_id} position {command.seq}: the journal holds {recorded.kind} {recorded.name!r} "
                f"but the code now issues {command.kind} {command.name!r}"
                + (f" at {command.source}" if command.source else "")
            )
        if command.kind == "timer":
            return self._timer(command, recorded)
        if command.kind == "signal":
            return self._signal(command, recorded)
        if recorded is not None:
            if recorded.error is not None:
                raise StepFailed(recorded.name, recorded.error.type, recorded.error.message)
            return recorded.result
        if self.lease is not None:
            self.lease.check()
        try:
            outcome = thunk()
        except StepFailed as failure:
            self._append(command, error=ErrorInfo(type=failure.error_type, message=failure.message))
            raise
        if inspect.isawaitable(outcome):
            return self._record_later(command, outcome)
        return self._record(command, outcome)

    async def _record_later(self, command: Command, outcome: Awaitable[Any]) -> Any:
        try:
            value = await outcome
        except StepFailed as failure:
            self._append(command, error=ErrorInfo(type=failure.error_type, message=failure.message))
            raise
        return self._record(command, value)

    def _record(self, command: Command, value: Any) -> Any:
        try:
            text = dumps(value)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{command.kind} {command.name!r} returned a {type(value).__name__}, which cannot be recorded as JSON "
                f"({error}); return JSON-like values from steps"
            ) from None
        # The code gets what a resume or a replay will give it: the JSON round trip.
        recorded = json.loads(text)
        self._append(command, result_json=text, result=recorded)
        return recorded

    def _append(
        self, command: Command, *, state: str = "done", due_at: float | None = None, result_json: str | None = None, **fields: Any
    ) -> None:
        event = Event(
            seq=command.seq, kind=command.kind, name=command.name, args_digest=command.args_digest, prompt=command.prompt,
            idempotency_key=command.idempotency_key, patch_id=command.patch_id, duration_s=command.duration_s, **fields,
        )
        self.journal.append(self.claim, event, state=state, due_at=due_at, lease_s=self.lease_s, result_json=result_json)
        self.recorded[command.seq] = EventRow(
            seq=command.seq, kind=command.kind, name=command.name, state=state, result=fields.get("result"),
            error=fields.get("error"), patch_id=command.patch_id, due_at=due_at,
        )

    def _marker(self, command: Command, recorded: EventRow | None) -> bool:
        if recorded is None:
            self._append(command, extra={"deprecated": True} if command.deprecated else {})
            return True
        # Temporal semantics: a run recorded before the patch holds another command here.
        return recorded.kind == "marker" and recorded.patch_id == command.patch_id

    def _timer(self, command: Command, recorded: EventRow | None) -> None:
        if recorded is not None and recorded.state == "done":
            return None
        now = self.journal.clock()
        due = recorded.due_at if recorded is not None and recorded.due_at is not None else now + (command.duration_s or 0.0)
        if now >= due:
            self._append(command, due_at=due)
            return None
        if recorded is None:
            self._append(command, state="pending", due_at=due)
        raise Park(wake_at=due)

    def _signal(self, command: Command, recorded: EventRow | None) -> Any:
        if recorded is not None and recorded.state == "done":
            return recorded.result
        event = Event(seq=command.seq, kind=command.kind, name=command.name)
        found, payload = self.journal.take_signal(self.claim, event, self.lease_s)
        if found:
            self.recorded[command.seq] = EventRow(seq=command.seq, kind=command.kind, name=command.name, state="done", result=payload)
            return payload
        now = self.journal.clock()
        if recorded is not None:
            due = recorded.due_at
        else:
            due = None if command.timeout_s is None else now + command.timeout_s
        if due is not None and now >= due:
            self._append(command, due_at=due)  # timed out: recorded with a null payload
            return None
        if recorded is None:
            self._append(command, state="pending", due_at=due)
        raise Park(wake_at=due, signal=command.name)


class Worker:
    """Executes ready runs of ``workflows`` (decorated functions). One run at a time per worker; run
    several workers (threads or processes, each with its own ``Journal``) for parallelism.

    Leases: a claim leases the run for ``lease_s``; every committed command extends it, and while the
    run executes a heartbeat thread (one per worker, see ``replaytest.journal.heartbeat``) renews it
    every ``lease_s / 3`` through its own connection. A step may therefore run far longer than the
    lease; ``lease_s`` bounds instead how long a dead, stopped or stalled worker keeps a run from the
    others. A step that never returns holds its run for as long as the worker lives: bound steps with
    ``RetryPolicy.attempt_timeout``/``total_timeout``. A worker that nevertheless loses its lease (it
    stalled past it, or the journal was changed under it) is fenced off: its heartbeat stops, it
    starts no further effect and its next append is rejected (the step may have run twice — which is
    what idempotency keys are for).

    ``heartbeat=False`` turns the heartbeat off (the lease then lives only from commit to commit); an
    in-memory journal has none, having no second connection. ``close()`` (or ``with Worker(…)``) stops
    the thread; it also stops when idle for a few seconds or when the worker is garbage-collected.
    """

    def __init__(
        self,
        journal: Journal,
        workflows: Iterable[Any],
        worker_id: str | None = None,
        *,
        lease_s: float = 30.0,
        timing: Timing | None = None,
        heartbeat: bool = True,
    ) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.journal = journal
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease_s = lease_s
        self.timing = timing
        self.abandoned = 0  # executions ended by StaleLeaseError: another worker had taken the run over
        self.workflows: dict[str, WorkflowDef] = {}
        for obj in workflows:
            definition = definition_of(obj)
            if definition is None:
                raise TypeError(f"{obj!r} is not a @workflow function")
            self.workflows[definition.name] = definition
        self.heartbeat: Heartbeat | None = Heartbeat(journal) if heartbeat and journal.shareable else None
        if self.heartbeat is not None:
            # The finalizer holds the heartbeat, not the worker: a dropped worker's thread stops.
            weakref.finalize(self, self.heartbeat.close, None)

    def close(self) -> None:
        """Stop the heartbeat thread. The journal stays open (it is the caller's)."""
        if self.heartbeat is not None:
            self.heartbeat.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_once(self, run_id: str | None = None) -> Outcome | None:
        """Claim one ready run (or ``run_id`` if it is ready), execute it until it ends or parks, and
        return how it ended; None when nothing was ready or the lease was lost to another worker."""
        claim = self.journal.claim(self.worker_id, self.lease_s, run_id)
        if claim is None:
            return None
        return self.execute(claim)

    def execute(self, claim: Claim) -> Outcome | None:
        """Execute a claimed run. A ``StaleLeaseError`` (taken over meanwhile) ends it quietly: the new
        lease holder continues the run."""
        definition = self.workflows.get(claim.run.workflow_type)
        try:
            if definition is None:
                error = ErrorInfo("UnknownWorkflow", f"no workflow named {claim.run.workflow_type!r} is registered with this worker")
                self.journal.finish(claim, "failed", error=error)
                return Outcome("failed", error=error)
            run = dataclasses.replace(claim.run, code_version=definition.version or claim.run.code_version)
            claim = dataclasses.replace(claim, run=run)
            # The lease is released before settling, so no renewal can land after the run is parked or
            # finished; the last append or on-time renewal left it two thirds of lease_s or more to settle.
            with self._keep_alive(claim) as lease:
                try:
                    outcome = run_workflow(definition, run, LiveBackend(self.journal, claim, self.lease_s, lease), self.timing)
                except JournalDivergence as divergence:
                    outcome = Outcome("failed", error=ErrorInfo.from_exception(divergence))
            self._settle(claim, outcome)
            return outcome
        except StaleLeaseError:
            self.abandoned += 1
            return None

    def _keep_alive(self, claim: Claim) -> contextlib.AbstractContextManager[Lease | None]:
        if self.heartbeat is None:
            return contextlib.nullcontext()
        return self.heartbeat.hold(claim, self.lease_s)

    def _settle(self, claim: Claim, outcome: Outcome) -> None:
        if outcome.status == "parked":
            assert outcome.park is not None
            self.journal.park(claim, outcome.park.wake_at, outcome.park.signal)
        elif outcome.status == "continued":
            definition = self.workflows.get(claim.run.workflow_type)
            manifest = prompt_manifest(definition.fn) if definition is not None else None
            self.journal.continue_as_new(claim, outcome.continue_input, manifest)
        elif outcome.status == "completed":
            try:
                dumps(outcome.result)
            except (TypeError, ValueError) as error:
                self.journal.finish(claim, "failed", error=ErrorInfo("TypeError", f"workflow result is not JSON: {error}"))
                return
            self.journal.finish(claim, "completed", result=outcome.result)
        else:
            self.journal.finish(claim, "failed", error=outcome.error)

    def run(self, stop: Callable[[], bool], poll_s: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> int:
        """Serve until ``stop()`` is true: execute whatever is ready, then wait for the next parked run's
        wake time or ``poll_s``, whichever is sooner (signals and new runs are noticed within
        ``poll_s``). Returns how many executions ran."""
        count = 0
        while not stop():
            count += self.run_until_idle()
            if stop():
                break
            wake = self.journal.next_wake()
            now = self.journal.clock()
            sleep(poll_s if wake is None else max(0.0, min(poll_s, wake - now)))
        return count

    def run_until_idle(self, limit: int | None = None) -> int:
        """Execute ready runs until none is ready (parked runs not yet due do not count); returns how
        many executions ran. ``limit`` bounds it."""
        count = 0
        while limit is None or count < limit:
            claim = self.journal.claim(self.worker_id, self.lease_s)
            if claim is None:
                break
            self.execute(claim)
            count += 1
        return count
