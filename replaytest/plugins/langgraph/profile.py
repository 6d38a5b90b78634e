"""The lint profile of the langgraph engine: how its orchestration code and steps are marked and which calls
are its safe replacements (see the package docstring for the engine)."""

from replaytest.lint.profile import VALUE_READS, FrameworkProfile

_TASK = "a @task function"
# The graph builders whose ``add_node`` registers a node, as imported from the package or their module.
_GRAPHS = ("langgraph.graph.StateGraph", "langgraph.graph.state.StateGraph", "langgraph.graph.MessageGraph",
           "langgraph.graph.message.MessageGraph")

PROFILE = FrameworkProfile(
    name="langgraph",
    # ``langchain.agents``: its ``create_agent`` builds a LangGraph graph whose "tools" node runs the tools given.
    screen=(b"langgraph.func", b"langgraph import func", b"langgraph.graph", b"langgraph.types", b"langgraph.prebuilt",
            b"langchain.agents"),
    modules=("langgraph",),
    orchestration_decorators=("langgraph.func.entrypoint",),
    step_decorators=("langgraph.func.task",),
    node_registrations=tuple(f"{graph}.{method}" for graph in _GRAPHS for method in ("add_node", "add_sequence")),
    # The prebuilt tool node and the agents built around one run each tool they are given inside the node:
    # LangGraph's ``create_react_agent`` and its successor, langchain's ``create_agent`` (langchain 1.x,
    # ``create_agent(model, tools=None, *, ...)``), whose graph runs its tools in a ``ToolNode`` named "tools".
    tool_registrations={"langgraph.prebuilt.ToolNode": 0, "langgraph.prebuilt.tool_node.ToolNode": 0,
                        "langgraph.prebuilt.create_react_agent": 1,
                        "langgraph.prebuilt.chat_agent_executor.create_react_agent": 1,
                        "langchain.agents.create_agent": 1, "langchain.agents.factory.create_agent": 1},
    pause_calls=("langgraph.types.interrupt",),
    # A node's name is where a checkpoint says the run is (and what resume runs next); a task's name keys its
    # recorded result.
    # Every graph-building method of the builders returns the builder (``-> Self`` in langgraph 1.x), so a
    # graph may be built as one chain: ``StateGraph(S).add_node("a", a).add_edge(START, "a")``.
    builder_methods=tuple(f"{graph}.{method}" for graph in _GRAPHS for method in (
        "add_node", "add_edge", "add_conditional_edges", "add_sequence", "set_entry_point", "set_finish_point",
        "set_conditional_entry_point")),
    step_names={**{f"{graph}.add_node": (0, "node", "graph node") for graph in _GRAPHS},
                "langgraph.func.task": (-1, "name", "task")},
    # ``Command(goto=..., update=..., resume=...)`` and ``Send(node, state)`` only describe what runs next.
    safe_calls=frozenset({
        "langgraph.types.interrupt", "langgraph.config.get_stream_writer", "langgraph.types.Command",
        "langgraph.types.Send", "langgraph.constants.Send",
    }),
    # A read whose value only fills a log line is harmless: a resume re-runs the entrypoint or node and reads recorded task results and state.
    log_only_harmless=VALUE_READS,
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
