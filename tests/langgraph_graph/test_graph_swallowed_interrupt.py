"""RT206 against the real engine (LangGraph's graph and functional APIs): an ``interrupt()`` inside a ``try`` whose
handler catches ``Exception`` and goes on does not pause the run: LangGraph finishes the thread with the handler's
value, and no interrupt is pending to resume; so does ``with contextlib.suppress(Exception):``. The same code with
``except GraphInterrupt: raise`` first parks the thread. Lint reports exactly the swallowing calls, in both APIs,
and not the re-raising one."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from langgraph.checkpoint.memory import MemorySaver

SWALLOWING = '''\
from typing import TypedDict

from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict):
    answer: str


def review(state: State) -> State:
    try:
        answer = interrupt("approve?")
    except Exception:
        answer = "no answer"
    return {"answer": answer}


builder = StateGraph(State)
builder.add_node("review", review)
builder.add_edge(START, "review")
builder.add_edge("review", END)


def approve_with(checkpointer):
    @entrypoint(checkpointer=checkpointer)
    def approve(draft: str) -> str:
        try:
            return interrupt(draft)
        except BaseException:
            return "no answer"

    return approve
'''
# The same module, the interrupt re-raised before the broad handler.
IMPORTING = SWALLOWING.replace("from langgraph.func import entrypoint\n",
                               "from langgraph.errors import GraphInterrupt\nfrom langgraph.func import entrypoint\n")
RERAISING = IMPORTING.replace("    except Exception:\n", "    except GraphInterrupt:\n        raise\n    except Exception:\n").replace(
    "        except BaseException:\n", "        except GraphInterrupt:\n            raise\n        except BaseException:\n")
SUPPRESSING = '''\
from contextlib import suppress
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict):
    answer: str


def review(state: State) -> State:
    answer = "no answer"
    with suppress(Exception):
        answer = interrupt("approve?")
    return {"answer": answer}


builder = StateGraph(State)
builder.add_node("review", review)
builder.add_edge(START, "review")
builder.add_edge("review", END)
'''
LINES = SWALLOWING.splitlines()
SUPPRESSED_CALL = (SUPPRESSING.splitlines().index('        answer = interrupt("approve?")') + 1, len("        answer = ") + 1)
NODE_CALL = (LINES.index('        answer = interrupt("approve?")') + 1, len("        answer = ") + 1)
TASK_CALL = (LINES.index("            return interrupt(draft)") + 1, len("            return ") + 1)


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lint(root: Path) -> list[dict]:
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return json.loads(run.stdout)["diagnostics"]


def test_langgraph_does_not_pause_where_the_interrupt_is_swallowed(tmp_path: Path) -> None:
    (tmp_path / "swallowing.py").write_text(SWALLOWING)
    module = _import(tmp_path / "swallowing.py", "graph_swallowing_interrupt")
    config = {"configurable": {"thread_id": "t-1"}}
    graph = module.builder.compile(checkpointer=MemorySaver())
    assert graph.invoke({"answer": ""}, config) == {"answer": "no answer"}
    state = graph.get_state(config)
    assert state.next == () and not state.interrupts
    approve = module.approve_with(MemorySaver())
    assert approve.invoke("draft", config) == "no answer"
    assert approve.get_state(config).next == ()


def test_langgraph_does_not_pause_where_suppress_swallows_the_interrupt(tmp_path: Path) -> None:
    (tmp_path / "suppressing.py").write_text(SUPPRESSING)
    module = _import(tmp_path / "suppressing.py", "graph_suppressing_interrupt")
    config = {"configurable": {"thread_id": "t-1"}}
    graph = module.builder.compile(checkpointer=MemorySaver())
    assert graph.invoke({"answer": ""}, config) == {"answer": "no answer"}
    assert graph.get_state(config).next == ()


def test_langgraph_pauses_where_the_interrupt_is_raised_again(tmp_path: Path) -> None:
    (tmp_path / "reraising.py").write_text(RERAISING)
    module = _import(tmp_path / "reraising.py", "graph_reraising_interrupt")
    config = {"configurable": {"thread_id": "t-1"}}
    graph = module.builder.compile(checkpointer=MemorySaver())
    paused = graph.invoke({"answer": ""}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["approve?"]
    assert graph.get_state(config).next == ("review",)
    approve = module.approve_with(MemorySaver())
    assert [chunk for chunk in approve.stream("draft", config)] == [
        {"__interrupt__": approve.get_state(config).interrupts}]
    assert [i.value for i in approve.get_state(config).interrupts] == ["draft"]


def test_lint_reports_the_swallowed_interrupts_only(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    (tmp_path / "swallowing.py").write_text(SWALLOWING)
    (tmp_path / "reraising.py").write_text(RERAISING)
    (tmp_path / "suppressing.py").write_text(SUPPRESSING)
    found = [(d["path"], d["rule"], d["line"], d["column"]) for d in _lint(tmp_path)]
    assert found == [("suppressing.py", "RT206", *SUPPRESSED_CALL), ("swallowing.py", "RT206", *NODE_CALL),
                     ("swallowing.py", "RT206", *TASK_CALL)]
