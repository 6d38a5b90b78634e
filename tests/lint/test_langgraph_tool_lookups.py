"""RT205 through a tool lookup: ``tools_by_name[name].invoke(args)`` before an ``interrupt()`` runs the tool again.

LangGraph is the judge first: a node that runs a looked-up tool and then pauses runs that tool again when the
thread resumes. Then the linter on made-up projects: a lookup is resolved to the project's tools it can name
(a list, ``{t.name: t for t in tools}``, ``dict(zip(...))``, ``ToolNode(tools)``, a helper picking tools by
name, across imports) and reported only when one of those tools reaches an effect; a lookup it cannot
resolve, or whose tools do nothing, is quiet — except one of tools taken from the run's config, whose code
cannot be read (``test_langgraph_config_tools``). Last, a tool that pauses: given to ``ToolNode`` or
``create_react_agent`` it runs inside the node "tools", and LangGraph re-runs it from its top on resume.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from test_langgraph_graph_nodes import check_marks, lint, project_with

TOOL_LOOP_AGENT = '''
from typing import TypedDict

from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

EFFECTS: list[str] = []


@tool
def post_reply(text: str) -> str:
    """Post a reply to the customer."""
    EFFECTS.append(f"posted {text}")
    return "posted"


@tool
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


tools = [post_reply, word_count]
tools_by_name = {t.name: t for t in tools}


class Turn(TypedDict, total=False):
    calls: list
    answers: list


def run_calls(state: Turn) -> dict:
    answers = []
    for call in state["calls"]:
        chosen = tools_by_name[call["name"]]
        chosen.invoke(call["args"])  # expect: RT205:9 via app.agent.post_reply
        answers.append(interrupt(f"{call['name']} done; go on?"))
    return {"answers": answers}


builder = StateGraph(Turn)
builder.add_node("run_calls", run_calls)
builder.add_edge(START, "run_calls")
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


def test_langgraph_runs_a_looked_up_tool_again_on_resume_and_the_linter_marks_that_call(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    project = project_with(tmp_path, {"app/__init__.py": "", "app/agent.py": TOOL_LOOP_AGENT})
    agent = _import(project / "app" / "agent.py", "tool_loop_agent_under_test")
    graph = agent.builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "calls-1"}}
    calls = [{"name": "post_reply", "args": {"text": "hello"}}, {"name": "word_count", "args": {"text": "a b"}}]

    graph.invoke({"calls": calls}, thread)
    assert agent.EFFECTS == ["posted hello"]
    graph.invoke(Command(resume="yes"), thread)
    # Resuming the first pause re-ran the node from its top: the reply was posted a second time.
    assert agent.EFFECTS == ["posted hello", "posted hello"]

    (finding,) = check_marks(project)
    assert finding.message.startswith(
        "chosen.invoke() (which may run post_reply from tools_by_name) reaches EFFECTS.append(f\"posted {text}\"), "
        "which writes module-level state, before interrupt() at line 37 in graph node 'run_calls'")
    assert [(r.path, r.line) for r in finding.related] == [("app/agent.py", 13)]


TOOLS = '''
import requests
from langchain_core.tools import tool


@tool
def post_reply(text: str) -> str:
    """Post a reply."""
    return requests.post("https://chat.example.com/reply", json={"text": text}).text


@tool
def weather(city: str) -> str:
    """Say the weather (a placeholder)."""
    return f"sunny in {city}"


@tool
def forecast(city: str) -> str:
    """Say tomorrow's weather (a placeholder)."""
    return f"rain in {city}"


def pick_tools(names: list[str], remote: bool = False) -> list:
    from app.tools import forecast, weather

    chosen = {"weather": weather, "forecast": forecast}
    if remote:
        chosen.update({"reply": post_reply})
    return [chosen[name] for name in names if name in chosen]


def by_name(tools: list) -> dict:
    return {t.name: t for t in tools}
'''


def test_a_lookup_is_reported_only_through_tools_that_reach_an_effect(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "app/__init__.py": "",
        "app/tools.py": TOOLS,
        "app/registry.py": '''
            from langgraph.prebuilt import ToolNode

            from app.tools import by_name, forecast, pick_tools, post_reply, weather

            ALL = [post_reply, weather]
            zipped = dict(zip([t.name for t in ALL], ALL))
            node = ToolNode([post_reply])
            placeholders = by_name([weather, forecast])
            local_only = by_name(pick_tools(["weather", "forecast"]))
            with_reply = by_name(pick_tools(["weather", "reply"], remote=True))
            ''',
        "app/graph.py": '''
            from langgraph.graph import StateGraph
            from langgraph.types import interrupt

            from app import registry
            from app.registry import local_only, placeholders, with_reply, zipped


            def act(state: dict, config: dict) -> dict:
                given = config["configurable"]["tools_by_name"]
                for call in state["calls"]:
                    zipped[call["name"]].invoke(call["args"])  # expect: RT205:9 via app.tools.post_reply
                    placeholders.get(call["name"]).invoke(call["args"])
                    tool = local_only[call["name"]]
                    tool.invoke(call["args"])
                    given[call["name"]].invoke(call["args"])  # expect: RT205:9
                    picked = with_reply[call["name"]]
                    picked.invoke(call["args"])  # expect: RT205:9 via app.tools.post_reply
                    state["answers"].append(interrupt(call))
                return {}


            async def act_async(state: dict) -> dict:
                tool = zipped.get(state["name"])
                await tool.ainvoke(state["args"])  # expect: RT205:11 via app.tools.post_reply
                return {"answer": interrupt("ok?")}


            builder = StateGraph(dict)
            builder.add_node("act", act)
            builder.add_node("act_async", act_async)
            ''',
    })
    diagnostics = check_marks(project)
    assert "(which may run post_reply from with_reply)" in diagnostics[2].message
    # A cold and a warm (cached summaries) run agree.
    cold = lint(project, use_cache=True)
    warm = lint(project, use_cache=True)
    assert [(d.line, d.message) for d in warm] == [(d.line, d.message) for d in cold] == [
        (d.line, d.message) for d in diagnostics]


def test_a_tool_node_and_a_lookup_rebound_to_something_else_are_followed(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "app/__init__.py": "",
        "app/tools.py": TOOLS,
        "app/graph.py": '''
            from langgraph.graph import StateGraph
            from langgraph.prebuilt import ToolNode
            from langgraph.types import interrupt

            from app.tools import post_reply, weather

            runner = ToolNode([post_reply])
            TOOLS = {"reply": post_reply, "weather": weather}


            def act(state: dict) -> dict:
                tool = TOOLS["weather"]
                tool = make_quiet_tool()
                tool.invoke(state["args"])
                runner.tools_by_name["post_reply"].invoke(state["args"])  # expect: RT205:5 via app.tools.post_reply
                TOOLS["reply"].run(state["args"])  # expect: RT205:5 via app.tools.post_reply
                return {"answer": interrupt("ok?")}


            def make_quiet_tool():
                return None


            builder = StateGraph(dict)
            builder.add_node("act", act)
            ''',
    })
    check_marks(project)


def test_a_google_api_request_is_network_io_when_executed(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/mail.py": '''
        from googleapiclient.discovery import build
        from langgraph.graph import StateGraph
        from langgraph.types import interrupt


        def send_draft(state: dict) -> dict:
            service = build("gmail", "v1", credentials=state["credentials"])
            request = service.users().messages().send(userId="me", body=state["draft"])
            request.execute()  # expect: RT205:5
            return {"answer": interrupt("sent; anything else?")}


        builder = StateGraph(dict)
        builder.add_node("send_draft", send_draft)
        '''})
    (finding,) = check_marks(project)
    assert finding.message.startswith("request.execute() does network I/O before interrupt() at line 10")


# --- tools that pause: a tool given to ToolNode or create_react_agent runs inside the node "tools" -----------

BOOKING_AGENT = '''
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from langgraph.types import interrupt

HOLDS: list[str] = []


@tool
def book_hotel(name: str) -> str:
    """Book a hotel."""
    HOLDS.append(name)  # expect: RT205:5
    answer = interrupt(f"Book {name}?")
    return f"booked {name}: {answer}"


@tool
def list_hotels(city: str) -> str:
    """List hotels (asks nothing)."""
    HOLDS.append(city)
    return "Ritz"


class Scripted(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


TOOLS = [book_hotel, list_hotels]


def build(checkpointer):
    model = Scripted(messages=iter([
        AIMessage("", tool_calls=[{"name": "book_hotel", "args": {"name": "Ritz"}, "id": "call-1"}]),
        AIMessage("done"),
    ]))
    return create_react_agent(model, TOOLS, checkpointer=checkpointer)
'''


def test_a_tool_of_a_prebuilt_agent_reruns_from_its_top_and_its_effects_before_interrupt_are_reported(
    tmp_path: Path,
) -> None:
    import warnings

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    project = project_with(tmp_path, {"app/__init__.py": "", "app/booking.py": BOOKING_AGENT})
    module = _import(project / "app" / "booking.py", "booking_agent_under_test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's create_agent
        agent = module.build(InMemorySaver())
    thread = {"configurable": {"thread_id": "booking-1"}}
    assert agent.invoke({"messages": [("user", "book the Ritz")]}, thread)["__interrupt__"]
    assert module.HOLDS == ["Ritz"]
    agent.invoke(Command(resume="yes"), thread)
    # The tool ran again from its top when the thread resumed: the hold was placed twice.
    assert module.HOLDS == ["Ritz", "Ritz"]

    (finding,) = check_marks(project)
    assert "in graph node 'tools'" in finding.message


def test_tools_given_to_a_tool_node_are_checked_as_the_node_they_run_in(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "app/__init__.py": "",
        "app/tools.py": '''
            import requests
            from langchain_core.tools import tool
            from langgraph.types import interrupt


            @tool
            def refund(order: str) -> str:
                """Refund an order after asking."""
                requests.post("https://shop.example.com/holds", json={"order": order})  # expect: RT205:5
                return interrupt(f"Refund {order}?")


            @tool
            def cancel(order: str) -> str:
                """Cancel an order after asking."""
                requests.post("https://shop.example.com/cancel-holds", json={"order": order})  # expect: RT205:5
                return interrupt(f"Cancel {order}?")


            @tool
            def status(order: str) -> str:
                """Say an order's status (never pauses)."""
                return requests.get(f"https://shop.example.com/orders/{order}").text
            ''',
        "app/graph.py": '''
            from langgraph.graph import MessagesState, StateGraph
            from langgraph.prebuilt import ToolNode, create_react_agent

            from app.tools import cancel, refund, status

            builder = StateGraph(MessagesState)
            builder.add_node("tools", ToolNode([refund, status]))
            agent = create_react_agent("openai:gpt-4o", tools=[cancel])
            ''',
    })
    check_marks(project)


def test_a_lookup_of_classes_is_not_a_tool_lookup(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/graph.py": '''
        import requests
        from langgraph.graph import StateGraph
        from langgraph.types import interrupt


        class Exporter:
            def __init__(self) -> None:
                requests.post("https://exports.example.com/sessions")

            @staticmethod
            def run(rows: list) -> int:
                return len(rows)


        EXPORTERS = {"csv": Exporter}


        def export(state: dict) -> dict:
            EXPORTERS[state["format"]].run(state["rows"])
            return {"answer": interrupt("exported; more?")}


        builder = StateGraph(dict)
        builder.add_node("export", export)
        '''})
    assert lint(project) == []
