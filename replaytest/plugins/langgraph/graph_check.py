"""Checking a LangGraph graph history (``graph`` section, see ``langgraph.graph_import``) against the
current graph: would the recorded thread resume correctly under the new code?

LangGraph resumes a graph thread by running the nodes it waits in (``next``) again from their top, on the
recorded state read through the *current* graph's channels, and routes from there with the current
edges. So the check, in this order:

* ``graph-node-missing`` — a node the thread waits in (or is still to run) is not a node of the current
  graph: LangGraph ends the thread silently on resume (no error; the answer is dropped, nothing runs).
  A current node whose function has the recorded node's name is named as the likely rename, with its line;
  for a node running a subgraph (no function to go by), the one node new since the graph recorded at import
  time, when the missing node is the one it lost, with the line that adds it (``.add_node("name", ...)``).
* ``graph-tool-missing`` — a ``ToolNode`` (LangGraph's prebuilt) the thread waits in or is still to run has no
  tool of a name the latest AI message of the recorded state calls: LangGraph answers that call with an error
  message on resume and runs no tool.
* ``graph-channel-missing`` — a state key that holds a recorded value is not a channel of the current
  graph (renamed or removed): LangGraph drops the value silently. Of several, the first by name (never the
  history's key order, which is the saver's). A state key the current graph has and
  the graph given at import time did not is named as the likely new name, with its line in the schema.
* each parked node is re-run up to its first ``interrupt()`` with the recorded state, through the same
  no-effect machinery as functional replay (``langgraph.internals.run_node``, the runtime guards: node
  body effects are stopped, ``@task`` calls are refused since a graph history holds no results for them;
  a ``ToolNode``, whose tools are effects run on LangGraph's executor threads, is checked to exist, not re-run):
  ``graph-channel-required`` when it reads a state key of the current graph that the recorded state lacks
  (``KeyError``: LangGraph fails the same way on resume), ``interrupt-mismatch`` when it now asks another
  question (or none) than the one the reviewer answers, ``result-mismatch`` when it raises anything else.
  The node is given a replay store (``internals.replay_store``) instead of the graph's: a write is discarded
  (a note says so) and a read stops the re-run with a note, its interrupt not compared.

Prompts (``check_graph_prompts``): the prompts a node uses are those its code reaches (its function, the
conditional edges leaving it, the nodes of a subgraph it runs: ``langgraph.prompts.node_prompts``).

* A thread recorded with per-call records (``langgraph.recording``; the importer lists on each node's step the
  versions it used) is compared per node execution: a node the thread already ran (not the one it waits in)
  that used a prompt whose current version differs is ``prompt-drift`` by the prompt policy of the thread's
  status (``--prompts``; default: fails a parked or running thread, warns a completed one), at that node's
  event, naming the node, the prompt, both versions, what changed when the model or parameters did ("model
  gpt-4.1 → gpt-4o-mini") and the line of the current code using the prompt: "node 'draft' used prompt reply
  v2 (recorded when it ran); the code now has v1 (…); the parked thread keeps what that node wrote and resumes
  at node 'confirm'". A node running a subgraph is compared at what its subgraph's nodes recorded (the import
  reads them from the subgraph's own checkpoints), also while the thread is parked inside the subgraph: its
  finished subgraph nodes keep their results ("(in its subgraph's node 'triage', recorded when it ran)"), the
  rest is pending. Without such records its prompts are taken at the start manifest's versions, with a note.
* A thread recorded before per-call records, with a manifest (``with_prompts(config, graph)``), gets the note
  ``NO_NODE_PROMPTS_NOTE`` and ``engine.check_manifest_prompts``: a changed prompt of a node the thread already
  ran (and does not wait in) is a ``prompt-drift`` warning worded from the manifest.
* Either way, a changed prompt of the node(s) the thread resumes at — a parked node runs again from its top — or
  of a node it has not reached is ``prompt-drift`` by ``prompts-pending``, against the start manifest ("the parked
  thread resumes at node 'draft', which uses prompt reply: started under v1, code now has v2"); a history
  without a manifest gets a note that prompt drift (or, with per-call records, the prompts not reached yet) was
  not checked. A node running a subgraph counts every prompt of the subgraph's nodes (its own checkpoints, which
  say where inside it the thread waits, are not read).

Later edges and nodes are not compared (LangGraph runs them from the current code, which is correct). A
thread that is not parked is checked for what applies, and the result's notes say what was and was not
checked. A parked node running a subgraph is checked inside the subgraph when the import read the subgraph's
own history (``subgraph`` on the pending interrupt, ``langgraph.nested``): the same checks against the current
subgraph, reported at the thread's pending interrupt; otherwise it is checked for existence only, with a note.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replaytest.history import Event, History
from replaytest.model_clients import model_call_site
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.nested import SUBGRAPH_FIELD
from replaytest.plugins.langgraph.replayer import project_caller, project_raise_site, same_as_recorded
from replaytest.plugins.langgraph.values import normal_form, revive
from replaytest.prompts import (
    Prompt,
    describe_changes,
    describe_version_change,
    fetched_ahead_note,
    fetched_prompt_site,
    model_or_params_changed,
    prompt_objects,
    renamed_prompts,
    short_version,
)
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import CommandView, Divergence, ReplayResult, SourcePosition, short_value
from replaytest.replay.engine import (
    check_manifest_prompts,
    check_pending_prompts,
    note_unrecorded_model_calls,
    uncompared_prompt_note,
)
from replaytest.replay.guards import (
    NondeterministicCall,
    guarded,
    hazard_message,
    orchestration_modules,
    plain_functions,
    settle_hazards,
)

LATER_NODES_NOTE = (
    "later edges and nodes are not compared: LangGraph runs them from the current code on resume"
)
GRAPH_STORE_NOTE = ("the graph has a store (compile(store=...)): what it holds is in no checkpoint, so store values "
                    "were not compared")
AFTER_INTERRUPT_NOTE = "a parked node's code after its interrupt() was not run (the answer is not known yet)"
_INSTEAD = "a @task called from the node (its result is checkpointed), or do it after the interrupt()"
NO_NODE_PROMPTS_NOTE = (
    "no per-call prompt versions recorded (thread recorded before replaytest recorded them per node): the "
    "versions its nodes used are taken from the start manifest"
)
_VERSION_GUARD = "LangGraph has no version guard: stamp a version into the state and branch on it for threads that carry it"


class _TaskRefused(BaseException):
    """A parked node called a ``@task`` before its interrupt: a graph history holds no task results."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


def is_graph_history(history: History) -> bool:
    return history.graph is not None and history.graph.get("api") == "graph"


def _graphs(workflows: WorkflowSet) -> Iterator[Any]:
    for obj in workflows.objects:
        candidates = list(vars(obj).values()) if isinstance(obj, type(sys)) else obj if isinstance(obj, (list, tuple)) else [obj]
        seen: list[int] = []
        for candidate in candidates:
            compiled = lg.compiled_graph(candidate)
            if compiled is not None and id(compiled) not in seen:
                seen.append(id(compiled))
                yield compiled


def current_graphs(history: History, workflows: WorkflowSet) -> list[Any]:
    """The current compiled graph(s) a graph history is checked against: those named as its type, else all."""
    graphs = list(_graphs(workflows))
    named = [graph for graph in graphs if graph.get_name() == history.workflow.type]
    return named if named else graphs


def check_graph_history(history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path) -> ReplayResult:
    """The verdict for one graph history (see the module docstring)."""
    result = ReplayResult(path, "langgraph", history.workflow.type, history.workflow.id, events=len(history.events))
    chosen = current_graphs(history, workflows)
    if len(chosen) != 1:
        result.status = "stale"
        result.error = (
            f"{'no' if not chosen else len(chosen)} current graph(s) to check graph {history.workflow.type!r} against; "
            "give the one StateGraph or compiled graph with --workflows (or [tool.replaytest.replay] workflows)"
        )
        return result
    check = _Check(history, chosen[0])
    divergence = check.run()
    divergence = settle_hazards(result, divergence, check.trips, check.hazard, options.hazards)
    result.notes.extend(check.notes)
    if divergence is not None:
        result.status = "diverged"
        result.divergence = divergence
    check_graph_prompts(result, history, chosen[0], options)
    return result


def has_node_prompts(history: History) -> bool:
    """True when the graph thread was recorded with per-call prompt records (``langgraph.recording``): the
    importer then lists, on every node's step, the prompts it used (``prompts``, maybe empty)."""
    return any(event.kind == "step" and "prompts" in event.extra for event in history.events)


def check_graph_prompts(result: ReplayResult, history: History, compiled: Any, options: ReplayOptions) -> None:
    """Prompt drift of a graph thread (see the module docstring): with per-call records, the version each
    node execution used compared with the current code's (``_check_node_calls``); without them,
    ``engine.check_manifest_prompts`` with the prompts of the nodes the thread already ran as the called ones.
    Either way the drift it has not reached yet is worded by where the thread resumes."""
    from replaytest.plugins.langgraph.prompts import manifest_of, node_prompts

    graph = history.graph or {}
    per_node = node_prompts(compiled)
    current = manifest_of(compiled)
    waiting = [str(name) for name in graph.get("next", [])]
    if history.status in ("parked", "running"):
        # The nodes it resumes at (a parked node runs again from its top) and those it has not run yet.
        seen = {str(name) for name in graph.get("nodes_seen", [])}
        code = lg.node_code(compiled)
        for node in [*waiting, *(name for name in code if name not in seen and name not in waiting)]:
            site = next(filter(None, (fetched_prompt_site(obj) for obj in code.get(node, ()))), None)
            if site is not None:
                result.notes.append(fetched_ahead_note(f"node {node!r}", site, history.status))
    if has_node_prompts(history):
        _check_node_calls(result, history, compiled, options, waiting, per_node, current)
        return
    if history.prompt_manifest is not None:
        result.notes.append(NO_NODE_PROMPTS_NOTE)
    upcoming = {prompt for name in waiting for prompt in per_node.get(name, {})}
    called: dict[str, str] = {}
    for name in (str(name) for name in graph.get("nodes_seen", [])):
        if name in waiting:
            continue  # it runs again from its top when the thread resumes
        for prompt in sorted(per_node.get(name, {})):
            if prompt not in upcoming:
                called.setdefault(prompt, f"node {name!r}")
    message, position = _pending_prompts(history, compiled, waiting, per_node, current, called)
    check_manifest_prompts(
        result, "LangGraph", history.status, history.prompt_manifest, current, called, options, position,
        pending_message=message,
    )


def _check_node_calls(
    result: ReplayResult, history: History, compiled: Any, options: ReplayOptions, waiting: list[str],
    per_node: dict[str, dict[str, str]], current: dict[str, str],
) -> None:
    """The prompt checks of a graph thread with per-call records. Each node execution the thread keeps (not
    the parked ones: a parked node runs again from its top on resume) is compared at the versions it recorded
    with the current code's: a difference is ``prompt-drift`` by the prompt policy of the thread's status
    (``--prompts``: a failure, a warning or nothing), at the node's event, naming the node, the prompt, both
    versions (and the model or parameters that changed) and the line of the current code using the prompt.
    A node running a subgraph records nothing in the thread's own checkpoints: its prompts are taken at the
    start manifest's versions, with a note. The prompts no kept execution used go to ``prompts-pending``,
    worded by where the thread resumes, as for a thread without records."""
    status = history.status
    policy = options.prompt_policy(status)
    nodes = lg.graph_nodes(compiled)
    last_step = max((int(e.extra.get("super_step", 0)) for e in history.events if e.kind == "step"), default=0)
    reached: dict[str, str] = {}
    found: list[Divergence] = []
    from_manifest: dict[str, str] = {}  # prompt -> the subgraph node whose use was taken from the manifest
    code = lg.node_code(compiled)
    unprompted_nodes: dict[str, Any] = {}  # node -> where its code calls a model, for a run that recorded no prompt
    renamed = set(renamed_prompts(history.prompt_manifest or {}, current).values())
    added_at: set[str] = set()  # prompts added since the thread started that a kept node execution renders now
    for event in history.events:
        if event.kind != "step" or "prompts" not in event.extra:
            continue
        node = event.name
        uses = [used for used in event.extra.get("prompts") or () if isinstance(used, dict)
                and isinstance(used.get("name"), str) and isinstance(used.get("version"), str)]
        if node in waiting and int(event.extra.get("super_step", 0)) == last_step:
            # Parked (or still to finish): it runs again from its top when the thread resumes — but a subgraph
            # resumes from its own checkpoint, so what its finished nodes used (the import kept only theirs) stays.
            uses = [used for used in uses if used.get("subgraph_node")]
            if not uses:
                continue
        if not uses and node in nodes and lg.is_subgraph_node(nodes[node]) and history.prompt_manifest is not None:
            for prompt in sorted(per_node.get(node, {})):
                if prompt in history.prompt_manifest:
                    uses.append({"name": prompt, "version": history.prompt_manifest[prompt]})
                    from_manifest.setdefault(prompt, node)
        if not uses and node in nodes and not lg.is_subgraph_node(nodes[node]) and node not in unprompted_nodes:
            site = next(filter(None, (model_call_site(obj, extra_calls=options.model_calls) for obj in code.get(node, ()))), None)
            if site is not None:
                unprompted_nodes[node] = site
        manifest = history.prompt_manifest
        used_names = {str(used["name"]) for used in uses}
        if manifest is not None and node in nodes and not lg.is_subgraph_node(nodes[node]) and policy != "ignore":
            # A prompt added since the thread started that this node's code renders now: its recorded execution
            # could not have used it (as LangGraph's functional API and DBOS report a task or step that does).
            for name, version in sorted(per_node.get(node, {}).items()):
                if name not in used_names and name not in manifest and version not in manifest.values():
                    found.append(_node_added(history, event, node, name, version, waiting, per_node))
                    added_at.add(name)
        for used in uses:
            name, old = used["name"], used["version"]
            reached[name] = old
            new = per_node.get(node, {}).get(name, current.get(name))
            if new is None and old not in per_node.get(node, {}).values() and name not in renamed:
                # Not renamed (same version, new name): fetched at run time, or no longer rendered by this node.
                fetched = next(filter(None, (fetched_prompt_site(obj) for obj in code.get(node, ()))), None)
                what = f"node {node!r}" + (f" (its subgraph's node {used['subgraph_node']!r})"
                                           if isinstance(used.get("subgraph_node"), str) else "")
                note = uncompared_prompt_note(what, "node", name, old, fetched)
                if note not in result.notes:
                    result.notes.append(note)
            if new is None or new == old or policy == "ignore":
                continue
            found.append(_node_drift(history, compiled, event, node, used, new, waiting, per_node, current,
                                     manifest=name in from_manifest and from_manifest[name] == node))
    note_unrecorded_model_calls(result, [(f"node {node!r}", site) for node, site in unprompted_nodes.items()])
    for prompt, node in sorted(from_manifest.items()):
        result.notes.append(
            f"node {node!r} runs a subgraph, and no prompt record of its nodes was found in the subgraph's own checkpoints "
            "(recorded before per-call records, or read from a thread source that does not read subgraph checkpoints): "
            f"its prompt {prompt} was taken at the start manifest's version"
        )
    for index, drift in enumerate(found):
        if policy == "fail" and index == 0 and result.divergence is None:
            result.status = "diverged"
            result.divergence = drift
        else:
            result.warnings.append(replace(drift, severity="warning"))
    # Of those, the ones no node the thread has not run (or waits in) renders: it will not use them (unless a
    # loop runs a node again, which the drift at the node already says), so they are no pending prompt.
    ran = {event.name for event in history.events if event.kind == "step" and "prompts" in event.extra}
    later = {name for node, prompts in per_node.items() if node not in ran or node in waiting for name in prompts}
    done_only = added_at - later
    skipped: dict[str, str | None] = {**reached, **{name: None for name in done_only}}
    message, position = _pending_prompts(history, compiled, waiting, per_node, current, skipped)  # type: ignore[arg-type]
    before = len(result.prompt_changes)
    check_pending_prompts(
        result, status, history.prompt_manifest, current, skipped, options, position, compared="call",
        pending_message=message,
    )
    result.prompt_changes[before:] = [c for c in result.prompt_changes[before:] if c.name not in done_only]
    if from_manifest:
        result.prompt_changes[:] = [
            replace(change, compared="manifest") if change.name in from_manifest else change for change in result.prompt_changes
        ]


def _node_drift(
    history: History, compiled: Any, event: Event, node: str, used: dict[str, Any], new: str, waiting: list[str],
    per_node: dict[str, dict[str, str]], current: dict[str, str], *, manifest: bool,
) -> Divergence:
    """The ``prompt-drift`` of one node execution that used prompt ``used`` at another version than ``new``."""
    name, old = used["name"], used["version"]
    change = ""
    if model_or_params_changed(old, new):
        params = used.get("params") if isinstance(used.get("params"), dict) else None
        prompt = _current_prompt(compiled, node, name, new)
        change = f" ({describe_version_change(old, new, params, prompt.params if prompt is not None else None)})"
    how = "at the start manifest's version" if manifest else "recorded when it ran"
    status = history.status
    inner = used.get("subgraph_node")
    keeps = f"the {status} thread keeps what that node wrote"
    if isinstance(inner, str):
        how = f"in its subgraph's node {inner!r}, recorded when it ran"
        keeps = f"the {status} thread keeps what that subgraph node wrote"
    if status in ("parked", "running"):
        at = ", ".join(repr(node_name) for node_name in waiting)
        keeps += f" and resumes at node{'s' if len(waiting) > 1 else ''} {at}" if waiting else ""
    message = (
        f"node {node!r} used prompt {name} {short_version(old)} ({how}); the code now has {short_version(new)}"
        f"{change}; {keeps}"
    )
    source = _site(per_node.get(node, {}), name) or _site(current, name)
    detail = {"source": f"{Path(source.path).name}:{source.line}"} if source is not None else {}
    return Divergence(
        "prompt-drift", event.seq, message,
        recorded=CommandView("node", node, event.seq, prompt_version=old, detail={"prompt": name}),
        issued=CommandView("node", node, prompt_version=new, detail={**detail, "prompt": name}),
        source=source,
    )


def _node_added(
    history: History, event: Event, node: str, name: str, version: str, waiting: list[str], per_node: dict[str, dict[str, str]],
) -> Divergence:
    """The ``prompt-drift`` of a kept node execution whose node now renders prompt ``name``, added since the
    thread started: the recorded execution did not use it."""
    keeps = f"the {history.status} thread keeps what that node wrote"
    if history.status in ("parked", "running") and waiting:
        keeps += f" and resumes at node{'s' if len(waiting) > 1 else ''} " + ", ".join(repr(n) for n in waiting)
    message = (f"node {node!r} now also uses prompt {name} {short_version(version)}, which its recorded execution "
               f"did not use; {keeps}")
    source = _site(per_node.get(node, {}), name)
    return Divergence(
        "prompt-drift", event.seq, message,
        recorded=CommandView("node", node, event.seq),
        issued=CommandView("node", node, prompt_version=version, detail={"prompt": name}),
        source=source,
    )


def _site(manifest: dict[str, str], name: str) -> SourcePosition | None:
    """Where the code walked for ``manifest`` uses prompt ``name`` (``PromptManifest.sites``)."""
    site = (getattr(manifest, "sites", None) or {}).get(name)
    return SourcePosition(site[0], site[1], site[2]) if site is not None else None


def _current_prompt(compiled: Any, node: str | None, name: str, version: str) -> Prompt | None:
    """The current ``Prompt`` object named ``name`` at ``version`` that node ``node``'s code reaches (any
    node's for None), found by the manifest walk (globals, module attributes, helpers, closures), for the
    parameters a drift message names."""
    code = lg.node_code(compiled)
    for obj in code.get(node, ()) if node is not None else [obj for objs in code.values() for obj in objs]:
        prompt = prompt_objects(obj).get(name)
        if prompt is not None and prompt.full_version == version:
            return prompt
    return None


def _pending_prompts(
    history: History, compiled: Any, waiting: list[str], per_node: dict[str, dict[str, str]], current: dict[str, str],
    called: dict[str, str],
) -> tuple[str | None, int | None]:
    """The message for the changed prompts the thread has not used yet (None when there are none): first those
    of the node(s) it resumes at, then those later nodes may use; and the position of the first such node's
    pending interrupt."""
    recorded = history.prompt_manifest
    if recorded is None or history.status not in ("running", "parked"):
        return None, None
    changed = {name: recorded.get(name) for name, version in current.items()
               if name not in called and recorded.get(name) != version}
    if not changed:
        return None, None
    nodes = lg.graph_nodes(compiled)
    pending = {str(e.extra.get("node")): e.seq for e in history.events if e.kind == "signal" and e.extra.get("pending")}
    parts: list[str] = []
    at_next: set[str] = set()
    position: int | None = None
    for name in waiting:
        uses = [prompt for prompt in sorted(per_node.get(name, {})) if prompt in changed]
        if not uses:
            continue
        at_next.update(uses)
        if position is None:
            position = pending.get(name)
        subgraph = " (a subgraph: the prompts of all its nodes)" if name in nodes and lg.is_subgraph_node(nodes[name]) else ""
        versions = "; ".join(
            f"{prompt}: {_versions(changed[prompt], current[prompt], _current_prompt(compiled, name, prompt, current[prompt]))}"
            for prompt in uses
        )
        parts.append(f"node {name!r}{subgraph}, which uses prompt{'s' if len(uses) > 1 else ''} {versions}")
    # The start manifest keeps the parameters' digest only: the current prompts name the new values.
    params = {name: (None, prompt.params) for name in changed
              if (prompt := _current_prompt(compiled, None, name, current[name])) is not None}
    later = describe_changes(recorded, current, [*called, *at_next], params=params)
    thread = f"the {history.status} thread"
    if not parts:
        return f"{thread} has not reached these prompts yet: " + "; ".join(later), None
    message = f"{thread} resumes at " + "; and at ".join(parts)
    if later:
        message += "; nodes after it may use prompts it has not reached yet: " + "; ".join(later)
    return message, position


def _versions(started: str | None, now: str, prompt: Prompt | None = None) -> str:
    """``started under v1, code now has v2``, with what changed when the model or the parameters did (the
    start manifest keeps the parameters' digest only: ``prompt`` — the current one — names them)."""
    before = f"started under {short_version(started)}" if started is not None else "new since the thread started"
    change = ""
    if started is not None and model_or_params_changed(started, now):
        change = f" ({describe_version_change(started, now, None, prompt.params if prompt is not None else None)})"
    return f"{before}, code now has {short_version(now)}{change}"


class _Check:
    def __init__(self, history: History, compiled: Any) -> None:
        self.history = history
        self.compiled = compiled
        self.graph: dict[str, Any] = dict(history.graph or {})
        self.nodes = lg.graph_nodes(compiled)
        self.channels = lg.state_channel_names(compiled)
        self.state = history.input if isinstance(history.input, dict) else {}
        self.pending = [e for e in history.events if e.kind == "signal" and e.name == "interrupt" and e.extra.get("pending")]
        self.notes: list[str] = []
        self.trips: list[NondeterministicCall] = []
        self.interrupt_source: SourcePosition | None = None
        self.compared = 0  # parked nodes re-run to their interrupt and compared
        self.interrupts = 0
        self.asked: list[Any] = []
        self.prefixes: tuple[str, ...] = ()
        self.subgraph_of: str | None = None  # checking the subgraph this node of the thread's graph runs

    # --- the checks ---

    def run(self) -> Divergence | None:
        found = self._missing_nodes() or self._missing_channels() or self._missing_tools()
        if found is not None:
            return found
        status = self.history.status
        unstored = [str(name) for name in self.graph.get("unstored_channels", [])]
        if status == "parked" and unstored:
            # The re-run would read a state without those keys: a false KeyError or changed interrupt value.
            self.notes.append(
                f"state key(s) {', '.join(unstored)} hold values no checkpoint stores (a DeltaChannel, which LangGraph "
                "rebuilds from earlier writes on resume, or an untracked value): they were checked to be channels of the "
                "current graph; the parked node was not re-run and its interrupt was not compared"
            )
        elif status == "parked":
            for event in self.pending:
                found = self._rerun(event)
                if found is not None:
                    return found
            if self.compared:
                self.notes.append(AFTER_INTERRUPT_NOTE)
        elif status == "completed":
            self.notes.append(
                "completed thread: its state channels were checked against the current graph; no node waits, so none was re-run"
            )
        else:
            self.notes.append(
                f"{status} thread: the nodes still to run ({', '.join(self.graph.get('next', [])) or 'none'}) were checked to "
                "exist and the state channels against the current graph; no node was re-run (it would run for real)"
            )
        self.notes.append(LATER_NODES_NOTE)
        if lg.has_store(self.compiled):
            self.notes.append(GRAPH_STORE_NOTE)
        return None

    def _missing_nodes(self) -> Divergence | None:
        waiting = [str(name) for name in self.graph.get("next", [])]
        for name in waiting:
            if name in self.nodes:
                continue
            event = next((e for e in self.pending if e.extra.get("node") == name), None)
            renamed = self._node_named_like(name)
            hint = f"; node {renamed[0]!r} now runs its function {name}() — renamed?" if renamed else ""
            left = None if renamed else self._function_left(name)
            if left is not None:
                hint = f"; its function {name}() is still defined but no longer added to the graph"
            elif renamed is None:
                renamed = self._subgraph_node_renamed_from(name)
                if renamed is not None:
                    hint = (f"; node {renamed[0]!r}, which runs a subgraph, is the one node new since the graph given at import "
                            "time — renamed?")
            outcome = (
                "on resume LangGraph ends the thread silently: the reviewer's answer is dropped and nothing more runs"
                if event is not None else "on resume LangGraph skips it silently"
            )
            waits = "the thread waits"
            if self.subgraph_of is not None:  # a subgraph's run ends, and the graph around it goes on
                waits = "the subgraph waits"
                outcome = outcome.replace("ends the thread silently", "ends the subgraph's run silently").replace(
                    "nothing more runs", f"nothing more of the subgraph runs; the graph goes on past node {self.subgraph_of!r}")
            return Divergence(
                "graph-node-missing", event.seq if event else None,
                f"{waits} in node {name!r}, which the current graph no longer has (its nodes: "
                f"{', '.join(self.nodes)}){hint}; {outcome}",
                recorded=CommandView("node", name, event.seq if event else None),
                issued=CommandView("node", renamed[0]) if renamed else None,
                source=renamed[1] if renamed else left,
            )
        return None

    def _missing_tools(self) -> Divergence | None:
        """A ``ToolNode`` the thread waits in or is still to run, whose pending tool call names no tool it has."""
        for name in [str(name) for name in self.graph.get("next", [])]:
            node = self.nodes.get(name)
            if node is None or not lg.is_tool_node(node):
                continue
            unknown = lg.tool_calls_unknown(node, {key: revive(value) for key, value in self.state.items()})
            if not unknown:
                continue
            event = next((e for e in self.pending if e.extra.get("node") == name), None)
            dropped = ": the reviewer's answer is dropped" if event is not None else ""
            outcome = f"on resume LangGraph answers the call with an error message instead of running a tool{dropped}, and the graph goes on"
            return Divergence(
                "graph-tool-missing", event.seq if event else None,
                f"the thread {'waits in' if event is not None else 'is still to run'} node {name!r} (a ToolNode), whose "
                f"pending call names tool {unknown[0]!r}, which the node no longer has (its tools: "
                f"{', '.join(lg.tool_names(node)) or 'none'}); {outcome}",
                recorded=CommandView("tool", unknown[0], event.seq if event else None),
                source=added_at(name, list(self.nodes.values())),
            )
        return None

    def _function_left(self, name: str) -> SourcePosition | None:
        """Where a function named like the missing node is still defined, in the modules of the graph's nodes."""
        functions = [f for f in (lg.node_function(node) for node in self.nodes.values()) if f is not None]
        for module_name in dict.fromkeys(getattr(f, "__module__", None) for f in functions):
            candidate = vars(sys.modules[module_name]).get(name) if module_name in sys.modules else None
            if inspect.isfunction(candidate):
                return definition_of(candidate)
        return None

    def _subgraph_node_renamed_from(self, name: str) -> tuple[str, SourcePosition | None] | None:
        """A node running a subgraph has no function whose name could tell a rename. When ``name`` is the one node
        of the graph recorded at import time that the current graph lacks, and the one node the current graph adds
        runs a subgraph: that node, and where it is added to the graph."""
        recorded_nodes = (self.graph.get("recorded_code") or {}).get("nodes") or []
        gone = [node for node in recorded_nodes if node not in self.nodes]
        new = [node for node in self.nodes if node not in recorded_nodes]
        if gone != [name] or len(new) != 1 or not lg.is_subgraph_node(self.nodes[new[0]]):
            return None
        subgraphs = getattr(self.nodes[new[0]], "subgraphs", None) or []
        inner = [node for graph in subgraphs for node in lg.graph_nodes(graph).values()]
        return new[0], added_at(new[0], [*self.nodes.values(), *inner])

    def _node_named_like(self, name: str) -> tuple[str, SourcePosition | None] | None:
        for current, node in self.nodes.items():
            function = lg.node_function(node)
            if function is not None and getattr(function, "__name__", None) == name:
                return current, definition_of(function)
        return None

    def _missing_channels(self) -> Divergence | None:
        recorded_code = self.graph.get("recorded_code") or {}
        unstored = [str(name) for name in self.graph.get("unstored_channels", [])]
        recorded_keys = {**dict(self.graph.get("channels", {})), **{name: "not stored in the checkpoints" for name in unstored}}
        # By name, not in the history's key order: that is the store's (Postgres JSONB reorders keys), and the
        # same thread must get the same verdict from every saver.
        for name, value_shape in sorted(recorded_keys.items()):
            if name in self.channels:
                continue
            # Only the graph recorded at import time tells which current key is new.
            new = [c for c in self.channels
                   if c not in recorded_code.get("channels", ()) and c not in self.state and c not in unstored]
            new = new if recorded_code and len(new) == 1 else []
            source = _schema_line(lg.state_schema(self.compiled), new[0] if new else None)
            hint = f"; the current graph's new state key {new[0]!r} looks like its new name (renamed?)" if new else ""
            return Divergence(
                "graph-channel-missing", None,
                f"state key {name!r} holds a recorded value ({value_shape}) but is not a channel of the current graph"
                f"{hint}; on resume LangGraph drops the value silently and nodes reading the key get nothing",
                recorded=CommandView("channel", name),
                issued=CommandView("channel", new[0]) if new else None,
                source=source,
            )
        return None

    def _rerun(self, event: Event) -> Divergence | None:
        name = str(event.extra.get("node"))
        node = self.nodes[name]
        if lg.is_subgraph_node(node):
            subgraph = lg.node_subgraph(node)
            if subgraph is not None and isinstance(event.extra.get(SUBGRAPH_FIELD), dict):
                return self._check_subgraph(name, event, subgraph)
            self.notes.append(
                f"node {name!r} runs a subgraph: it was checked to exist; the subgraph's own nodes and interrupt were not "
                "re-run (the history holds no history of the subgraph: a subgraph's checkpoints are read from SQLite and "
                "Postgres databases, for a node whose whole body is one compiled graph)"
            )
            return None
        if lg.is_tool_node(node):
            self.notes.append(f"node {name!r} runs LangGraph's ToolNode, whose tools are effects: it was checked to exist, "
                              "not re-run (an interrupt() inside a tool was not compared)")
            return None
        function = lg.node_function(node)
        if function is None or inspect.iscoroutinefunction(function):
            self.notes.append(f"node {name!r} is not a plain function node: it was checked to exist, not re-run")
            return None
        state = {key: revive(value) for key, value in self.state.items()}
        if "node_input" in event.extra:
            value: Any = revive(event.extra["node_input"])
        else:
            try:
                value = lg.node_input(self.compiled, name, state)
            except Exception as error:  # the current state schema refuses the recorded state
                return Divergence(
                    "graph-channel-required", event.seq,
                    f"node {name!r}'s input cannot be made from the recorded state: {type(error).__name__}: {error}",
                    recorded=CommandView("node", name, event.seq), source=definition_of(lg.state_schema(self.compiled)),
                )
        modules = orchestration_modules([function])
        bodies = plain_functions(lg.task_bodies([module.__dict__ for module in modules]))
        self.interrupts, self.asked = 0, []
        prefixes = tuple(sorted({str(Path(m.__file__).parent) for m in modules if m.__file__}))
        self.prefixes = prefixes
        scratchpad = lg.Scratchpad.build(self._on_interrupt, [])
        outcome: BaseException | None = None
        store = lg.replay_store()
        with guarded(modules, lambda: event.seq, bodies) as guard:
            try:
                lg.run_node(node, value, self._refuse_task, scratchpad, f"{name}:{event.extra.get('task_id', '')}", store)
            except _TaskRefused as refused:
                self.notes.append(
                    f"node {name!r} calls @task {refused.name!r} before its interrupt(): a graph history holds no task "
                    "results, so the re-run stopped there and its interrupt was not compared"
                )
                return None
            except lg.NestedGraphRun as nested:
                self.notes.append(f"node {name!r} starts graph {nested.graph_name!r} before its interrupt(): stopped there; its "
                                  "interrupt was not compared")
                return None
            except lg.StoreRead as read:
                self.notes.append(f"node {name!r} reads LangGraph's store ({read.operation}) before its interrupt(): no "
                                  "checkpoint keeps store values, so the re-run stopped there and its interrupt was not compared")
                return None
            except NondeterministicCall:
                pass  # a stopped effect: on the guard's trips
            except BaseException as error:  # noqa: BLE001 - the node's own failure is the finding
                outcome = error
            finally:
                if lg.store_writes_discarded(store):
                    self.notes.append(f"node {name!r} wrote to LangGraph's store before its interrupt(): the re-run "
                                      "discarded the write (replay never writes to a store); store values were not compared")
        self.trips.extend(guard.trips)
        if any(trip.stopped for trip in guard.trips):
            return None
        if outcome is not None and lg.is_graph_interrupt(outcome):
            self.compared += 1
            return self._compare(event, name)
        if isinstance(outcome, KeyError) and outcome.args and outcome.args[0] in self.channels and outcome.args[0] not in self.state:
            key = outcome.args[0]
            return Divergence(
                "graph-channel-required", event.seq,
                f"node {name!r}, where the thread waits, now reads state key {key!r} before its interrupt(), which the "
                f"recorded state lacks (no default): on resume LangGraph fails with KeyError: {key!r}",
                recorded=CommandView("node", name, event.seq), issued=CommandView("channel", key),
                source=project_raise_site(outcome, prefixes),
            )
        if outcome is not None:
            return Divergence(
                "result-mismatch", event.seq,
                f"node {name!r}, where the thread waits, now fails before its interrupt() with "
                f"{type(outcome).__name__}: {outcome}; on resume LangGraph fails the same way",
                recorded=CommandView("node", name, event.seq), source=project_raise_site(outcome, prefixes),
            )
        return Divergence(
            "interrupt-mismatch", event.seq,
            f"node {name!r}, where the thread waits, now returns without calling interrupt(): on resume it runs to its "
            "end and the reviewer's answer is never read",
            recorded=CommandView("signal", "interrupt", event.seq), source=definition_of(function),
        )

    def _check_subgraph(self, name: str, event: Event, subgraph: Any) -> Divergence | None:
        """The parked node runs a subgraph whose own history the import read (``langgraph.nested``): LangGraph
        resumes the node by resuming the subgraph from its checkpoints, so the subgraph's history is checked
        against the current subgraph as a thread's is (its parked node re-run, its state keys and nodes
        compared), and what it finds is reported at this node's interrupt."""
        from replaytest.history import history_from_dict

        prefix = f"$.events[{event.seq - 1}].{SUBGRAPH_FIELD}"
        document = {
            "format": "replaytest-history", "format_version": 1, **event.extra[SUBGRAPH_FIELD],
            "workflow": {"type": str(subgraph.get_name()), "id": self.history.workflow.id, "engine": "langgraph"},
            # What the import redacted inside the subgraph's history, at its paths there.
            "redacted": ["$" + path[len(prefix):] for path in self.history.redacted if path.startswith(prefix + ".")],
        }
        try:
            inner = _Check(history_from_dict(document, self.history.source), subgraph)
            inner.subgraph_of = name
        except Exception as error:  # noqa: BLE001 - a malformed subgraph history is said, not checked
            self.notes.append(f"node {name!r} runs a subgraph whose recorded history cannot be read ({error}): "
                              "it was checked to exist only")
            return None
        found = inner.run()
        self.trips.extend(inner.trips)
        self.compared += inner.compared
        where = f"inside the subgraph node {name!r} runs"
        self.notes.extend(f"{where}: {note}" for note in inner.notes if note not in (LATER_NODES_NOTE, AFTER_INTERRUPT_NOTE))
        if found is None:
            return None
        self.interrupt_source = inner.interrupt_source
        return replace(found, position=event.seq, message=f"{where}: {found.message} (LangGraph resumes node {name!r} by "
                                                          "resuming its subgraph from the subgraph's own checkpoints)")

    def _on_interrupt(self, value: Any) -> int:
        index = self.interrupts
        self.interrupts += 1
        self.asked.append(value)
        self.interrupt_source = project_caller(self.prefixes)
        return index

    def _refuse_task(self, func: Any, arguments: Any, **options: Any) -> Any:
        raise _TaskRefused(lg.task_name_of(func))

    def _compare(self, event: Event, name: str) -> Divergence | None:
        if not self.asked or self.asked[0] is lg.NO_VALUE:
            self.notes.append(f"the value node {name!r} gives interrupt() could not be read: it was not compared")
            return None
        recorded = event.extra.get("interrupt_value")
        now = normal_form(self.asked[0])
        # A part the importer redacted agrees with anything; the rest is compared (as in functional replay).
        if same_as_recorded(recorded, now, frozenset(self.history.redacted), f"$.events[{event.seq - 1}].interrupt_value"):
            return None
        return Divergence(
            "interrupt-mismatch", event.seq,
            f"node {name!r} now asks {short_value(now, 160, str)}; the thread waits for the answer to {short_value(recorded, 160, str)} (the answer the "
            "reviewer gives on resume would go to this new question)",
            recorded=CommandView("signal", "interrupt", event.seq), issued=CommandView("signal", "interrupt"),
            source=self.interrupt_source,
        )

    def hazard(self, trip: NondeterministicCall) -> Divergence:
        return Divergence(
            "nondeterministic-call", trip.position, hazard_message(trip, _INSTEAD, _VERSION_GUARD), source=trip.source
        )


def definition_of(obj: Any) -> SourcePosition | None:
    try:
        filename = inspect.getsourcefile(obj)
        _, line = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    return SourcePosition(filename, line, getattr(obj, "__name__", None)) if filename else None


def added_at(name: str, nodes: list[Any]) -> SourcePosition | None:
    """The line that adds node ``name`` to a graph (``.add_node("name", ...)`` on one line), searched in the
    modules defining the functions of ``nodes``; None unless exactly one line does."""
    pattern = re.compile(rf"""\.add_node\(\s*(['"]){re.escape(name)}\1""")
    functions = [f for f in (lg.node_function(node) for node in nodes) if f is not None]
    found: list[SourcePosition] = []
    for module_name in dict.fromkeys(getattr(f, "__module__", None) for f in functions):
        module = sys.modules.get(module_name) if module_name else None
        if module is None:
            continue
        try:
            filename = inspect.getsourcefile(module)
            lines, _ = inspect.getsourcelines(module)
        except (OSError, TypeError):
            continue
        if filename:
            found += [SourcePosition(filename, number, None) for number, text in enumerate(lines, start=1)
                      if pattern.search(text)]
    return found[0] if len(found) == 1 else None


def _schema_line(schema: Any, key: str | None) -> SourcePosition | None:
    """Where the state schema declares ``key`` (or the schema itself when the key is not found)."""
    where = definition_of(schema)
    if where is None or key is None:
        return where
    try:
        lines, start = inspect.getsourcelines(schema)
    except (OSError, TypeError):
        return where
    pattern = re.compile(rf"^\s+{re.escape(key)}\s*:")
    for offset, text in enumerate(lines):
        if pattern.match(text):
            return SourcePosition(where.path, start + offset, where.function)
    return where


