"""Exceptions of the journal runtime.

Two families: ``ControlFlow`` (a ``BaseException``, so ``except Exception`` in orchestration code cannot
swallow it) carries decisions out of the workflow function — park the run, continue as new; ordinary
exceptions report failures — a step that exhausted its retries, a stale lease, a resumed run whose code
no longer matches its journal.
"""

from __future__ import annotations

from typing import Any


class ControlFlow(BaseException):
    """Raised through orchestration code to end the current execution without failing the run.

    A replay backend may subclass it for its own stop signals; ``run_workflow`` lets every
    ``ControlFlow`` that it does not handle itself propagate to the caller.
    """


class Park(ControlFlow):
    """The run waits: for a timer (``wake_at``, epoch seconds), a signal (``signal``), or either.

    No thread or process is held while a run is parked; a worker picks it up again when it is due.
    """

    def __init__(self, *, wake_at: float | None = None, signal: str | None = None) -> None:
        self.wake_at = wake_at
        self.signal = signal
        super().__init__(f"parked until {wake_at}" if signal is None else f"parked waiting for signal {signal!r}")


class ContinueAsNew(ControlFlow):
    """The run ends and a fresh run of the same workflow starts with ``input``."""

    def __init__(self, input: Any) -> None:
        self.input = input
        super().__init__("continue as new")


class StepFailed(Exception):
    """A step (or model call) failed for good: retries exhausted, non-retryable error, or timeouts.

    Orchestration code sees this type both when the failure happens and when it is replayed from a
    journal or history, so code that catches it behaves the same either way. ``error_type`` and
    ``message`` are what the history records; ``__cause__`` is the original exception when live.
    """

    def __init__(self, step: str, error_type: str, message: str, attempts: int | None = None) -> None:
        self.step = step
        self.error_type = error_type
        self.message = message
        self.attempts = attempts
        # The text must not depend on live-only facts (attempts): a failed run's recorded error is
        # compared with the replayed one.
        super().__init__(f"step {step!r} failed: {error_type}: {message}")


class StepTimeout(Exception):
    """One attempt of a step ran longer than its policy's ``attempt_timeout``."""


class StaleLeaseError(ControlFlow):
    """An append was fenced off: another worker took over the run's lease (its epoch is newer).

    A ``ControlFlow`` so that orchestration code catching ``Exception`` cannot swallow it: the stale
    worker must stop executing the run, which the new lease holder continues.
    """

    def __init__(self, run_id: str, epoch: int, current: int | None) -> None:
        self.run_id = run_id
        self.epoch = epoch
        self.current = current
        super().__init__(f"run {run_id}: append with lease epoch {epoch} rejected; current epoch is {current}")


class JournalDivergence(Exception):
    """A resumed run's code issued a different command than its journal holds at that position."""
