"""RT205 on tools taken from the run's config: ``config["configurable"]["tools_by_name"][name].invoke(args)``.

An application may hand its graph the tools it loaded at start-up (from an MCP server, say) in the
``RunnableConfig``: their code is not the project's, so lint cannot follow them, and a tool exists to act.
LangGraph is the judge first: a node that runs such a tool and then pauses runs it again when the thread
resumes. Then the linter on made-up projects: a tool from the config, run in the node or in a helper given
the config (or a value from it) before the last ``interrupt()``, or in a loop holding one, is reported and
the message says where the tool came from; the same tool run after the pause, a config value that is no
tool, a helper given something else and a node that never pauses are quiet.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from test_langgraph_graph_nodes import check_marks, lint, project_with

CONSENT_DESK = '''
from typing import TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt


class Desk(TypedDict, total=False):
    operations: list
    answers: list


async def retry_with_consent(call: dict, token: str, tools_by_name: dict) -> str:
    tool = tools_by_name.get(call["name"])
    return await tool.ainvoke({**call["args"], "token": token})


async def consent(state: Desk, config: RunnableConfig) -> dict:
    configurable = config.get("configurable", {}) if config else {}
    tools_by_name = configurable.get("tools_by_name", {})
    answers = []
    for call in state["operations"]:
        token = interrupt({"consent_for": call["name"]})
        answers.append(await retry_with_consent(call, token, tools_by_name=tools_by_name))  # expect: RT205:30 via
    return {"answers": answers}


builder = StateGraph(Desk)
builder.add_node("consent", consent)
builder.add_edge(START, "consent")
'''


def _import(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_langgraph_runs_a_tool_from_the_config_again_on_resume_and_the_linter_marks_that_call(tmp_path: Path) -> None:
    import asyncio

    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    effects: list[str] = []

    @tool
    def transfer(account: str, token: str) -> str:
        """Move money (here: note that it moved)."""
        effects.append(f"transfer {account} with {token}")
        return "moved"

    project = project_with(tmp_path, {"app/__init__.py": "", "app/desk.py": CONSENT_DESK})
    desk = _import(project / "app" / "desk.py", "consent_desk_under_test")
    graph = desk.builder.compile(checkpointer=InMemorySaver())
    # The tools travel in the config of every call, as an application loading them at start-up passes them.
    config = {"configurable": {"thread_id": "desk-1", "tools_by_name": {"transfer": transfer}}}
    calls = [{"name": "transfer", "args": {"account": "A"}}, {"name": "transfer", "args": {"account": "B"}}]

    async def run() -> None:
        await graph.ainvoke({"operations": calls}, config)
        await graph.ainvoke(Command(resume="jwt-a"), config)
        assert effects == ["transfer A with jwt-a"]
        await graph.ainvoke(Command(resume="jwt-b"), config)

    asyncio.run(run())
    # Resuming the second consent re-ran the node from its top: the first transfer ran a second time.
    assert effects == ["transfer A with jwt-a", "transfer A with jwt-a", "transfer B with jwt-b"]

    (finding,) = check_marks(project)
    assert finding.message.startswith(
        "retry_with_consent() reaches tool.ainvoke(), which runs a tool taken from the run's config ('tools_by_name' "
        "of config[\"configurable\"]), whose code could not be resolved (a tool exists to act), before interrupt() "
        "again in the next turn of the loop at line 22 in graph node 'consent'")
    # The line running the tool in the helper is named too.
    assert [(r.path, r.line) for r in finding.related] == [("app/desk.py", 15)]


def test_every_way_of_taking_a_tool_from_the_config_is_followed(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "app/__init__.py": "",
        "app/helpers.py": '''
            def run_tool(tool, args: dict):
                return tool.invoke(args)


            def run_named(tools: dict, name: str, args: dict):
                return tools[name].run(args)


            def run_from(settings, name: str):
                return settings["configurable"]["tools"][name].invoke({})
            ''',
        "app/graph.py": '''
            from langgraph.config import get_config
            from langgraph.graph import StateGraph
            from langgraph.types import interrupt

            from app.helpers import run_from, run_named, run_tool


            def direct(state: dict, config) -> dict:
                config["configurable"]["tools_by_name"][state["name"]].invoke(state["args"])  # expect: RT205:5
                return {"answer": interrupt("done?")}


            def through_locals(state: dict) -> dict:
                configurable = get_config().get("configurable") or {}
                tools: dict = configurable.get("tools", {})
                chosen = tools.get(state["name"])
                chosen(state["args"])  # expect: RT205:5
                for each in configurable["tools"].values():
                    each.ainvoke(state["args"])  # expect: RT205:9
                return {"answer": interrupt("done?")}


            class Desk:
                def act(self, state: dict, config: dict) -> dict:
                    tools = config["configurable"]["tools"]
                    run_tool(tools[state["name"]], state["args"])  # expect: RT205:9 via app.helpers.run_tool
                    run_named(tools, state["name"], args=state["args"])  # expect: RT205:9 via app.helpers.run_named
                    run_from(config, state["name"])  # expect: RT205:9 via app.helpers.run_from
                    return {"answer": interrupt("done?")}


            desk = Desk()
            builder = StateGraph(dict)
            builder.add_node("direct", direct)
            builder.add_node("through_locals", through_locals)
            builder.add_node("act", desk.act)
            ''',
    })
    diagnostics = check_marks(project)
    assert "runs a tool taken from the run's config ('tools_by_name' of config[\"configurable\"])" in diagnostics[0].message
    # A cold and a warm (cached summaries) run agree.
    cold = lint(project, use_cache=True)
    warm = lint(project, use_cache=True)
    assert [(d.line, d.message) for d in warm] == [(d.line, d.message) for d in cold] == [
        (d.line, d.message) for d in diagnostics]


def test_quiet_after_the_pause_for_config_values_that_are_no_tools_and_for_helpers_given_something_else(
    tmp_path: Path,
) -> None:
    project = project_with(tmp_path, {"app/graph.py": '''
        from langchain_core.tools import tool
        from langgraph.graph import StateGraph
        from langgraph.types import interrupt


        @tool
        def word_count(text: str) -> int:
            """Count words."""
            return len(text.split())


        def run_tool(tool, args: dict):
            return tool.invoke(args)


        def after_the_pause(state: dict, config: dict) -> dict:
            answer = interrupt("go?")
            config["configurable"]["tools_by_name"][state["name"]].invoke(state["args"])
            return {"answer": answer}


        def reads_settings(state: dict, config: dict) -> dict:
            user = config["configurable"].get("user_id", "anonymous").lower()
            config["callbacks"][0].invoke(state)  # the config's callbacks are no tools
            run_tool(word_count, {"text": user})
            return {"answer": interrupt(f"hello {user}")}


        def never_pauses(state: dict, config: dict) -> dict:
            config["configurable"]["tools_by_name"][state["name"]].invoke(state["args"])
            return {}


        builder = StateGraph(dict)
        builder.add_node("after_the_pause", after_the_pause)
        builder.add_node("reads_settings", reads_settings)
        builder.add_node("never_pauses", never_pauses)
        '''})
    assert lint(project) == []
