"""The double-run tracer of DBOS workflows: one run of a registered workflow through DBOS's own wrappers
with the replay stand-in for its system database (``dbos.internals.replaying``), every operation answered
by a stub, under the runtime guards, returning a ``Trace``.

DBOS numbers the operations (function ids) in its wrappers and asks the stand-in for each; here each is
answered as on a new run with a stub result: a step, transaction, ``recv`` or ``getEvent`` returns the
case's stub value for its name and function id (a recorded history's result at that id, as recovery finds
it), ``DBOS.patch`` answers True (a new run writes its marker), ``deprecate_patch`` False, sleeps return at
once. Nothing is written, no step body runs. The
case's input is ``{"args": [...], "kwargs": {...}}`` as DBOS histories hold it (values as recorded, not
rebuilt into the application's classes), or one positional argument. A child workflow stops the run.
"""

from __future__ import annotations

from typing import Any

from replaytest.plugins.dbos import internals
from replaytest.plugins.dbos.importer import event_kind
from replaytest.plugins.dbos.replayer import _issuing_line
from replaytest.replay.adapter import WorkflowSet
from replaytest.replay.divergence import value_text
from replaytest.replay.double_run import DoubleRunCase, RunConditions, Trace, TracedCommand
from replaytest.replay.guards import NondeterministicCall, guarded, orchestration_modules, plain_functions


class _StubOperations:
    """An ``internals.OperationSource`` answering every operation with a stub and keeping them in order."""

    def __init__(self, case: DoubleRunCase, workflow_names: set[str]) -> None:
        self.case = case
        self.workflow_names = workflow_names
        self.commands: list[TracedCommand] = []

    def _note(self, kind: str, name: str) -> None:
        source = _issuing_line()
        self.commands.append(TracedCommand(kind, name, None, source.path if source else None,
                                           source.line if source else None, source.function if source else None))

    def recorded(self, function_id: int, function_name: str) -> tuple[Any, BaseException | None, str | None]:
        kind = event_kind(function_name, function_name in self.workflow_names)
        self._note(kind, function_name)
        if kind == "child-workflow":
            raise internals.UnsupportedOperation(f"a child workflow ({function_name}), which the double run does not start")
        # A DBOS history's positions are function ids, so a recorded result is found where DBOS finds it.
        return self.case.stub_value(function_id, kind, function_name), None, None

    def sleep(self, function_id: int, seconds: float) -> None:
        self.recorded(function_id, "DBOS.sleep")

    def skip(self, function_id: int, function_name: str) -> None:
        pass  # a recv/getEvent timeout row: DBOS never reads it back

    def patched(self, function_id: int, patch_name: str, deprecated: bool) -> bool:
        self._note("marker", patch_name)
        return not deprecated

    def name_at(self, function_id: int) -> str | None:
        return None

    def child_result(self, child_workflow_id: str) -> tuple[Any, BaseException | None]:
        raise internals.UnsupportedOperation("a child workflow's result, which the double run does not start")

    def finished(self, output: Any, error: BaseException | None) -> None:
        pass


def trace_dbos(workflows: WorkflowSet, case: DoubleRunCase, conditions: RunConditions) -> Trace:
    """One stubbed run of the case's registered workflow under ``conditions``."""
    problem = internals.check_version()
    if problem:
        return Trace(error=problem)
    function = internals.registered_workflow(case.workflow)
    if function is None:
        known = internals.registered_workflow_names()
        return Trace(error=f"no current DBOS workflow named {case.workflow!r}; registered: {', '.join(known) or 'none'}")
    original = getattr(function, "__wrapped__", function)
    modules = orchestration_modules([original, *workflows.objects])
    bodies = plain_functions(internals.step_bodies([module.__dict__ for module in modules]))
    document = case.input if isinstance(case.input, dict) and "args" in case.input else None
    args = list(document.get("args", [])) if document is not None else [case.input]
    kwargs = dict(document.get("kwargs", {})) if document is not None else {}
    operations = _StubOperations(case, set(internals.registered_workflow_names()))
    trace = Trace()
    with conditions.applied(), guarded(modules, lambda: len(operations.commands), bodies) as guard:
        with internals.replaying(case.workflow_id or "double-run", operations) as call:
            try:
                returned = call(function, *args, **kwargs)
                trace.ending, trace.result = "completed", value_text(returned, repr)
            except internals.UnsupportedOperation as error:
                trace.ending, trace.result = "stopped", str(error)
            except NondeterministicCall:
                trace.ending, trace.result = "stopped", "an effect the runtime guards stopped"
            except Exception as error:
                trace.ending, trace.result = "failed", f"{type(error).__name__}: {error}"
    trace.commands = operations.commands
    trace.add_guard_trips(guard.trips)
    return trace
