"""``@workflow`` — marking orchestration functions — and ``run_workflow``, one execution of one run.

A workflow function takes the context first and the input second, ``def f(ctx, input)`` or
``async def f(ctx, input)``. The decorator returns the function itself with a ``WorkflowDef`` attached
(``definition_of(fn)``); workflows are looked up by their ``name`` (the history's ``workflow.type``).
``run_workflow`` is shared by the worker (live backend) and the replay engine (replay backend).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from replaytest.history.model import ErrorInfo
from replaytest.journal.commands import Backend
from replaytest.journal.context import AsyncContext, Context, RunInfo
from replaytest.journal.errors import ContinueAsNew, ControlFlow, JournalDivergence, Park
from replaytest.journal.retry import Timing

F = TypeVar("F", bound=Callable[..., Any])
ATTRIBUTE = "__replaytest_workflow__"


@dataclass(frozen=True)
class WorkflowDef:
    """A registered orchestration function: ``name`` is its type, ``version`` the code version recorded
    in histories (``code_version``)."""

    name: str
    version: str | None
    fn: Callable[..., Any]

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


def workflow(name: str | None = None, version: str | None = None) -> Callable[[F], F]:
    """Mark ``fn(ctx, input)`` as a workflow named ``name`` (default: the function's ``__qualname__``)."""

    def mark(fn: F) -> F:
        setattr(fn, ATTRIBUTE, WorkflowDef(name=name or fn.__qualname__, version=version, fn=fn))
        return fn

    return mark


def definition_of(obj: Any) -> WorkflowDef | None:
    """The ``WorkflowDef`` of a decorated function (or a WorkflowDef itself), else None."""
    if isinstance(obj, WorkflowDef):
        return obj
    found = getattr(obj, ATTRIBUTE, None)
    return found if isinstance(found, WorkflowDef) else None


def find_workflow(objects: Iterable[Any], name: str) -> WorkflowDef | None:
    """The workflow named ``name`` among ``objects`` (functions, WorkflowDefs, others ignored)."""
    for obj in objects:
        found = definition_of(obj)
        if found is not None and found.name == name:
            return found
    return None


OutcomeStatus = Literal["completed", "failed", "parked", "continued"]


@dataclass(frozen=True)
class Outcome:
    """How one execution ended: completed (``result``), failed (``error``), parked (``park``) or
    continued as new (``continue_input``)."""

    status: OutcomeStatus
    result: Any = None
    error: ErrorInfo | None = None
    park: Park | None = None
    continue_input: Any = None
    commands: int = 0


def run_workflow(definition: WorkflowDef, run: RunInfo, backend: Backend, timing: Timing | None = None) -> Outcome:
    """Execute ``definition`` for ``run`` against ``backend`` until it ends or parks.

    Exceptions of orchestration code become a ``failed`` outcome. ``ControlFlow`` exceptions other than
    Park and ContinueAsNew (a stale lease; a replay backend's stop signal) propagate, as does
    ``JournalDivergence``.
    """
    context_type = AsyncContext if definition.is_async else Context
    ctx = context_type(run, backend, timing)
    try:
        if definition.is_async:
            result = asyncio.run(definition.fn(ctx, run.input))
        else:
            result = definition.fn(ctx, run.input)
    except Park as park:
        return Outcome("parked", park=park, commands=ctx.seq)
    except ContinueAsNew as cont:
        return Outcome("continued", continue_input=cont.input, commands=ctx.seq)
    except (ControlFlow, JournalDivergence):
        raise
    except Exception as error:
        return Outcome("failed", error=ErrorInfo.from_exception(error), commands=ctx.seq)
    return Outcome("completed", result=result, commands=ctx.seq)
