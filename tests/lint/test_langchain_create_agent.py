"""RT205 on the tools of langchain's ``create_agent`` (langchain 1.x): they run in the agent graph's "tools" node.

``create_agent(model, tools=[...])`` builds a LangGraph graph whose tool node runs the tools given, as
``create_react_agent`` does; a tool that calls ``interrupt()`` re-runs from its top when the thread resumes.
langchain is not one of this project's dependencies: the engine test runs where it is installed and skips
cleanly elsewhere; the lint tests below need no langchain (lint reads the source only).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from test_langgraph_graph_nodes import check_marks, lint, project_with

FLIGHT_DESK = '''
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.types import interrupt

SEARCHES: list[str] = []


def find_flights(route: str) -> str:
    """Find flights on a route and let the traveller pick one."""
    SEARCHES.append(route)  # expect: RT205:5
    choice = interrupt({"route": route, "options": ["AA 100", "BA 117"]})
    return f"booked {choice}"


class Scripted(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


def build(checkpointer):
    model = Scripted(messages=iter([
        AIMessage("", tool_calls=[{"name": "find_flights", "args": {"route": "JFK-LHR"}, "id": "call-1"}]),
        AIMessage("done"),
    ]))
    return create_agent(model, [find_flights], checkpointer=checkpointer)
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


def test_a_tool_of_create_agent_reruns_from_its_top_on_resume_and_the_linter_marks_its_effect(tmp_path: Path) -> None:
    pytest.importorskip("langchain.agents", reason="langchain (1.x, create_agent) is not installed")
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    project = project_with(tmp_path, {"app/__init__.py": "", "app/flights.py": FLIGHT_DESK})
    module = _import(project / "app" / "flights.py", "flight_desk_under_test")
    agent = module.build(InMemorySaver())
    thread = {"configurable": {"thread_id": "flights-1"}}
    assert agent.invoke({"messages": [("user", "fly me to London")]}, thread)["__interrupt__"]
    assert module.SEARCHES == ["JFK-LHR"]
    result = agent.invoke(Command(resume="BA 117"), thread)
    # The tool ran again from its top when the thread resumed: the search before interrupt() ran twice.
    assert module.SEARCHES == ["JFK-LHR", "JFK-LHR"]
    assert any(getattr(message, "content", "") == "booked BA 117" for message in result["messages"])

    (finding,) = check_marks(project)
    assert "in graph node 'tools'" in finding.message


def test_create_agent_tools_are_checked_in_every_form_and_a_file_importing_only_langchain_is_read(
    tmp_path: Path,
) -> None:
    project = project_with(tmp_path, {
        "app/__init__.py": "",
        "app/tools/__init__.py": '''
            from .flights import find_flights, rebook
            from .weather import weather
            ''',
        "app/tools/flights.py": '''
            from fast_flights import FlightData, Passengers, get_flights
            from langgraph.types import interrupt


            def find_flights(origin: str, destination: str, day: str) -> str:
                """Search Google Flights, then let the traveller pick."""
                result = get_flights(  # expect: RT205:14
                    flight_data=[FlightData(date=day, from_airport=origin, to_airport=destination)],
                    trip="one-way", seat="economy", passengers=Passengers(adults=1),
                )
                choice = interrupt({"options": [str(f) for f in result.flights]})
                return f"picked {choice}"


            def rebook(booking: str) -> str:
                """Ask before rebooking; the rebooking runs once, after the answer."""
                answer = interrupt(f"Rebook {booking}?")
                get_flights(flight_data=[], trip="one-way", seat="economy", passengers=None)
                return answer
            ''',
        "app/tools/weather.py": '''
            import requests


            def weather(city: str) -> str:
                """Say the weather (never pauses)."""
                return requests.get(f"https://weather.example.com/{city}").text
            ''',
        # Imports only langchain: read all the same (the tools it gives run as the graph's "tools" node).
        "app/keyword_agent.py": '''
            from langchain.agents import create_agent

            from app.tools import find_flights, weather

            agent = create_agent(model="openai:gpt-4o", tools=[weather, find_flights], system_prompt="Plan trips.")
            ''',
        "app/positional_agent.py": '''
            from langchain.agents.factory import create_agent

            from app.tools import rebook

            TOOLS = [rebook]
            agent = create_agent("openai:gpt-4o", TOOLS)
            ''',
    })
    (finding,) = check_marks(project)
    assert finding.message.startswith(
        "get_flights() does network I/O before interrupt() at line 11 in graph node 'tools'")


def test_a_tool_given_to_create_agent_that_never_pauses_is_quiet(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/agent.py": '''
        import requests
        from langchain.agents import create_agent


        def book(hotel: str) -> str:
            """Book a hotel (asks nothing)."""
            return requests.post("https://hotels.example.com/bookings", json={"hotel": hotel}).text


        agent = create_agent("openai:gpt-4o", tools=[book])
        '''})
    assert lint(project) == []
