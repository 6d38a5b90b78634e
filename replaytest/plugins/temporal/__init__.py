"""The Temporal engine (temporalio): workflow classes, activities and their safe APIs.

``PLUGIN`` wires the lint profile (``profile``), ``replaytest import temporal`` (``importer``; history JSON read
without temporalio in ``history``, redacted by ``redact``, compared by ``diff``), and replay with temporalio's own
Replayer (``replayer``; divergences from its failures in ``failure``, the commands the code issues traced in
``trace``, inputs and prompt versions compared in ``inputs``/``prompts``, corrupt payloads found in ``payloads``).
``replaytest double-run`` drives a workflow with no history through the same Replayer one task at a time
(``double_run``). Every temporalio private name is in ``internals``."""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.temporal.profile import PROFILE

__all__ = ["PLUGIN", "PROFILE"]

PLUGIN = FrameworkPlugin(name="temporal", profile=PROFILE, replayer=LazyReplayer("temporal", "replaytest.plugins.temporal.replayer:TemporalReplayer"), import_command="replaytest.plugins.temporal.importer:import_command",
                         history_redactor="replaytest.plugins.temporal.redact:redact_temporal_file",
                         history_reader="replaytest.plugins.temporal.diff:read_temporal_history",
                         double_run_tracer="replaytest.plugins.temporal.double_run:trace_temporal",
                         double_run_case_reader="replaytest.plugins.temporal.double_run_cases:case_from_temporal_history")
