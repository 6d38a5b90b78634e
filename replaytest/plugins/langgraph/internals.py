"""Every LangGraph private name replaytest relies on, in one module, for the versions it is tested with.

LangGraph does not store which ``@task`` a checkpoint write came from, and offers no public way to run an
``@entrypoint`` against recorded task results. Both need its internals:

* how task ids are derived (``langgraph.pregel._algo``: ``prepare_single_task`` for the entrypoint's
  own task, ``prepare_push_task_functional`` for each ``@task`` call) — recomputed here from the
  checkpoint id, the entrypoint and task names, the step and the call index, to name recorded writes;
* the runnable-config keys LangGraph itself uses to dispatch task calls and interrupts
  (``__pregel_call``, ``__pregel_scratchpad``, ``__pregel_send``, ``__pregel_checkpoint_ns``,
  ``__pregel_runtime``) and the scratchpad type, so replay answers task calls from a history;
* the ``@task`` wrapper class and the channel names of the checkpoint ``writes`` table;
* the run's ``Runtime`` carries the store (``store=`` of ``@entrypoint``/``compile``) that an injected
  ``store`` parameter and ``get_store()`` read: replayed code is given ``replay_store`` instead, which
  discards writes and stops at reads, so replay never reaches a user's store;
* that ``interrupt(value)`` asks its scratchpad's interrupt counter for its index first (its frame then
  holds ``value``), and that a graph started inside a run announces itself to the inherited callbacks
  before it runs anything (how replay stops a nested graph it does not answer);
* that a graph invoked from a running task's code goes through ``Pregel.invoke``/``ainvoke`` (where replay
  answers it from its recorded nested run, ``nested_invokes``) and is checkpointed in the task's namespace,
  the k-th after the first in ``<namespace>|k`` (``nested_run_index``), its task ids hashed with that
  namespace.

For the graph API (``StateGraph``): how node and ``Send`` task ids are derived (the PULL and PUSH
branches of ``prepare_single_task``), the task paths and bookkeeping channels of checkpoint writes
(``branch:to:<node>``, ``__pregel_tasks``), a compiled graph's nodes (``PregelNode``: its channels,
triggers, mapper, bound runnable, subgraphs) and channels (restored with ``from_checkpoint`` and
LangGraph's ``MISSING``, read as ``_proc_input`` reads a node's input), so a parked node can be re-run
to its ``interrupt()`` through the same runnable config as a replayed entrypoint; a prebuilt ``ToolNode``'s
message key (``_messages_key``) and that it answers a call to a tool it lacks with an error message
(``_validate_tool_call``), so a waiting ``ToolNode`` is checked for its tools without being run.

``TESTED_RANGE`` is what the test suite runs against (oldest and newest); ``version_problem`` says when
the installed langgraph lies outside it, and the importer and replayer refuse to guess in that case.
"""

from __future__ import annotations

import binascii
import contextvars
import hashlib
import sys
import threading
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

TESTED_MIN = (1, 0, 2)
TESTED_BELOW = (1, 3, 0)
TESTED_RANGE = "langgraph>=1.0.2,<1.3"

# Channels of the checkpoint ``writes`` table (langgraph._internal._constants).
RETURN = "__return__"  # a @task call's result
ERROR = "__error__"  # a task's failure (the entrypoint's own when the run failed)
RESUME = "__resume__"  # resume values: the entrypoint task's list, or one on the null task id
INTERRUPT = "__interrupt__"  # the interrupt a parked run waits at
END = "__end__"  # the entrypoint's return value
PREVIOUS = "__previous__"  # what the next invocation of the thread receives as ``previous``
START = "__start__"  # the input channel (in the input checkpoint's channel values)
PUSH = "__pregel_push"
PULL = "__pregel_pull"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
_NS_SEP = "|"
_NS_END = ":"

# msgpack extension codes of langgraph.checkpoint.serde.jsonplus (each payload is a packed tuple
# ``(module, name, value[, method])``).
EXT_KINDS = {0: "arg", 1: "args", 2: "kwargs", 3: "method", 4: "pydantic-v1", 5: "pydantic-v2", 6: "numpy"}

def installed_version() -> str | None:
    try:
        return version("langgraph")
    except PackageNotFoundError:
        return None


def version_problem() -> str | None:
    """Why the installed langgraph cannot be relied on (not installed, or outside the tested range)."""
    text = installed_version()
    if text is None:
        return "langgraph is not installed; install replaytest[langgraph]"
    parts = tuple(int(p) for p in text.split(".")[:3] if p.isdigit())
    if not (TESTED_MIN <= parts < TESTED_BELOW):
        return (
            f"langgraph {text} is installed but replaytest's LangGraph support relies on its internals and is "
            f"tested with {TESTED_RANGE}"
        )
    return None


def _task_id_hash(checkpoint_id: str, checkpoint_version: int, *parts: str) -> str:
    """LangGraph's task id: xxh3-128 (checkpoint format 2 and later) or sha1 over the checkpoint id's
    bytes and the parts, shaped as a UUID."""
    namespace = binascii.unhexlify(checkpoint_id.replace("-", ""))
    data = namespace + "".join(parts).encode()
    if checkpoint_version > 1:
        import xxhash

        digest = xxhash.xxh3_128_hexdigest(data)
    else:
        digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def entry_task_id(checkpoint_id: str, checkpoint_version: int, entrypoint: str, step: int, parent_ns: str = "") -> str:
    """The id of the entrypoint's own task in the step that starts from ``checkpoint_id``; ``parent_ns``:
    the checkpoint namespace of a nested run (an entrypoint invoked from another one's code)."""
    own_ns = f"{parent_ns}{_NS_SEP}{entrypoint}" if parent_ns else entrypoint
    return _task_id_hash(checkpoint_id, checkpoint_version, own_ns, str(step), entrypoint, PULL, START)


def entry_scope(entrypoint: str, entry_id: str, parent_ns: str = "") -> tuple[str, str]:
    """(checkpoint namespace, task path text) the entrypoint's own task calls tasks from."""
    own_ns = f"{parent_ns}{_NS_SEP}{entrypoint}" if parent_ns else entrypoint
    return f"{own_ns}{_NS_END}{entry_id}", f"~{PULL}, {entrypoint}"


def nested_run_index(entry_ns: str, checkpoint_ns: str) -> int | None:
    """Which graph run started from the code of the entrypoint task whose namespace is ``entry_ns``
    ``checkpoint_ns`` holds (0-based, in the order the code started them), None for any other namespace.
    LangGraph checkpoints the first graph a task's code invokes in the task's own namespace and the
    k-th after it in ``<namespace>|k`` (``PregelScratchpad.subgraph_counter``, read in ``PregelLoop``)."""
    if checkpoint_ns == entry_ns:
        return 0
    head, sep, counter = checkpoint_ns.rpartition(_NS_SEP)
    if sep and head == entry_ns and counter.isdigit() and int(counter) > 0:
        return int(counter)
    return None


def child_scope(scope: tuple[str, str], task: str, task_id: str, call_index: int) -> tuple[str, str]:
    """The scope inside the task ``task_id`` (called as ``task`` at ``call_index`` from ``scope``): where
    the tasks it calls (nested tasks) get their ids."""
    namespace, path = scope
    return f"{namespace}{_NS_SEP}{task}{_NS_END}{task_id}", f"~{PUSH}, {path}, {call_index:010d}, {1:010d}"


def scoped_task_id(
    checkpoint_id: str, checkpoint_version: int, scope: tuple[str, str], step: int, task: str, call_index: int
) -> str:
    """The id of the ``call_index``-th task call (0-based) made from ``scope``, if it called ``task``."""
    namespace, path = scope
    return _task_id_hash(
        checkpoint_id, checkpoint_version, f"{namespace}{_NS_SEP}{task}", str(step), task, PUSH, path, str(call_index)
    )


def call_task_id(
    checkpoint_id: str, checkpoint_version: int, entrypoint: str, entry_id: str, step: int, task: str, call_index: int
) -> str:
    """The id of the ``call_index``-th task call (0-based) made directly by the entrypoint, if it called
    the ``@task`` named ``task`` there."""
    scope = entry_scope(entrypoint, entry_id)
    return scoped_task_id(checkpoint_id, checkpoint_version, scope, step, task, call_index)


def parse_task_path(path: str) -> tuple[int, int | None]:
    """(nesting depth, call index) of a ``writes.task_path``: depth 0 is the entrypoint's own task, 1 a
    task it called, 2 a task called from inside a task; the call index is the counter of the innermost
    call (the second-to-last element; the last one marks a call in progress)."""
    parts = [part.strip() for part in path.split(",")] if path else []
    depth = sum(1 for part in parts if part == f"~{PUSH}")
    if depth == 0 or len(parts) < 2 or not parts[-2].isdigit():
        return depth, None
    return depth, int(parts[-2])


def is_task_function(obj: Any) -> bool:
    """True for what ``@task`` returns."""
    from langgraph.func import _TaskFunction

    return isinstance(obj, _TaskFunction)


def task_bodies(namespaces: list[dict[str, Any]]) -> list[Any]:
    """The functions behind the ``@task`` objects the namespaces (module globals) hold."""
    found = []
    for namespace in namespaces:
        for value in namespace.values():
            if is_task_function(value):
                body = getattr(value, "func", None)
                if body is not None and body not in found:
                    found.append(body)
    return found


def task_name_of(obj: Any) -> str:
    """The name LangGraph hashes into a ``@task``'s ids (``@task(name=…)`` or the function's name)."""
    func = getattr(obj, "func", obj)
    name = getattr(func, "__name__", None) or getattr(getattr(func, "func", None), "__name__", None)
    return str(name or type(func).__name__)


def entrypoint_node(graph: Any) -> tuple[str, Any] | None:
    """(name, node runnable) of an ``@entrypoint`` graph: a Pregel whose one node is the entrypoint."""
    from langgraph.pregel import Pregel

    if not isinstance(graph, Pregel) or len(graph.nodes) != 1:
        return None
    name, node = next(iter(graph.nodes.items()))
    return name, node.bound


def is_async_entrypoint(bound: Any) -> bool:
    return getattr(bound, "func", None) is None


NO_VALUE = object()  # the value an ``interrupt()`` call was given, when it could not be read


class Scratchpad:
    """Builds LangGraph's per-task scratchpad for a replayed entrypoint run: task calls are counted by
    the call hook itself; ``interrupt(value)`` asks ``on_interrupt(value)`` for its index (``NO_VALUE``
    when the value cannot be read) and reads ``resume``."""

    @staticmethod
    def build(on_interrupt: Callable[[Any], int], resume: list[Any]) -> Any:
        from langgraph._internal._scratchpad import PregelScratchpad
        from langgraph.types import interrupt

        def no_null_resume(consume: bool = False) -> Any:
            return None  # every resume value replay knows is in ``resume``

        def interrupt_counter() -> int:
            # ``interrupt(value)`` asks its scratchpad for the index first thing: its frame holds the value.
            caller = sys._getframe(1)
            value = caller.f_locals.get("value", NO_VALUE) if caller.f_code is interrupt.__code__ else NO_VALUE
            return on_interrupt(value)

        return PregelScratchpad(
            step=0,
            stop=1,
            call_counter=lambda: 0,
            interrupt_counter=interrupt_counter,
            get_null_resume=no_null_resume,
            resume=resume,
            subgraph_counter=lambda: 0,
        )


class NestedGraphRun(BaseException):
    """The replayed entrypoint started another LangGraph graph (an ``@entrypoint`` or a compiled graph)
    from its own code in a way replay does not support (``reason``): stopped before it runs anything. A
    ``BaseException`` so that orchestration code catching ``Exception`` does not swallow it."""

    def __init__(self, graph_name: str, reason: str = "") -> None:
        self.graph_name = graph_name
        self.reason = reason or "a graph started other than by invoke() or ainvoke() (stream, batch, …)"
        super().__init__(graph_name)


# The replay's handler of ``invoke``/``ainvoke`` on a graph, in the context of a replayed run only.
_NESTED_INVOKE: contextvars.ContextVar[Any] = contextvars.ContextVar("replaytest_nested_invoke", default=None)
_PATCH_LOCK = threading.Lock()
_patched: list[tuple[str, Any]] = []
_patch_users = 0


class nested_invokes:  # noqa: N801 - used as a context manager, like a function
    """While active, ``Pregel.invoke(graph, input, …)`` and ``ainvoke`` called in this context (a replayed
    run and what it calls) return ``handler.invoke(graph, input, config, kwargs)`` / ``await
    handler.ainvoke(…)`` instead of running the graph. Other contexts and threads are not affected: the
    methods are swapped process-wide once (reference counted) and look up the handler in a context
    variable. LangGraph starts a graph inside a running one through the same methods, so this is where
    replay answers a nested graph from its recorded run."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.token: Any = None

    def __enter__(self) -> nested_invokes:
        global _patch_users
        from langgraph.pregel import Pregel

        with _PATCH_LOCK:
            if _patch_users == 0:
                original_invoke, original_ainvoke = Pregel.invoke, Pregel.ainvoke

                def invoke(graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
                    handler = _NESTED_INVOKE.get()
                    if handler is None:
                        return original_invoke(graph, input, config, **kwargs)
                    return handler.invoke(graph, input, config, kwargs)

                async def ainvoke(graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
                    handler = _NESTED_INVOKE.get()
                    if handler is None:
                        return await original_ainvoke(graph, input, config, **kwargs)
                    return await handler.ainvoke(graph, input, config, kwargs)

                _patched[:] = [("invoke", original_invoke), ("ainvoke", original_ainvoke)]
                Pregel.invoke = invoke  # type: ignore[method-assign,assignment]
                Pregel.ainvoke = ainvoke  # type: ignore[method-assign,assignment]
            _patch_users += 1
        self.token = _NESTED_INVOKE.set(self.handler)
        return self

    def __exit__(self, *exc: object) -> None:
        global _patch_users
        from langgraph.pregel import Pregel

        _NESTED_INVOKE.reset(self.token)
        with _PATCH_LOCK:
            _patch_users -= 1
            if _patch_users == 0:
                for name, original in _patched:
                    setattr(Pregel, name, original)
                _patched.clear()


def _nested_graph_stop() -> Any:
    """A callback handler that raises ``NestedGraphRun`` when a graph starts inside the replayed run.

    A graph invoked from the entrypoint's code would run its own loop, its own task calls and their
    bodies (LangGraph dispatches them through the nested graph's config, not the replayed one); every
    graph announces its start to the inherited callbacks first, before it reads a checkpoint or runs a node."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langgraph.pregel import Pregel

    class StopNestedGraphs(BaseCallbackHandler):
        raise_error = True
        run_inline = True  # called where the graph starts, also under an async callback manager

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            frame = sys._getframe(1)
            while frame is not None:
                graph = frame.f_locals.get("self")
                if isinstance(graph, Pregel):
                    node = entrypoint_node(graph)
                    raise NestedGraphRun(node[0] if node is not None else graph.get_name())
                frame = frame.f_back  # type: ignore[assignment]

    return StopNestedGraphs()


class StoreRead(BaseException):
    """Replayed code read LangGraph's store (``get``, ``search``, ``list_namespaces``; ``operation`` says which):
    no checkpoint keeps what a store held, so replay has no value to give it. A ``BaseException``, like
    ``NestedGraphRun``, so that code catching ``Exception`` does not swallow it."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(operation)


_STORE_OPERATIONS = {"GetOp": "get", "SearchOp": "search", "ListNamespacesOp": "list_namespaces"}


def replay_store() -> Any:
    """The store replayed code is given in place of the graph's own (``store=`` of ``@entrypoint`` or
    ``compile``): a ``BaseStore`` that never reaches a real one. A write (``put``, ``delete``: LangGraph's
    ``PutOp``) is discarded and counted in ``discarded``; a read raises ``StoreRead``."""
    from langgraph.store.base import BaseStore, PutOp

    class ReplayStore(BaseStore):
        def __init__(self) -> None:
            self.discarded = 0

        def batch(self, ops: Any) -> list[Any]:
            results: list[Any] = []
            for op in ops:
                if not isinstance(op, PutOp):
                    raise StoreRead(_STORE_OPERATIONS.get(type(op).__name__, type(op).__name__))
                self.discarded += 1
                results.append(None)
            return results

        async def abatch(self, ops: Any) -> list[Any]:
            return self.batch(ops)

    return ReplayStore()


def store_writes_discarded(store: Any) -> int:
    """How many writes the ``replay_store`` ``store`` discarded."""
    return int(getattr(store, "discarded", 0))


def has_store(graph: Any) -> bool:
    """The compiled graph (an ``@entrypoint`` or a ``StateGraph``) was given a store (``store=``)."""
    return getattr(graph, "store", None) is not None


def without_store(graph: Any, store: Any) -> Any:
    """A copy of the compiled graph that is given ``store`` (a ``replay_store``) instead of its own."""
    return graph.copy(update={"store": store})


def _replay_config(
    call_hook: Callable[..., Any], scratchpad: Any, entry_ns: str, previous: Any, store: Any = None
) -> dict[str, Any]:
    from langgraph._internal._constants import (
        CONFIG_KEY_CALL,
        CONFIG_KEY_CHECKPOINT_NS,
        CONFIG_KEY_RUNTIME,
        CONFIG_KEY_SCRATCHPAD,
        CONFIG_KEY_SEND,
    )
    from langgraph.runtime import Runtime

    return {
        "callbacks": [_nested_graph_stop()],
        "configurable": {
            CONFIG_KEY_CALL: call_hook,
            CONFIG_KEY_SCRATCHPAD: scratchpad,
            CONFIG_KEY_SEND: lambda writes: None,  # interrupt() reports consumed resume values here
            CONFIG_KEY_CHECKPOINT_NS: entry_ns,
            CONFIG_KEY_RUNTIME: Runtime(previous=previous, store=store if store is not None else replay_store()),
        },
    }


def run_entrypoint(
    bound: Any, value: Any, call_hook: Callable[..., Any], scratchpad: Any, entry_ns: str, previous: Any,
    store: Any = None,
) -> Any:
    """Run the entrypoint function the way LangGraph's runner does (injected ``previous``, ``config``,
    ``writer``…), with task calls dispatched to ``call_hook(func, (args, kwargs), **options)`` and
    interrupts read from ``scratchpad``. Nothing is checkpointed and no task runs; the code's store (injected
    ``store``, ``get_store()``) is ``store``, a ``replay_store`` (a fresh one when None)."""
    from langchain_core.runnables.config import var_child_runnable_config

    config = _replay_config(call_hook, scratchpad, entry_ns, previous, store)

    def run() -> Any:
        var_child_runnable_config.set(config)  # type: ignore[arg-type]
        return bound.invoke(value, config)

    return contextvars.copy_context().run(run)


async def arun_entrypoint(
    bound: Any, value: Any, call_hook: Callable[..., Any], scratchpad: Any, entry_ns: str, previous: Any,
    store: Any = None,
) -> Any:
    """``run_entrypoint`` for an ``async def`` entrypoint (call from the task running the replay)."""
    from langchain_core.runnables.config import var_child_runnable_config

    config = _replay_config(call_hook, scratchpad, entry_ns, previous, store)
    var_child_runnable_config.set(config)  # type: ignore[arg-type]
    return await bound.ainvoke(value, config)


def is_graph_interrupt(error: BaseException) -> bool:
    from langgraph.errors import GraphInterrupt

    return isinstance(error, GraphInterrupt)


def final_value(value: Any) -> Any:
    """What an entrypoint returned to its caller (``entrypoint.final(value=…, save=…)`` unwrapped)."""
    from langgraph.func import entrypoint

    return value.value if isinstance(value, entrypoint.final) else value


# --- the graph API (StateGraph) -------------------------------------------------------------------

# Channels of a compiled StateGraph that are LangGraph's own, not the state's.
PREGEL_TASKS = "__pregel_tasks"  # the Send packets the next super-step runs (a Topic channel)
_EDGE_CHANNEL_PREFIXES = ("branch:", "join:", "split:")
BRANCH_TO = "branch:to:"  # the channel an edge into a node writes (``branch:to:<node>``)


def is_internal_channel(name: str) -> bool:
    """A channel LangGraph keeps for its own bookkeeping (edges, Send packets, the input), not a state key."""
    return name.startswith(_EDGE_CHANNEL_PREFIXES) or (name.startswith("__") and name.endswith("__")) or name == PREGEL_TASKS


def is_edge_channel(name: str) -> bool:
    """An edge or barrier channel (``branch:to:<node>``, ``join:…``, ``split:…``): its value is a marker or a
    set of node names, never state."""
    return name.startswith(_EDGE_CHANNEL_PREFIXES)


def pull_task_id(
    checkpoint_id: str, checkpoint_version: int, step: int, node: str, triggers: tuple[str, ...], graph_ns: str = ""
) -> str:
    """The id of the task that runs ``node`` in the graph's step ``step`` from ``checkpoint_id``, triggered by
    the channels ``triggers`` (``prepare_single_task``, PULL branch); ``graph_ns``: a subgraph's checkpoint
    namespace (the root graph's is empty)."""
    node_ns = f"{graph_ns}{_NS_SEP}{node}" if graph_ns else node
    return _task_id_hash(checkpoint_id, checkpoint_version, node_ns, str(step), node, PULL, *sorted(triggers))


def send_task_id(
    checkpoint_id: str, checkpoint_version: int, step: int, node: str, packet_index: int, graph_ns: str = ""
) -> str:
    """The id of the task that runs the ``packet_index``-th ``Send`` packet (to ``node``) of the graph's step
    ``step`` from ``checkpoint_id`` (``prepare_single_task``, PUSH branch for packets)."""
    node_ns = f"{graph_ns}{_NS_SEP}{node}" if graph_ns else node
    return _task_id_hash(checkpoint_id, checkpoint_version, node_ns, str(step), node, PUSH, str(packet_index))


def parse_graph_task_path(path: str) -> tuple[str, str | int] | None:
    """``("pull", node name)`` or ``("push", index into the checkpoint's Send packets)`` for a root-graph
    task's ``writes.task_path``; None for any other path."""
    parts = [part.strip() for part in path.split(",")] if path else []
    if len(parts) == 2 and parts[0] == f"~{PULL}":
        return "pull", parts[1]
    if len(parts) >= 2 and parts[0] == f"~{PUSH}" and parts[1].isdigit():
        return "push", int(parts[1])
    return None


def compiled_graph(obj: Any) -> Any | None:
    """The compiled graph ``obj`` stands for: a ``StateGraph`` builder (compiled here, without a
    checkpointer) or a compiled graph; None for anything else, ``@entrypoint`` graphs included."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    if isinstance(obj, StateGraph):
        return obj.compile()
    if isinstance(obj, Pregel) and START in obj.nodes:
        return obj
    return None


def graph_nodes(compiled: Any) -> dict[str, Any]:
    """The graph's nodes by name (LangGraph's own ``__start__`` left out)."""
    return {name: node for name, node in compiled.nodes.items() if name != START}


def state_channel_names(compiled: Any) -> list[str]:
    """The graph's state channels (its state schema's keys and those of its nodes' input schemas)."""
    return [name for name in compiled.channels if not is_internal_channel(name)]


def node_function(node: Any) -> Any | None:
    """The function a node runs (a plain node's ``RunnableCallable``), None for a subgraph, a ``ToolNode``
    (a ``RunnableCallable`` whose function is LangGraph's own, calling the tools) or any other runnable."""
    bound = node.bound
    if is_tool_node(node):
        return None
    return getattr(bound, "func", None) or getattr(bound, "afunc", None)


def is_tool_node(node: Any) -> bool:
    """The node runs LangGraph's prebuilt ``ToolNode``: it calls tools (effects), on its executor's threads."""
    try:
        from langgraph.prebuilt import ToolNode
    except ImportError:  # langgraph-prebuilt not installed: no node can be one
        return False
    return isinstance(node.bound, ToolNode)


def tool_calls_unknown(node: Any, state: dict[str, Any]) -> list[str]:
    """For a ``ToolNode`` node: the tools the latest AI message of ``state`` (its message key, revived messages)
    asks for that the node has no tool of that name for — LangGraph answers each with an error ``ToolMessage``
    and runs no tool (``ToolNode._validate_tool_call``). Empty where the state holds no such message."""
    from langchain_core.messages import AIMessage

    messages = state.get(getattr(node.bound, "_messages_key", "messages"))
    if not isinstance(messages, list):
        return []
    latest = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if latest is None:
        return []
    known = node.bound.tools_by_name
    return [str(call["name"]) for call in latest.tool_calls if call["name"] not in known]


def tool_names(node: Any) -> list[str]:
    """The names of the tools a ``ToolNode`` node calls."""
    return list(node.bound.tools_by_name)


def node_triggers(node: Any) -> tuple[str, ...]:
    """The channels whose update runs the node (the edge channels into it)."""
    return tuple(node.triggers)


def is_subgraph_node(node: Any) -> bool:
    return bool(getattr(node, "subgraphs", None))


def node_subgraph(node: Any) -> Any | None:
    """The compiled graph a node runs as its whole body (``add_node("review", review_graph)``), None for a
    node whose function calls graphs, or several (only the first would be the one checkpointed alone)."""
    subgraphs = list(getattr(node, "subgraphs", None) or ())
    if is_graph(node.bound):
        return node.bound
    return subgraphs[0] if len(subgraphs) == 1 and is_graph(subgraphs[0]) and node_function(node) is None else None


def is_graph(obj: Any) -> bool:
    """True for a compiled graph of either API (a ``Pregel``: ``builder.compile()``, an ``@entrypoint``)."""
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def node_code(graph: Any) -> dict[str, list[Any]]:
    """What each node of a compiled graph runs, by node name (``__start__`` left out): the node's function
    (``RunnableCallable.func``, else ``afunc``; the bound runnable itself for any other runnable), the
    functions of the conditional edges leaving it (they run in the node's task), and — for a node that runs a
    subgraph or whose function calls one (``PregelNode.subgraphs``) — the same of every node of that subgraph,
    recursively (an ``@entrypoint`` subgraph: its function). Each graph is walked once."""
    seen: set[int] = set()

    def of_graph(compiled: Any) -> dict[str, list[Any]]:
        seen.add(id(compiled))
        branches = getattr(getattr(compiled, "builder", None), "branches", None) or {}
        code: dict[str, list[Any]] = {}
        for name, node in compiled.nodes.items():
            if name == START:
                continue
            objects: list[Any] = []
            bound = node.bound
            if not is_graph(bound):
                function = node_function(node)
                objects.append(function if function is not None else bound)
            for spec in (branches.get(name) or {}).values():
                path = getattr(spec, "path", None)
                function = getattr(path, "func", None) or getattr(path, "afunc", None)
                if function is not None:
                    objects.append(function)
            # A subgraph compiled with ``checkpointer=False`` is not among ``subgraphs``: the bound graph is walked too.
            for subgraph in [*(getattr(node, "subgraphs", None) or ()), bound]:
                if id(subgraph) in seen or not is_graph(subgraph):
                    continue
                for inner in of_graph(subgraph).values():
                    objects.extend(inner)
            code[name] = objects
        return code

    return of_graph(graph)


def state_schema(compiled: Any) -> Any | None:
    builder = getattr(compiled, "builder", None)
    return getattr(builder, "state_schema", None)


def node_input(compiled: Any, node_name: str, recorded: dict[str, Any]) -> Any:
    """What LangGraph hands ``node_name`` when it runs from the recorded channel values: each channel
    restored from its recorded value, then read as a PULL task reads its input (``_proc_input``)."""
    from langgraph._internal._typing import MISSING

    node = compiled.nodes[node_name]
    channels = {
        name: spec.from_checkpoint(recorded[name] if name in recorded else MISSING) for name, spec in compiled.channels.items()
    }
    value: Any
    if isinstance(node.channels, list):
        value = {name: channels[name].get() for name in node.channels if name in channels and channels[name].is_available()}
    else:
        value = channels[node.channels].get() if node.channels in channels and channels[node.channels].is_available() else None
    return node.mapper(value) if node.mapper is not None else value


def run_node(node: Any, value: Any, call_hook: Callable[..., Any], scratchpad: Any, namespace: str,
             store: Any = None) -> Any:
    """Run a node's function as LangGraph's runner would (injected ``config``, ``runtime``, ``store``,
    ``writer``…), with ``@task`` calls dispatched to ``call_hook`` and ``interrupt()`` read from ``scratchpad``.
    The node's channel writes are not applied and nothing is checkpointed; its store is ``store`` (a
    ``replay_store``)."""
    return run_entrypoint(node.bound, value, call_hook, scratchpad, namespace, None, store)


# --- the resume rehearsal (``langgraph.rehearsal``) -------------------------------------------------


class TaskStubbed(BaseException):
    """A ``@task`` whose body LangGraph was about to run during a rehearsal: raised by its stub instead. A
    ``BaseException``, so that the entrypoint's own ``except Exception`` cannot swallow it."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


def _stub(name: str, body: Any, on_call: Callable[[str], None]) -> Any:
    import functools
    import inspect

    if inspect.iscoroutinefunction(body):

        @functools.wraps(body)
        async def astub(*args: Any, **kwargs: Any) -> Any:
            on_call(name)
            raise TaskStubbed(name)

        return astub

    @functools.wraps(body)
    def stub(*args: Any, **kwargs: Any) -> Any:
        on_call(name)
        raise TaskStubbed(name)

    return stub


class stubbed_tasks:  # noqa: N801 - used as a context manager, like a function
    """While active, every ``@task`` object the namespaces (module globals) hold runs a stub instead of its
    body when LangGraph schedules it (``_TaskFunction.func`` swapped; the stub keeps the body's name, so
    LangGraph derives the same task ids and finds the results it recorded as before). The stub reports
    the task's name to ``on_call`` and raises ``TaskStubbed``. Process-wide: LangGraph runs task bodies on
    its executor's threads."""

    def __init__(self, namespaces: list[dict[str, Any]], on_call: Callable[[str], None]) -> None:
        self.namespaces = namespaces
        self.on_call = on_call
        self.swapped: list[tuple[Any, Any]] = []

    def __enter__(self) -> stubbed_tasks:
        seen: set[int] = set()
        for namespace in self.namespaces:
            for value in list(namespace.values()):
                if is_task_function(value) and id(value) not in seen:
                    seen.add(id(value))
                    body = value.func
                    self.swapped.append((value, body))
                    value.func = _stub(task_name_of(value), body, self.on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        for value, body in reversed(self.swapped):
            value.func = body
        self.swapped.clear()


def interrupt_for(value: Any, entrypoint: str, entry_id: str) -> Any:
    """The ``Interrupt`` the entrypoint's task ``entry_id`` writes when its code calls ``interrupt(value)``
    (its id derived from the task's checkpoint namespace, as ``interrupt()`` derives it)."""
    from langgraph.types import Interrupt

    return Interrupt.from_ns(value, f"{entrypoint}{_NS_END}{entry_id}")


class NodeStubbed(BaseException):
    """A graph node whose body LangGraph was about to run during a rehearsal: raised by its stub instead (a
    ``BaseException``, like ``TaskStubbed``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


def graph_with_nodes(compiled: Any, saver: Any, bodies: dict[str, Callable[[Any, Any], Any]],
                     stop_before: list[str]) -> Any:
    """A copy of the compiled graph on ``saver`` in which each node named in ``bodies`` runs
    ``bodies[name](input, config)`` instead of its own runnable (its triggers, input channels and writers —
    state writes and edges, conditional ones included — are LangGraph's as compiled; ``PregelNode.copy``), and
    which stops before running any node of ``stop_before`` (LangGraph's ``interrupt_before``). It is given a
    ``replay_store`` instead of its own store."""
    from langgraph._internal._runnable import RunnableCallable

    nodes = dict(compiled.nodes)
    for name, body in bodies.items():
        nodes[name] = nodes[name].copy(update={"bound": RunnableCallable(body, name=name, trace=False), "subgraphs": []})
    return compiled.copy(update={"checkpointer": saver, "nodes": nodes, "interrupt_before_nodes": list(stop_before),
                                 "interrupt_after_nodes": [], "store": replay_store()})


def node_routes_by_output(compiled: Any, name: str) -> bool:
    """True when where the graph goes after node ``name`` depends on what it returns: a conditional edge
    leaves it (``builder.branches``), or it declares ``Command`` destinations (``ends``)."""
    builder = getattr(compiled, "builder", None)
    branches = (getattr(builder, "branches", None) or {}).get(name)
    spec = (getattr(builder, "nodes", None) or {}).get(name)
    return bool(branches) or bool(getattr(spec, "ends", None))


def node_interrupt(value: Any, node: str, task_id: str) -> Any:
    """The ``Interrupt`` node ``node``'s task ``task_id`` writes when its code calls ``interrupt(value)`` (its id
    derived from the task's checkpoint namespace ``<node>:<task id>``, as ``interrupt()`` derives it)."""
    from langgraph.types import Interrupt

    return Interrupt.from_ns(value, f"{node}{_NS_END}{task_id}")


def checkpoint_version() -> int:
    """The checkpoint format version this langgraph's runner writes (``v``; ``langgraph.pregel._checkpoint``)."""
    from langgraph.pregel._checkpoint import LATEST_VERSION

    return int(LATEST_VERSION)


# --- per-call prompt records (``langgraph.recording``) ------------------------------------------------

# The runnable-config keys a running task's config carries (``langgraph._internal._constants``): the
# saver of the run, the task's id, its scratchpad, and the checkpoint id of each graph namespace.
_CONFIG_CHECKPOINTER = "__pregel_checkpointer"
_CONFIG_TASK_ID = "__pregel_task_id"
_CONFIG_SCRATCHPAD = "__pregel_scratchpad"
_CONFIG_CHECKPOINT_MAP = "checkpoint_map"


class RunningTask:
    """What the recorder needs of the LangGraph task whose code is running (from its runnable config)."""

    __slots__ = ("saver", "thread_id", "task_id", "namespace", "kind", "scratchpad", "checkpoint_ns", "checkpoint_id")

    def __init__(
        self, saver: Any, thread_id: Any, task_id: str, namespace: str, kind: str, scratchpad: Any,
        checkpoint_ns: str, checkpoint_id: str,
    ) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.task_id = task_id
        self.namespace = namespace  # the task's checkpoint namespace (``ep:<id>|task:<id>``)
        self.kind = kind  # "entrypoint" (re-runs on every resume), "task" (a @task call) or "node"
        self.scratchpad = scratchpad
        self.checkpoint_ns = checkpoint_ns  # the namespace and checkpoint the task's own writes go to
        self.checkpoint_id = checkpoint_id

    def write_config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns,
                                 "checkpoint_id": self.checkpoint_id}}


def running_task() -> RunningTask | None:
    """The LangGraph task (an ``@entrypoint``'s own task, a ``@task`` call or a graph node) whose code is
    running in this context, when it runs under a checkpointer; None anywhere else (replaytest's own
    replay passes no checkpointer)."""
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:  # not inside a runnable
        return None
    configurable = config.get("configurable") or {}
    saver = configurable.get(_CONFIG_CHECKPOINTER)
    task_id = configurable.get(_CONFIG_TASK_ID)
    namespace = configurable.get("checkpoint_ns")
    checkpoints = configurable.get(_CONFIG_CHECKPOINT_MAP) or {}
    if saver is None or not isinstance(task_id, str) or not isinstance(namespace, str) or not checkpoints:
        return None
    metadata = config.get("metadata") or {}
    triggers = tuple(metadata.get("langgraph_triggers") or ())
    if triggers == (PUSH,):
        kind = "task"
    elif triggers == (START,) and metadata.get("langgraph_node") != START:
        kind = "entrypoint"
    else:
        kind = "node"
    # The graph whose step runs the task (where its own writes go): the map holds that graph's namespace
    # and, for a task called by another task, the caller's, at the same checkpoint; the shallowest of
    # those the task's namespace lies in.
    around = [ns for ns in checkpoints if ns == "" or namespace == ns or namespace.startswith(ns + _NS_SEP)]
    if not around:
        return None
    current = checkpoints[max(around, key=len)]
    owner = min((ns for ns in around if checkpoints[ns] == current), key=len)
    if not isinstance(current, str):
        return None
    return RunningTask(saver, configurable.get("thread_id"), task_id, namespace, kind,
                       configurable.get(_CONFIG_SCRATCHPAD), owner, checkpoints[owner])


def namespace_tasks(namespace: str) -> list[tuple[str, str]]:
    """(name, task id) of each level of a task's checkpoint namespace, outermost first."""
    levels = []
    for part in namespace.split(_NS_SEP):
        name, _, task_id = part.rpartition(_NS_END)
        levels.append((name, task_id))
    return levels


def watch_task_calls(scratchpad: Any, on_call: Callable[[int], None]) -> bool:
    """Have ``on_call(index)`` called with the call index of each ``@task`` call the scratchpad's task
    makes from now on (in the calling context), the index LangGraph derives the call's task id from.
    The scratchpad's call counter is wrapped once; it returns the same indexes as before. False when
    this langgraph's scratchpad has no call counter to wrap."""
    counter = getattr(scratchpad, "call_counter", None)
    if counter is None:
        return False
    if getattr(counter, "__replaytest_watched__", False):
        return True

    def counted() -> int:
        index = counter()
        try:
            on_call(index)
        except Exception:  # noqa: BLE001 - a failed record never breaks the run
            pass
        return index

    counted.__replaytest_watched__ = True  # type: ignore[attr-defined]
    try:
        # The scratchpad is a frozen dataclass: set the field the way its own __init__ does.
        object.__setattr__(scratchpad, "call_counter", counted)
    except (AttributeError, TypeError):
        return False
    return True
