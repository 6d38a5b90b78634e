"""Framework plugin for LangGraph: the functional API (``@entrypoint`` orchestration, ``@task`` steps) and the
graph API's nodes (``StateGraph.add_node``), whose code before an ``interrupt()`` re-runs on resume."""

from replaytest.lint.profile import FrameworkProfile
from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.langgraph_import import import_command

_TASK = "a @task function"
# The graph builders whose ``add_node`` registers a node, as imported from the package or their module.
_GRAPHS = ("langgraph.graph.StateGraph", "langgraph.graph.state.StateGraph", "langgraph.graph.MessageGraph",
           "langgraph.graph.message.MessageGraph")

PROFILE = FrameworkProfile(
    name="langgraph",
    screen=(b"langgraph.func", b"langgraph import func", b"langgraph.graph", b"langgraph.types"),
    modules=("langgraph",),
    orchestration_decorators=("langgraph.func.entrypoint",),
    step_decorators=("langgraph.func.task",),
    node_registrations=tuple(f"{graph}.{method}" for graph in _GRAPHS for method in ("add_node", "add_sequence")),
    pause_calls=("langgraph.types.interrupt",),
    # ``Command(goto=..., update=..., resume=...)`` and ``Send(node, state)`` only describe what runs next.
    safe_calls=frozenset({
        "langgraph.types.interrupt", "langgraph.config.get_stream_writer", "langgraph.types.Command",
        "langgraph.types.Send", "langgraph.constants.Send",
    }),
    replacements={
        "clock": f"{_TASK} that reads the clock",
        "random": f"{_TASK} that draws the value",
        "uuid": f"{_TASK} that creates the id",
        "model-call": _TASK,
        "network": _TASK,
        "filesystem": _TASK,
        "environment": f"the entrypoint input or {_TASK}",
        "concurrency": "@task functions (their futures are recorded)",
        "rerun-on-resume": "into a @task function (or an earlier node)",
    },
)

PLUGIN = FrameworkPlugin(
    name="langgraph",
    profile=PROFILE,
    replayer=LazyReplayer("langgraph", "replaytest.plugins.langgraph_replay:LangGraphReplayer"),
    import_command=import_command,
)
