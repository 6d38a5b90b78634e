"""RT205: an effect or a non-deterministic read before an ``interrupt()`` in a graph node, which re-runs it.

The rule has no call table of its own: the other rules' tables find the effects (a clock read, a network
call …) in every function, ``lint.graph_nodes`` finds the part of each graph node that re-runs on resume
and the effects that part reaches, and this rule words them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import DEFAULT_REPLACEMENTS, Invalid, Rule
from replaytest.lint.tool_lookups import CONFIG_TOOL
from replaytest.lint.vocabulary import OPEN_CALLS

# What an effect of each category does, as this rule words it. Categories missing here are not reported in
# a node: reading the environment, sleeping or iterating a set again on resume repeats nothing anyone sees.
REPEATED: Mapping[str, str] = {
    "clock": "reads the wall clock",
    "random": "draws fresh randomness",
    "uuid": "creates a fresh UUID",
    "model-call": "calls a language model",
    "network": "does network I/O",
    "filesystem": "touches the filesystem",
    "concurrency": "starts concurrent work",
    "global-state": "writes module-level state",
}

# Filesystem calls that only read: reading a file again on resume (a configuration file, most often) repeats
# nothing anyone sees, so only writes are reported. ``open()`` is a read when its mode is a literal without
# "w", "a", "x" or "+" (or it has none).
_FILE_READS = frozenset({
    "os.stat", "os.lstat", "os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.getsize",
    "os.path.getmtime", "os.path.getctime", "os.path.getatime", "os.path.lexists",
    *(f"pathlib.Path.{method}" for method in (
        "read_text", "read_bytes", "exists", "is_file", "is_dir", "stat", "lstat", "is_symlink", "samefile")),
})


def _opens_for_writing(effect: Effect) -> bool:
    """Whether an ``open()`` call's mode may write (an unknown mode may)."""
    try:
        call = ast.parse(f"f({effect.args})", mode="eval").body
    except SyntaxError:
        return True
    assert isinstance(call, ast.Call)
    position = 0 if effect.qualname == "pathlib.Path.open" else 1
    mode: ast.expr | None = call.args[position] if len(call.args) > position else None
    mode = next((k.value for k in call.keywords if k.arg == "mode"), mode)
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    if mode is None:
        return False
    if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
        return True
    return any(flag in mode.value for flag in "wax+")


class RepeatsEffectBeforeInterrupt(Rule):
    """
    ## What it does
    Finds, in a node of a LangGraph graph (a function given to `StateGraph.add_node` or `add_sequence`:
    a function, a method, `functools.partial(fn, ...)`, an instance with `__call__`, or the project
    functions a lambda calls; or a tool given in a list to `ToolNode`, `create_react_agent` or langchain's
    `create_agent`, which runs inside the node "tools"), the effects and non-deterministic reads that run
    before the node's last
    `interrupt()`: clock reads, randomness, fresh UUIDs, model calls, network, file writes, threads and
    subprocesses, writes to module state — directly or in a helper the node calls (a helper that itself
    calls `interrupt()` pauses the node there). A tool run through a lookup
    (`tools_by_name[call["name"]].invoke(args)`) is followed into the project's tools that lookup can
    name — a list of tools, `{t.name: t for t in tools}`, `dict(zip(names, tools))`, `ToolNode(tools)`,
    a helper picking tools by name from a dict of them, across imports — and reported, at each such call,
    when one of them reaches an effect; a lookup whose tools are not known (a collection passed as a
    parameter) is not reported. A tool taken from the run's config
    (`config["configurable"]["tools_by_name"][name].ainvoke(args)`, also through locals, `get_config()` and
    a helper handed the config or a value from it) cannot be read at all, and a tool exists to act: running
    it is reported. A loop holding an `interrupt()` counts whole (its next turn pauses again). Code after the last `interrupt()` and `@task` calls are not reported; nodes
    without an `interrupt()` are not reported by any rule (a node runs once per step, and LangGraph
    checkpoints what it returns).

    ## Why is this bad?
    When a paused thread is resumed (`Command(resume=...)`), LangGraph runs the interrupted node again
    from its top, and `interrupt()` returns the answer only when the node reaches it again. Everything
    before it runs again: a request is posted twice, a card is charged twice, and the draft, id or
    time the human approved is not the one the node goes on with (the model writes a new draft).

    ## Example
    ```python
    def review(state: State) -> dict:
        draft = llm.invoke(state["messages"])
        answer = interrupt({"draft": draft.content})
        return {"approved": answer == "yes", "draft": draft.content}
    ```

    ## Use instead
    Produce the value in an earlier node (its result is checkpointed), in a `@task` (its result is
    checkpointed and returned on resume), or after the `interrupt()`:
    ```python
    def write_draft(state: State) -> dict:
        return {"draft": llm.invoke(state["messages"]).content}

    def review(state: State) -> dict:
        answer = interrupt({"draft": state["draft"]})
        return {"approved": answer == "yes"}
    ```
    """

    code = "RT205"
    name = "repeats-effect-before-interrupt"
    category = "rerun-on-resume"
    summary = "Effect or non-deterministic read before interrupt() in a graph node (re-run on resume)"
    what = "runs again when the node resumes"

    def node_message(
        self, effect: Effect, profile: FrameworkProfile | None, node: str, pause: str, pause_at: str,
        via: str | None = None, in_loop: bool = False,
    ) -> str:
        """``effect`` (reached through the call ``via``) runs before ``pause`` (at ``pause_at``: "line 12", or
        "app/nodes.py:12" when reported in another file) in the graph node ``node``; ``in_loop``: it runs after
        the last pause, in a loop whose next turn pauses again."""
        replacement = (profile.replacements.get(self.category) if profile else None) or DEFAULT_REPLACEMENTS[
            self.category
        ]
        what = REPEATED.get(effect.category, self.what)
        if effect.category == CONFIG_TOOL:
            taken = f"{effect.args!r} of config[\"configurable\"]" if effect.args else 'config["configurable"]'
            what = (f"runs a tool taken from the run's config ({taken}), whose code could not be resolved "
                    "(a tool exists to act)")
        done = f"{via} reaches {effect.subject}, which {what}," if via is not None else f"{effect.subject} {what}"
        after = "the loop" if in_loop else f"the {pause.split(',', 1)[0]}"
        return (f"{done} before {pause} at {pause_at} in graph node '{node}', which re-runs from its top "
                f"on resume, so this runs again; move it after {after} or {replacement}")

    def repeats(self, effect: Effect) -> bool:
        """Whether running ``effect`` again on resume is a finding (see ``REPEATED``; file reads are not)."""
        if effect.category not in REPEATED:
            return False
        if effect.category == "filesystem":
            if effect.qualname in _FILE_READS:
                return False
            if effect.qualname in OPEN_CALLS:
                return _opens_for_writing(effect)
        return True

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        # Reached only through ``node_message``; a generic wording for reporters that ask anyway.
        what = REPEATED.get(effect.category, self.what)
        return f"{via or effect.subject} {what} before an interrupt() of a graph node, which re-runs on resume"

    VALID = (
        """
import requests
from typing import TypedDict
from langgraph.func import task
from langgraph.graph import StateGraph
from langgraph.types import interrupt


class Ticket(TypedDict):
    text: str
    answer: str


@task
def log_ticket(text: str) -> int:
    return requests.post("https://audit.example.com/log", json={"text": text}).status_code


def ask_human(state: Ticket) -> dict:
    log_ticket(state["text"]).result()
    answer = interrupt({"question": f"Refund for {state['text']}?"})
    requests.post("https://audit.example.com/answers", json={"answer": answer})
    return {"answer": answer}


builder = StateGraph(Ticket)
builder.add_node("ask_human", ask_human)
""",
        """
from langchain_core.tools import tool
from langgraph.graph import StateGraph
from langgraph.types import interrupt


@tool
def word_count(text: str) -> int:
    '''Count the words of a text.'''
    return len(text.split())


tools_by_name = {t.name: t for t in [word_count]}


def act(state: dict) -> dict:
    for call in state["calls"]:
        tools_by_name[call["name"]].invoke(call["args"])
        interrupt(f"{call['name']} done; next?")
    return {}


builder = StateGraph(dict)
builder.add_node("act", act)
""",
    )
    INVALID = (
        Invalid(
            """
import uuid
from typing import TypedDict
from langgraph.graph import StateGraph
from langgraph.types import interrupt


class Ticket(TypedDict):
    text: str
    answer: str


def ask_human(state: Ticket) -> dict:
    case = uuid.uuid4().hex
    answer = interrupt({"case": case, "question": state["text"]})
    return {"answer": f"{case}: {answer}"}


builder = StateGraph(Ticket)
builder.add_node("ask_human", ask_human)
""",
            line=13, column=12,
            message="uuid.uuid4() creates a fresh UUID before interrupt() at line 14 in graph node 'ask_human', "
                    "which re-runs from its top on resume, so this runs again; move it after the interrupt() "
                    "or into a @task function (or an earlier node)",
        ),
        Invalid(
            """
import requests
from langchain_core.tools import tool
from langgraph.graph import StateGraph
from langgraph.types import interrupt


@tool
def refund(order_id: str) -> str:
    '''Refund an order.'''
    return requests.post("https://shop.example.com/refunds", json={"order": order_id}).text


tools_by_name = {t.name: t for t in [refund]}


def act(state: dict) -> dict:
    for call in state["calls"]:
        tools_by_name[call["name"]].invoke(call["args"])
        interrupt(f"{call['name']} done; next?")
    return {}


builder = StateGraph(dict)
builder.add_node("act", act)
""",
            line=18, column=9,
            message="tools_by_name[...].invoke() (which may run refund from tools_by_name) reaches requests.post(), "
                    "which does network I/O, before interrupt() at line 19 in graph node 'act', which re-runs from "
                    "its top on resume, so this runs again; move it after the interrupt() or into a @task function "
                    "(or an earlier node)",
        ),
        Invalid(
            """
from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.types import interrupt


async def act(state: dict, config: RunnableConfig) -> dict:
    tools_by_name = config["configurable"]["tools_by_name"]
    result = await tools_by_name[state["tool"]].ainvoke(state["args"])
    answer = interrupt({"result": result, "question": "go on?"})
    return {"answer": answer}


builder = StateGraph(dict)
builder.add_node("act", act)
""",
            line=8, column=20,
            message="tools_by_name[...].ainvoke() runs a tool taken from the run's config ('tools_by_name' of "
                    "config[\"configurable\"]), whose code could not be resolved (a tool exists to act) before "
                    "interrupt() at line 9 in graph node 'act', which re-runs from its top on resume, so this runs "
                    "again; move it after the interrupt() or into a @task function (or an earlier node)",
        ),
    )
