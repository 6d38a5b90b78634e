"""The LangGraph engine: the functional API (``@entrypoint`` orchestration, ``@task`` steps) and the graph API's
nodes (``StateGraph.add_node``), whose code before an ``interrupt()`` re-runs on resume.

``PLUGIN`` wires the lint profile (``profile``), ``replaytest import langgraph`` (``importer`` for functional
threads, ``graph_import`` for graph threads; savers read as SQLite files, ``postgres`` databases or saver objects,
``async_savers`` for the async ones; checkpoint values decoded by ``values``), and replay (``replayer`` for the
functional API, ``graph_check`` for graph histories), and ``replaytest double-run`` of entrypoints (``double_run``).
Every LangGraph private name is in ``internals``."""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.langgraph.profile import PROFILE

__all__ = ["PLUGIN", "PROFILE"]

PLUGIN = FrameworkPlugin(
    name="langgraph",
    profile=PROFILE,
    replayer=LazyReplayer("langgraph", "replaytest.plugins.langgraph.replayer:LangGraphReplayer"),
    import_command="replaytest.plugins.langgraph.importer:import_command",
    double_run_tracer="replaytest.plugins.langgraph.double_run:trace_langgraph",
)
