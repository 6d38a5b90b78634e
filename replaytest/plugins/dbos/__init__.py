"""The DBOS Transact engine: ``@DBOS.workflow()`` orchestration, steps and transactions.

``PLUGIN`` wires the double-run tracer (``double_run``), the lint profile (``profile``), ``replaytest import dbos`` (``importer``, reading a system
database; payloads decoded as data by ``values``) and replay against the current workflow functions
(``replayer``), which stands in for DBOS's system database through ``internals``, the one module that uses
DBOS's private names."""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.dbos.profile import PROFILE

__all__ = ["PLUGIN", "PROFILE"]

PLUGIN = FrameworkPlugin(
    name="dbos",
    profile=PROFILE,
    replayer=LazyReplayer("dbos", "replaytest.plugins.dbos.replayer:DBOSReplayer"),
    import_command="replaytest.plugins.dbos.importer:import_command",
    double_run_tracer="replaytest.plugins.dbos.double_run:trace_dbos",
)
