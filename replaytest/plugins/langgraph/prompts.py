"""Recording prompt versions in LangGraph threads: the run's prompt manifest in its checkpoint metadata.

LangGraph copies the scalar entries of ``config["metadata"]`` into the metadata of every checkpoint the
invocation writes, the input checkpoint included. ``with_prompts(config, graph)`` returns the config
with ``replaytest_prompts`` added there: the manifest (``{prompt name: version}``,
``replaytest.prompts.prompt_manifest``) as one JSON string, since LangGraph keeps only strings, numbers
and booleans. ``replaytest import langgraph`` reads it from the input checkpoint of the thread's latest
invocation as the history's ``prompt_manifest`` (both APIs); a resume with ``Command(resume=…)`` writes
to that same checkpoint, so the manifest stays the one the run started under.

What ``graph`` may be, and what is walked for prompts:

* an ``@entrypoint``: its function;
* a compiled ``StateGraph`` (``builder.compile()``, any ``Pregel``) or the ``StateGraph`` builder: every
  node's function, the functions of the conditional edges leaving it, and the nodes of the subgraphs a node
  runs or calls (``langgraph.internals.node_code``), recursively;
* functions, methods, classes, ``@task`` objects: the code itself.

A form that would record nothing is refused, never accepted silently: ``with_prompts(config)`` with no graph
and any other object (a dict, a string, a runnable of another library) raise ``TypeError``; a graph in
which no ``Prompt`` is found at all raises ``ValueError``. An empty manifest is not recorded on purpose: it
cannot be told from a walk that missed the prompts (a prompt built at run time, a template kept as a plain
string), and a thread recorded with ``{}`` would later report every prompt as one it did not know. Prompts
must be ``replaytest.prompts.Prompt`` objects reachable from the nodes' code, or declared on a node
function or the graph with ``@uses_prompts(P, …)``; a graph that uses no ``Prompt`` is started without
``with_prompts`` (replay then notes that no prompt versions were recorded).

Per-call records (threads recorded since): importing this module registers the recorder of
``replaytest.plugins.langgraph.recording``. ``Prompt.render()`` (or ``use_prompt(P)``) inside a running
``@task`` or ``StateGraph`` node, and ``use_prompt(P)`` around a task call, write the full version the call
actually used (text, model, parameters) into the thread's checkpoint writes (channel
``__replaytest_prompt__``, a task id of its own, so the run itself does not change). ``replaytest import
langgraph`` lists them on the task call's event, or on the graph node execution's step event (``prompts``;
the first also as ``Event.prompt``). What is compared:

* functional API (``langgraph.replayer``): every prompt a recorded task call used, with the current code's
  version at that call (the task body's prompts and the ``use_prompt`` blocks around the call), as on the
  journal (``--prompts fail|warn``): one ``prompt-drift`` per call, for its first changed prompt, the call's
  other changed prompts and any prompt it now uses that was added since named in the same message. The
  prompts a parked thread will still use are those of the tasks it has not recorded yet (their bodies, and
  ``use_prompt`` around their calls in the entrypoint): one whose version differs from what the thread used,
  or else started under, is pending drift (``prompts-pending``), even when an earlier task used it;
* graph API (``langgraph.graph_check``): the prompts each node execution the thread already ran used, with
  the current version, by ``--prompts``; the node(s) it resumes at (a parked node runs again from its top)
  and those not reached yet by ``prompts-pending`` against the start manifest. A node running a subgraph
  has its nodes' records in the subgraph's own checkpoints, which the import reads (every saver it reads):
  what the subgraph's finished nodes used is compared by ``--prompts``, the rest by ``prompts-pending``;
  without such records (a thread recorded before them) it is compared at the start manifest's versions,
  with a note.

Threads recorded before per-call records have only the manifest, and get a note: for a functional thread
``use_prompt(P)`` around a task call (or the task's own body naming ``P``) tells replay which recorded call
used which prompt, and the version that call used is taken from the manifest; for a graph thread the prompts
a node uses are those its code reaches (the same walk, per node), compared at the manifest's versions.
"""

from __future__ import annotations

import functools
import json
import types
from collections.abc import Mapping
from typing import Any

from replaytest.plugins.langgraph import internals as lg
from replaytest.prompts import DECLARED, prompt_manifest, use_prompt

METADATA_KEY = "replaytest_prompts"

__all__ = ["METADATA_KEY", "manifest_of", "node_prompts", "use_prompt", "with_prompts"]

_EXPECTED = (
    "pass the graph the thread runs: the compiled StateGraph (builder.compile()) or the @entrypoint, "
    "or the functions or classes whose code renders the prompts"
)


def _describe(obj: Any) -> str:
    graph = _graph(obj)
    if graph is not None:
        name = lg.entrypoint_node(graph)
        return f"@entrypoint {name[0]!r}" if name is not None else f"graph {graph.get_name()!r} ({type(graph).__name__})"
    name = getattr(obj, "__qualname__", None)
    if isinstance(name, str) and _is_code(obj):
        return f"{type(obj).__name__} {name}"
    text = repr(obj)
    return f"{type(obj).__name__} {text[:77] + '...' if len(text) > 80 else text}"


def _graph(obj: Any) -> Any | None:
    """The compiled graph ``obj`` is or stands for (a ``StateGraph`` builder is compiled), else None."""
    if lg.is_graph(obj):
        return obj
    return lg.compiled_graph(obj)


def _is_code(obj: Any) -> bool:
    """A function, method, class or an object wrapping a function (``@task``, a decorator's instance)."""
    if isinstance(obj, (types.FunctionType, types.MethodType, functools.partial, staticmethod, classmethod, type)):
        return True
    if lg.is_task_function(obj):
        return True
    attributes = getattr(obj, "__dict__", None)
    return isinstance(attributes, dict) and any(
        isinstance(attributes.get(key), (types.FunctionType, functools.partial)) for key in ("func", "__wrapped__")
    )


def _roots(workflows: tuple[Any, ...]) -> list[Any]:
    roots: list[Any] = []
    for workflow in workflows:
        graph = _graph(workflow)
        if graph is not None:
            if getattr(graph, DECLARED, None):
                roots.append(graph)  # ``@uses_prompts`` applied to the graph object itself
            if graph is not workflow and getattr(workflow, DECLARED, None):
                roots.append(workflow)  # … or to the StateGraph builder
            for objects in lg.node_code(graph).values():
                roots.extend(objects)
        elif _is_code(workflow):
            roots.append(workflow)
        else:
            raise TypeError(f"with_prompts cannot find the prompts of {_describe(workflow)}: {_EXPECTED}")
    return roots


def manifest_of(*workflows: Any) -> dict[str, str]:
    """The prompt manifest of compiled graphs (``@entrypoint`` or ``StateGraph``: their nodes' code is walked,
    subgraphs included), functions and classes. ``TypeError`` for any other object."""
    return prompt_manifest(*_roots(workflows))


def node_prompts(graph: Any) -> dict[str, dict[str, str]]:
    """``{node name: {prompt name: version}}``: the prompts each node of a compiled graph can use (its
    function, the conditional edges leaving it, the subgraphs it runs)."""
    compiled = _graph(graph)
    if compiled is None:
        raise TypeError(f"node_prompts needs a compiled graph, not {_describe(graph)}")
    return {name: prompt_manifest(*objects) for name, objects in lg.node_code(compiled).items()}


def with_prompts(config: Mapping[str, Any] | None, *workflows: Any) -> dict[str, Any]:
    """A copy of ``config`` (a LangGraph ``RunnableConfig``) whose metadata records the prompt manifest
    of ``workflows`` (the graph the thread runs): pass it to ``invoke``/``stream`` when a thread starts.

    ``TypeError`` without a workflow or for an object that is neither a graph nor code; ``ValueError``
    when no ``Prompt`` is found (see the module docstring)."""
    if not workflows:
        raise TypeError(f"with_prompts(config) was given no graph, so it would record no prompt versions: {_EXPECTED}, "
                        "e.g. with_prompts(config, graph)")
    manifest = manifest_of(*workflows)
    if not manifest:
        given = ", ".join(_describe(workflow) for workflow in workflows)
        raise ValueError(
            f"with_prompts found no Prompt in {given}, so it would record an empty prompt manifest: prompts must be "
            "replaytest.prompts.Prompt objects reachable from the nodes' code (a module global, a closure, an "
            "argument default) or declared with @uses_prompts(P, ...) on a node function or the graph; start a "
            "thread that uses no Prompt without with_prompts"
        )
    copied = dict(config or {})
    metadata = dict(copied.get("metadata") or {})
    metadata[METADATA_KEY] = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    copied["metadata"] = metadata
    return copied


# The per-call recorder: registered by importing this module (what application code using
# ``with_prompts``/``use_prompt`` from here does).
from replaytest.plugins.langgraph import recording as _recording  # noqa: E402

_recording.install()
