"""The journal engine: replaytest's own durable runtime (``replaytest.journal``), ``@workflow`` functions taking a
context. ``PLUGIN`` wires the lint profile (``profile``), replay (``replayer``) and ``replaytest double-run`` (``double_run``); journals are exported as
histories by the runtime itself (``Journal.export``)."""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.journal.profile import PROFILE

__all__ = ["PLUGIN", "PROFILE"]

PLUGIN = FrameworkPlugin(
    name="journal", profile=PROFILE, replayer=LazyReplayer("journal", "replaytest.plugins.journal.replayer:JournalReplayer"),
    double_run_tracer="replaytest.plugins.journal.double_run:trace_journal",
)
