"""The workflow context: the thin front orchestration code talks to.

Every call becomes a ``Command`` handed to the context's ``Backend``; the context itself holds only the
position counter and the run's identity, so the same workflow function runs unchanged under the live
journal backend and under a replay backend. ``Context`` serves sync workflow functions,
``AsyncContext`` async ones (its step, model, sleep and wait_signal are coroutines).

Values that are not JSON are converted here, on both paths alike: ``now()`` is recorded as an ISO
timestamp and returned as an aware ``datetime``, ``uuid()`` as text and returned as ``uuid.UUID``.
Step results are returned as their JSON round trip (tuples come back as lists) live and on replay.
"""

from __future__ import annotations

import datetime as _dt
import inspect
import random as _random
import uuid as _uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from replaytest.history.digest import args_digest
from replaytest.journal.commands import Backend, Command, caller_site
from replaytest.journal.errors import ContinueAsNew
from replaytest.journal.prompts import Prompt
from replaytest.journal.retry import DEFAULT_RETRY, RetryPolicy, Timing, call_with_retry, call_with_retry_async


@dataclass(frozen=True)
class RunInfo:
    """The identity of the run a context executes. ``idempotency_key()`` derives from ``run_id``."""

    workflow_type: str
    workflow_id: str
    run_id: str
    input: Any = None
    code_version: str | None = None


@dataclass
class _Position:
    seq: int = 0
    key_for: int | None = None  # the position an idempotency key was handed out for


class Context:
    """What a sync orchestration function receives as ``ctx``.

    Construct with any backend: ``Context(RunInfo(type, id, run_id, input), backend)``.
    """

    def __init__(self, run: RunInfo, backend: Backend, timing: Timing | None = None) -> None:
        self.run = run
        self.backend = backend
        self.timing = timing or Timing()
        self._pos = _Position()

    # -- identity ---------------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def workflow_id(self) -> str:
        return self.run.workflow_id

    @property
    def seq(self) -> int:
        """How many commands this execution has issued so far."""
        return self._pos.seq

    def idempotency_key(self) -> str:
        """A key for the *next* command (``<run id>:<position>``): the same on every attempt, every
        resume and every replay of this run, different for every step. Pass it to the effect."""
        position = self._pos.seq + 1
        self._pos.key_for = position
        return f"{self.run.run_id}:{position}"

    # -- plumbing ---------------------------------------------------------------------------------
    def _command(self, kind: str, name: str, **fields: Any) -> Command:
        position = self._pos.seq + 1
        key = f"{self.run.run_id}:{position}" if self._pos.key_for == position else None
        return Command(seq=position, kind=kind, name=name, idempotency_key=key, source=caller_site(), **fields)

    def _issue(self, command: Command, thunk: Callable[[], Any]) -> Any:
        try:
            return self.backend.execute(command, thunk)
        finally:
            # A recorded failure occupies its position too; only a park leaves the run mid-command,
            # and a parked execution is discarded.
            self._pos.seq = command.seq

    # -- commands ---------------------------------------------------------------------------------
    def step(self, name: str, fn: Callable[..., Any], *args: Any, retry: RetryPolicy = DEFAULT_RETRY, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` as a recorded step with ``retry``; ``StepFailed`` if it gives up."""
        command = self._command("step", name, args_digest=args_digest(args, kwargs), fn=fn)
        return self._issue(command, lambda: call_with_retry(name, fn, args, kwargs, retry, self.timing))

    def model(
        self, name: str, fn: Callable[..., Any], *args: Any, prompt: Prompt, retry: RetryPolicy = DEFAULT_RETRY, **kwargs: Any
    ) -> Any:
        """A model call: a step that also records ``prompt``'s name and content version."""
        command = self._command("model", name, args_digest=args_digest(args, kwargs), prompt=prompt.ref)
        return self._issue(command, lambda: call_with_retry(name, fn, args, kwargs, retry, self.timing))

    def now(self) -> _dt.datetime:
        """The current UTC time, recorded: the same value on every resume and replay."""
        command = self._command("side-effect", "now")
        text = self._issue(command, lambda: _dt.datetime.now(_dt.timezone.utc).isoformat())
        return _dt.datetime.fromisoformat(text)

    def random(self) -> float:
        """A recorded random float in [0, 1)."""
        command = self._command("side-effect", "random")
        return float(self._issue(command, lambda: _random.random()))

    def uuid(self) -> _uuid.UUID:
        """A recorded random UUID (version 4)."""
        command = self._command("side-effect", "uuid")
        return _uuid.UUID(self._issue(command, lambda: str(_uuid.uuid4())))

    def sleep(self, seconds: float, name: str = "sleep") -> None:
        """A durable timer: the run parks (no thread held) until ``seconds`` after it was first set."""
        command = self._command("timer", name, duration_s=float(seconds))
        self._issue(command, _no_thunk)

    def wait_signal(self, name: str, timeout: float | None = None) -> Any:
        """Park until ``Journal.signal(run_id, name, payload)`` arrives; return the payload, or ``None``
        when ``timeout`` seconds pass first. Signals of one name are consumed in arrival order."""
        command = self._command("signal", name, timeout_s=timeout)
        return self._issue(command, _no_thunk)

    def patched(self, patch_id: str) -> bool:
        """Temporal semantics: ``True`` on runs that reach this point under code that has the patch
        (a marker is recorded), ``False`` when resuming or replaying a run recorded without it."""
        command = self._command("marker", "patched", patch_id=patch_id)
        taken = bool(self.backend.execute(command, _no_thunk))
        if taken:
            self._pos.seq = command.seq
        return taken

    def deprecate_patch(self, patch_id: str) -> None:
        """The retirement step of ``patched(patch_id)`` (Temporal semantics): call it where the
        ``if ctx.patched(…):`` stood once no run that took the old branch is left, keeping only the new
        branch. A new run records the marker, flagged deprecated, so code that still has
        ``patched(patch_id)`` there replays it on the new path; resuming or replaying a run that has the
        marker here consumes it, and one without it goes on (no divergence). Once no retained run has a
        marker recorded by ``patched``, the call itself may go: deprecated markers are skipped."""
        command = self._command("marker", "patched", patch_id=patch_id, deprecated=True)
        if self.backend.execute(command, _no_thunk):
            self._pos.seq = command.seq

    def continue_as_new(self, input: Any) -> NoReturn:
        """End this run and start a fresh one of the same workflow with ``input`` (keeps histories short)."""
        command = self._command("continue-as-new", self.run.workflow_type)
        self._issue(command, lambda: input)
        raise ContinueAsNew(input)


class AsyncContext(Context):
    """What an async orchestration function receives: ``await ctx.step(…)``, ``await ctx.sleep(…)``."""

    async def step(  # type: ignore[override]
        self, name: str, fn: Callable[..., Any], *args: Any, retry: RetryPolicy = DEFAULT_RETRY, **kwargs: Any
    ) -> Any:
        command = self._command("step", name, args_digest=args_digest(args, kwargs), fn=fn)
        return await _resolve(self._issue(command, self._thunk(name, fn, args, kwargs, retry)))

    async def model(  # type: ignore[override]
        self, name: str, fn: Callable[..., Any], *args: Any, prompt: Prompt, retry: RetryPolicy = DEFAULT_RETRY, **kwargs: Any
    ) -> Any:
        command = self._command("model", name, args_digest=args_digest(args, kwargs), prompt=prompt.ref)
        return await _resolve(self._issue(command, self._thunk(name, fn, args, kwargs, retry)))

    async def sleep(self, seconds: float, name: str = "sleep") -> None:  # type: ignore[override]
        Context.sleep(self, seconds, name)

    async def wait_signal(self, name: str, timeout: float | None = None) -> Any:  # type: ignore[override]
        return Context.wait_signal(self, name, timeout)

    def _thunk(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict, retry: RetryPolicy) -> Callable[[], Any]:
        if inspect.iscoroutinefunction(fn):
            return lambda: call_with_retry_async(name, fn, args, kwargs, retry, self.timing)
        return lambda: call_with_retry(name, fn, args, kwargs, retry, self.timing)


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _no_thunk() -> NoReturn:
    raise RuntimeError("timers, signal waits and markers are answered by the backend, not performed")

