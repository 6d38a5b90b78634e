"""``Command`` — what orchestration code asks for — and ``Backend``, the one object that answers.

The workflow context (``replaytest.journal.context``) turns every call (step, model call, timer, signal
wait, patch check, clock/random/uuid read) into a ``Command`` and hands it to a backend with a *thunk*
that would perform it. The live backend (``replaytest.journal.worker``) looks the command up in the
run's journal, runs the thunk only when the journal has no outcome yet, and commits the outcome before
returning. A replay backend answers from a recorded history instead and never runs a thunk. Both see
the same commands, so the code path under test is the code path in production.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, runtime_checkable

from replaytest.history.model import PromptRef

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep


@dataclass(frozen=True)
class CallSite:
    """Where orchestration code issued a command: file, 1-based line, function name."""

    path: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One request of orchestration code, in the terms of the neutral history (``Event``).

    ``seq`` is the command's position in the run (1-based, the event's ``seq``). ``args_digest`` is
    ``replaytest.history.args_digest`` of the arguments given to the step function; ``duration_s`` is a
    timer's duration, ``timeout_s`` a signal wait's timeout; ``source`` the orchestration code line.
    """

    seq: int
    kind: str
    name: str
    args_digest: str | None = None
    prompt: PromptRef | None = None
    idempotency_key: str | None = None
    patch_id: str | None = None
    duration_s: float | None = None
    timeout_s: float | None = None
    source: CallSite | None = None
    deprecated: bool = False  # a ``deprecate_patch`` marker rather than a ``patched`` one
    # A step's function, never recorded: replay asks whether it calls a model (a step with no prompt
    # record that does is named in a note, since its prompt is not compared).
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)


Thunk = Callable[[], Any]


@runtime_checkable
class Backend(Protocol):
    """Answers commands. One method; what it returns per kind:

    - ``step``, ``model``, ``side-effect``: the JSON result (``thunk()`` performs the call, retries
      included, and returns it — or an awaitable of it for async steps, in which case ``execute`` may
      return an awaitable too). A recorded failure is raised as ``StepFailed``.
    - ``timer``: ``None`` once the timer has fired; raises ``Park(wake_at=…)`` while it is pending.
    - ``signal``: the signal's payload, or ``None`` after the timeout; raises ``Park(signal=…)`` while
      waiting. ``thunk`` is not used.
    - ``marker`` (``patched``): ``True`` if this position holds (or, on a new run, now records) the
      patch marker, ``False`` if the recorded run took the old path here; on ``False`` the context does
      not advance ``seq``. With ``deprecated`` (``deprecate_patch``) the same, and a new run records the
      marker flagged deprecated.
    - ``continue-as-new``: records the new input (``thunk()`` returns it); the context then raises
      ``ContinueAsNew``.
    """

    def execute(self, command: Command, thunk: Thunk) -> Any: ...


def caller_site() -> CallSite | None:
    """The first frame outside the replaytest package: the orchestration code line issuing a command."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        # Frames of replaytest's own modules are passed by their module name: reading ``f_code`` raises
        # an audit event (the replay guards' hook hears each), and this runs for every command.
        module = frame.f_globals.get("__name__")
        if not (isinstance(module, str) and (module == "replaytest" or module.startswith("replaytest."))):
            code = frame.f_code
            if not _inside_package(code.co_filename):
                return CallSite(path=code.co_filename, line=frame.f_lineno, function=code.co_name)
        frame = frame.f_back
    return None


@lru_cache(maxsize=4096)
def _inside_package(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)
