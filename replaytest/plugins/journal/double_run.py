"""The double-run tracer of journal workflows: one run of a ``@workflow`` function with every command
answered by a stub (``StubBackend``), never a thunk, under the runtime guards, returning what it issued
as a ``replay.double_run.Trace``.

A step or model call returns the case's stub value for its name and position; a clock, random or uuid
read through the context returns a fixed value (what a recorded run would hand back); a timer fires; a
signal wait times out (None); a patch check answers True (a new run records the marker).
"""

from __future__ import annotations

from typing import Any

from replaytest.history.model import ErrorInfo
from replaytest.journal import Command, RunInfo, find_workflow, run_workflow
from replaytest.journal.commands import Thunk
from replaytest.journal.workflow import definition_of
from replaytest.replay.adapter import WorkflowSet
from replaytest.replay.divergence import value_text
from replaytest.replay.double_run import DoubleRunCase, RunConditions, Trace, TracedCommand
from replaytest.replay.guards import NondeterministicCall, guarded, orchestration_modules

# What the context's own value reads return in every run: fixed, as a recorded value would be.
_FIXED_READS = {"now": "2026-01-01T00:00:00+00:00", "random": 0.5, "uuid": "00000000-0000-4000-8000-000000000000"}


class StubBackend:
    """Answers every command from the case's stubs and keeps the commands in order; never runs a thunk."""

    def __init__(self, case: DoubleRunCase) -> None:
        self.case = case
        self.commands: list[TracedCommand] = []

    def execute(self, command: Command, thunk: Thunk) -> Any:
        source = command.source
        self.commands.append(TracedCommand(
            kind=command.kind, name=command.name,
            args_digest=command.args_digest if command.kind != "marker" else command.patch_id,
            path=source.path if source else None, line=source.line if source else None,
            function=source.function if source else None,
        ))
        if command.kind == "marker":
            return True
        if command.kind == "side-effect" and command.name in _FIXED_READS:
            return _FIXED_READS[command.name]
        if command.kind in ("timer", "signal"):
            return None
        if command.kind == "continue-as-new":
            return None  # the context raises ContinueAsNew; the run ends there
        return self.case.stub_value(command.seq, command.kind, command.name)


def trace_journal(workflows: WorkflowSet, case: DoubleRunCase, conditions: RunConditions) -> Trace:
    """One stubbed run of the case's workflow under ``conditions``."""
    definition = find_workflow(workflows.objects, case.workflow)
    if definition is None:
        known = sorted(d.name for d in map(definition_of, workflows.objects) if d is not None)
        return Trace(error=f"no current code for workflow type {case.workflow!r}; known types: "
                           f"{', '.join(known) or workflows.none_found('give --workflows')}")
    # Imported here: the journal replayer's module loads the profile and the prompt machinery.
    from replaytest.plugins.journal.replayer import step_bodies

    backend = StubBackend(case)
    run = RunInfo(workflow_type=case.workflow, workflow_id=case.workflow_id or "double-run",
                  run_id=case.workflow_id or "double-run", input=case.input, code_version=definition.version)
    modules = orchestration_modules([definition.fn, *workflows.objects])
    trace = Trace()
    with conditions.applied(), guarded(modules, lambda: len(backend.commands), step_bodies(modules)) as guard:
        try:
            outcome = run_workflow(definition, run, backend)
        except NondeterministicCall:
            outcome = None
    trace.commands = backend.commands
    trace.add_guard_trips(guard.trips)
    if outcome is None:
        trace.ending, trace.result = "stopped", "an effect the runtime guards stopped"
    elif outcome.status == "failed":
        error = outcome.error or ErrorInfo("Exception", "")
        trace.ending, trace.result = "failed", f"{error.type}: {error.message}"
    else:
        trace.ending, trace.result = outcome.status, value_text(outcome.result, repr)
    return trace
