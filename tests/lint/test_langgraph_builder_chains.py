"""RT205 on a LangGraph graph built as one chain of builder calls.

LangGraph's builder methods return the builder (``add_node``, ``add_edge`` ... ``-> Self``), so a graph may be
built as ``StateGraph(S).add_node("a", a).add_node("b", b).add_edge(...)``. Every ``add_node`` of such a chain
registers a node, not only the first one: checked on LangGraph itself (the chained graph is compiled with a
real ``InMemorySaver``, paused at the ``interrupt()`` and resumed: the node's code before it runs twice), then
the linter must report that line, whatever builder call comes first in the chain.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from lintkit import write_files

from replaytest.config import load_config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.model import Diagnostic
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]

CHAINED_AGENT = '''
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

EFFECTS: list[str] = []


class Session(TypedDict, total=False):
    topic: str
    summary: str
    verdict: str


def prepare(state: Session) -> dict:
    return {"topic": state["topic"].strip()}


def summarise(state: Session) -> dict:
    EFFECTS.append(f"summary written for {state['topic']}")
    verdict = interrupt({"summary": f"about {state['topic']}"})
    return {"summary": f"about {state['topic']}", "verdict": verdict}


graph_builder = {chain}
'''

CHAINS = {
    "add_node first": 'StateGraph(Session).add_node("prepare", prepare).add_node("summarise", summarise)'
                      '.add_edge(START, "prepare").add_edge("prepare", "summarise").add_edge("summarise", END)',
    "add_edge first": '(StateGraph(Session).add_edge(START, "prepare").add_node("prepare", prepare)'
                      '.add_conditional_edges("prepare", lambda state: "summarise")'
                      '.add_node("summarise", summarise).add_edge("summarise", END))',
    "set_entry_point first": '(StateGraph(Session).set_entry_point("prepare").add_sequence([prepare, summarise])'
                             '.set_finish_point("summarise"))',
}


def agent_source(chain: str) -> str:
    return CHAINED_AGENT.replace("{chain}", chain)


def lint(project: Path) -> list[Diagnostic]:
    config = load_config(project)
    result = lint_paths([project], config, PROFILES, use_cache=False, jobs=1, context=build_context(config, PROFILES),
                        cwd=project)
    assert not result.errors, result.problems
    return result.diagnostics


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


@pytest.mark.parametrize("form", sorted(CHAINS))
def test_every_node_of_a_chained_builder_is_a_node_langgraph_reruns_and_the_linter_reports(tmp_path: Path,
                                                                                          form: str) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    project = write_files(tmp_path, {"pyproject.toml": "[tool.replaytest]\n", "app/tutor.py": agent_source(CHAINS[form])})
    lines = (project / "app" / "tutor.py").read_text(encoding="utf-8").splitlines()
    effect_line = 1 + next(i for i, line in enumerate(lines) if line.strip().startswith("EFFECTS.append"))

    agent = _import(project / "app" / "tutor.py", f"chained_agent_{abs(hash(form))}")
    graph = agent.graph_builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "session-1"}}
    paused = graph.invoke({"topic": " graphs "}, thread)
    assert "__interrupt__" in paused
    graph.invoke(Command(resume="keep"), thread)
    # The node registered later in the chain paused, and resuming ran its code before interrupt() again.
    assert agent.EFFECTS == ["summary written for graphs"] * 2

    findings = [(d.rule, d.line) for d in lint(project)]
    assert findings == [("RT205", effect_line)], findings


def test_a_chain_on_another_object_registers_nothing(tmp_path: Path) -> None:
    # Only the builders' own methods return the builder: the same chain on a project class is not a graph.
    source = textwrap.dedent('''
        from langgraph.types import interrupt


        class Pipeline:
            def add_node(self, name, fn):
                return self


        def summarise(state: dict) -> dict:
            print("summary")
            open("notes.txt", "a").write("summary\\n")
            return {"verdict": interrupt("ok?")}


        pipeline = Pipeline().add_node("prepare", print).add_node("summarise", summarise)
    ''')
    project = write_files(tmp_path, {"pyproject.toml": "[tool.replaytest]\n", "app/pipeline.py": source})
    assert lint(project) == []
