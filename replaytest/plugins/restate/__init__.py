"""Framework plugin for Restate (Python SDK): the lint profile (``profile``), ``replaytest import restate``
(``importer``: invocations and journals read from a Restate server's admin SQL endpoint) and replay of those
histories through the SDK's own state machine (``replayer``; the SDK's private names live in ``internals``,
the journal's wire format and payloads in ``values``). Only the profile and the import command load with the
plugin; the replayer imports the SDK on first replay."""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.restate.profile import PROFILE

PLUGIN = FrameworkPlugin(
    name="restate",
    profile=PROFILE,
    replayer=LazyReplayer("restate", "replaytest.plugins.restate.replayer:RestateReplayer"),
    import_command="replaytest.plugins.restate.importer:import_command",
)

__all__ = ["PLUGIN", "PROFILE"]
