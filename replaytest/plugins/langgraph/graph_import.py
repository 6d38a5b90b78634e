"""``replaytest import langgraph`` for graph-API threads: a ``StateGraph``'s checkpoint chain as a history.

What a checkpointer holds for a graph thread: one checkpoint per super-step (the ``input`` checkpoint
holds the invocation's input in ``__start__``, each ``loop`` checkpoint the channel values after a
step), and hanging off each checkpoint the *writes* of the tasks of the step that starts from it: a
node's task writes its state keys, the edge channels it takes (``branch:to:<node>``) and the ``Send``
packets it emits (``__pregel_tasks``); a node waiting at ``interrupt()`` writes ``__interrupt__`` with
the value it was given; a failed one ``__error__``. Task paths name the node (``~__pregel_pull, <node>``)
or the Send packet it runs (``~__pregel_push, <index>``).

The history of a thread (engine ``langgraph``, type = the graph's name, id = the thread id, run id = the
latest checkpoint's id) holds, for the thread's current checkpoint chain:

* ``step`` events, one per task of each super-step, oldest first (within a step by node, then by Send
  packet): ``name`` the node, ``super_step``,
  ``writes`` ({channel: shape of the value written}), ``goes_to`` (the nodes its edges and Sends
  trigger), ``send`` (true for a task a ``Send`` started) and ``error`` for a failed task. A ``@task``
  called from inside a node is not a step: its writes (task path ``~__pregel_push`` followed by the
  calling node's own path) are left out, with a note naming the nodes;
* ``signal`` events named ``interrupt``, ``pending``, one per interrupt the thread waits at, with the
  ``node`` and the ``interrupt_value`` it was given (and ``node_input``, the Send packet's argument,
  for a node a Send started);
* ``input``: the state — the channel values of the latest checkpoint, state keys only (what a resumed
  node reads);
* ``graph``: ``api`` (``graph``), ``next`` (the nodes the next super-step runs, parked ones included),
  ``channels`` ({state key: shape}), ``nodes_seen`` (every node the chain ran) and ``recorded_code`` —
  the name, nodes and state channels of the graph given with ``--workflows`` at import time, when one
  was (the code the threads were recorded with, if the import runs before the deploy) — and
  ``unstored_channels``, the state keys the thread wrote whose value no checkpoint stores (a
  ``DeltaChannel``, which LangGraph rebuilds from earlier writes on resume, or an untracked value): the
  history cannot hold their value, so the check says what it could not do with them; and, for a parked
  thread, ``checkpoint`` (``resume_bookkeeping``): the latest checkpoint's step, channel versions,
  ``versions_seen``, edge channels and writes, what LangGraph schedules the resume from beyond the state (for
  the resume rehearsal, ``langgraph.graph_rehearsal``; names, versions and markers, no payload);
* status ``parked`` (an interrupt pending), ``failed`` (a task's error pending), ``running`` (nodes
  still to run) or ``completed``.
* ``prompt_manifest`` from the metadata of the input checkpoint of the thread's latest invocation, when
  it was started with ``langgraph.prompts.with_prompts(config, graph)`` (``importer.recorded_manifest``; a
  malformed one refuses the thread).
* per node execution, the prompt versions it actually used (``langgraph.recording``: records written while
  the node ran, on the checkpoint its step started from, naming the node's task in their namespace): on a
  thread with records on its current chain, every node's ``step`` event lists them in ``prompts`` (an empty
  list: the node rendered none) and carries the first as ``prompt`` (``Event.prompt``). Per prompt name, a
  record made inside a ``@task`` the node called wins (written only when the task ran: its stored result
  came from it), then the latest one made in the node's own code (a node interrupted and resumed runs again
  from its top, and its writes come from the last run), then the earliest one made around a ``@task`` call.
  A node running a subgraph has its nodes' records in the subgraph's own checkpoints: when the source can
  read them (``subgraph_writes``), they are listed on its event with the subgraph's node that made them
  (``subgraph_node``; ``subgraph_prompts_used``), else its event lists none. Threads without records have no ``prompts`` (the check then takes the versions
  from the start manifest, with a note).

Shapes are JSON type names (``string``, ``number``, ``integer``, ``boolean``, ``null``, ``array``,
``object``) or, for a value LangGraph serialized as a class instance, the class's dotted name. Values
were decoded by ``langgraph.values`` (never unpickled). A thread whose chain is neither a graph's nor an
entrypoint's is refused by the caller; subgraph checkpoints (their own namespace) are read here only for
their nodes' prompt records: a node that runs a subgraph is recorded as that node (the SQL readers then
give a parked one the subgraph's own history, ``langgraph.nested``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from replaytest.history.io import json_type_name
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.importer import (
    ENGINE,
    CheckpointRow,
    ImportedThread,
    ImportRefused,
    PromptRecord,
    WriteRow,
    recorded_manifest,
    split_prompt_records,
)

UNKNOWN_NODE = "?"
DEFAULT_GRAPH_NAME = "LangGraph"  # what LangGraph names a compiled graph that was given no name
# Channels only an @entrypoint's run writes or reads; a thread that writes any other one is a graph's.
_FUNCTIONAL_CHANNELS = frozenset((lg.START, lg.END, lg.PREVIOUS, lg.RETURN, lg.ERROR, lg.INTERRUPT, lg.RESUME))


@dataclass(frozen=True)
class GraphCode:
    """A current graph as the importer records it (``recorded_code``) and names node tasks with."""

    name: str
    nodes: tuple[str, ...]
    channels: tuple[str, ...]
    triggers: dict[str, tuple[str, ...]]


def graph_code(objects: Iterable[Any]) -> list[GraphCode]:
    """The graphs (``StateGraph`` builders or compiled graphs) among the given workflow objects."""
    found = []
    for obj in objects:
        compiled = lg.compiled_graph(obj)
        if compiled is None:
            continue
        nodes = lg.graph_nodes(compiled)
        found.append(GraphCode(
            name=compiled.get_name(), nodes=tuple(nodes), channels=tuple(lg.state_channel_names(compiled)),
            triggers={name: lg.node_triggers(node) for name, node in nodes.items()},
        ))
    return found


def is_graph_thread(checkpoints: Sequence[CheckpointRow], writes: Sequence[WriteRow]) -> bool:
    """True when the thread's checkpoints or writes use a channel no ``@entrypoint`` run uses (a state
    key, an edge channel, Send packets) or name LangGraph's ``__start__`` node as a task."""
    if any(write.channel not in _FUNCTIONAL_CHANNELS for write in writes):
        return True
    if any(name not in _FUNCTIONAL_CHANNELS for checkpoint in checkpoints for name in checkpoint.channel_values):
        return True
    return any(write.task_path and lg.parse_graph_task_path(write.task_path) == ("pull", lg.START) for write in writes)


def shape(value: Any) -> str:
    """The shape of a decoded value: its JSON type, or the class a tagged (serialized instance) value names."""
    if isinstance(value, dict):
        tagged = value.get("$type")
        if isinstance(tagged, str) and "$value" in value:
            return tagged
    return json_type_name(value) or type(value).__name__


def build_graph_history(
    thread_id: str, checkpoints: Sequence[CheckpointRow], writes: Sequence[WriteRow], graphs: Sequence[GraphCode] = (),
    prompt_records: Sequence[PromptRecord] = (), subgraph_writes: Sequence[WriteRow] | None = None,
    graph_ns: str = "",
) -> ImportedThread:
    """The history of graph thread ``thread_id`` (see the module docstring). ``subgraph_writes``: the prompt
    records, interrupts and resumes in the thread's subgraph namespaces (None: the source cannot read them);
    ``graph_ns``: the checkpoint namespace of a subgraph's run (``langgraph.nested``), which its task ids hash."""
    chain = _current_chain(thread_id, checkpoints)
    latest = chain[-1]
    notes: list[str] = []
    naming = _merged(graphs)
    by_checkpoint: dict[str, list[WriteRow]] = {}
    for write in writes:
        by_checkpoint.setdefault(write.checkpoint_id, []).append(write)
    candidates = sorted({*naming.nodes, *(n for c in chain for n in c.nodes_seen),
                         *(_branch_targets(c.channel_values) for c in chain)} - {""})
    events: list[dict[str, Any]] = []
    unknown = 0
    pending_interrupts: list[dict[str, Any]] = []
    failed: dict[str, Any] | None = None
    nodes_seen: list[str] = []
    applied: set[str] = set()  # state keys written by a task whose step ended before the latest checkpoint
    called: dict[str, set[str]] = {}  # node -> ids of the @task calls its code made
    node_events: dict[tuple[str, str], dict[str, Any]] = {}  # (checkpoint id, task id) -> the node's step event
    task_paths: dict[tuple[str, str], str] = {}  # (checkpoint id, task id) -> the task's path
    for checkpoint in chain:
        tasks: dict[str, list[WriteRow]] = {}
        for write in by_checkpoint.get(checkpoint.id, ()):
            caller = _calling_node(checkpoint, write)
            if caller is not None:
                called.setdefault(caller, set()).add(write.task_id)
            elif write.task_id != lg.NULL_TASK_ID:
                tasks.setdefault(write.task_id, []).append(write)
        named = [(task_id, rows, *_task_node(checkpoint, task_id, rows[0], candidates, naming, graph_ns))
                 for task_id, rows in tasks.items()]
        # Tasks of one step run concurrently and write in any order: the history lists them by node, then by
        # Send packet, so the same thread always gives the same history.
        named.sort(key=lambda task: (task[2], -1 if task[4] is None else task[4], task[0]))
        # Each named task's path as LangGraph writes it, for a saver that stores none (the kept bookkeeping of
        # a parked thread then holds the same paths whichever saver recorded it).
        task_paths.update({(checkpoint.id, task_id): f"~{lg.PULL}, {name}" if index is None else f"~{lg.PUSH}, {index}"
                           for task_id, _, name, _, index in named if name != UNKNOWN_NODE})
        for task_id, rows, name, send_arg, _ in named:
            if name == UNKNOWN_NODE:
                unknown += 1
            elif name not in nodes_seen and name != lg.START:
                nodes_seen.append(name)
            event: dict[str, Any] = {"kind": "step", "name": name, "super_step": checkpoint.step + 1, "task_id": task_id}
            written = {}
            goes_to: list[str] = []
            for row in sorted(rows, key=lambda r: r.idx):
                if row.channel.startswith(lg.BRANCH_TO):
                    goes_to.append(row.channel[len(lg.BRANCH_TO):])
                elif row.channel == lg.PREGEL_TASKS:
                    goes_to.extend(_send_node(packet) for packet in _as_list(row.value))
                elif row.channel == lg.ERROR:
                    event["error"] = _error(row.value)
                elif row.channel == lg.INTERRUPT and checkpoint is latest and not _resumed(rows):
                    for value in _interrupt_values(row.value):
                        pending = {"kind": "signal", "name": "interrupt", "pending": True, "node": name,
                                   "interrupt_value": value}
                        if send_arg is not None:
                            pending["node_input"] = send_arg
                        pending_interrupts.append(pending)
                elif not lg.is_internal_channel(row.channel) and row.channel not in (lg.RESUME, lg.INTERRUPT):
                    written[row.channel] = shape(row.value)
            if checkpoint is not latest:
                applied.update(written)
            if send_arg is not None:
                event["send"] = True
            if written:
                event["writes"] = written
            if goes_to:
                event["goes_to"] = goes_to
            if "error" in event and checkpoint is latest:
                failed = event["error"]
            if name != lg.START:
                node_events[(checkpoint.id, task_id)] = event
            events.append(event)
    used = node_prompts_used(chain, prompt_records)
    in_subgraphs = subgraph_prompts_used(thread_id, node_events, subgraph_writes or ())
    if used is None and in_subgraphs:
        used = {}
    if used is not None:
        # Every node of a thread with records says what it used (an empty list: no prompt).
        for key, event in node_events.items():
            prompts = [*used.get(key, []), *in_subgraphs.get(key, [])]
            if prompts:
                event["prompt"] = {field: prompts[0][field] for field in ("name", "version", "params") if field in prompts[0]}
            event["prompts"] = prompts
    events.extend(pending_interrupts)
    state = {name: value for name, value in latest.channel_values.items() if not lg.is_internal_channel(name)}
    next_nodes = _next_nodes(latest, by_checkpoint.get(latest.id, ()), candidates, naming, graph_ns)
    for name in (p["node"] for p in pending_interrupts):
        if name not in next_nodes:
            next_nodes.append(name)
    if pending_interrupts:
        status = "parked"
    elif failed is not None:
        status = "failed"
    elif next_nodes:
        status = "running"
    else:
        status = "completed"
    # The given graph this thread ran: the one that has every node the chain ran.
    matching = [g for g in graphs if set(nodes_seen) <= set(g.nodes)]
    code = matching[0] if len(matching) == 1 else None
    if graphs and code is None:
        notes.append(f"{len(matching)} of the {len(graphs)} given graph(s) have every node this thread ran; "
                     "recorded_code is left out")
    graph: dict[str, Any] = {
        "api": "graph",
        "next": next_nodes,
        "channels": {name: shape(value) for name, value in state.items()},
        "nodes_seen": nodes_seen,
    }
    unstored = sorted(applied - set(state))
    if unstored:
        graph["unstored_channels"] = unstored
        notes.append(f"state key(s) {', '.join(unstored)}: written, but no checkpoint stores the value (a DeltaChannel, "
                     "which LangGraph rebuilds from earlier writes, or an untracked value); the history has no value for them")
    if code is not None:
        graph["recorded_code"] = {"name": code.name, "nodes": list(code.nodes), "channels": list(code.channels)}
    if status == "parked":
        graph["checkpoint"] = resume_bookkeeping(
            latest, by_checkpoint.get(latest.id, ()),
            {task_id: path for (checkpoint_id, task_id), path in task_paths.items() if checkpoint_id == latest.id})
    document: dict[str, Any] = {
        "format": "replaytest-history",
        "format_version": 1,
        "workflow": {"type": code.name if code else DEFAULT_GRAPH_NAME, "id": thread_id, "run_id": latest.id, "engine": ENGINE},
        "status": status,
        "input": state,
        "events": [{"seq": seq, **event} for seq, event in enumerate(events, start=1)],
        "graph": graph,
    }
    if failed is not None and status == "failed":
        document["error"] = failed
    # The manifest the thread's latest invocation started under: ``with_prompts`` put it in the metadata of
    # that invocation's input checkpoint (a resume with ``Command(resume=…)`` writes no input checkpoint).
    start = next((checkpoint for checkpoint in reversed(chain) if checkpoint.source == "input"), None)
    manifest = recorded_manifest(thread_id, start) if start is not None else None
    if manifest is not None:
        document["prompt_manifest"] = manifest
    if status == "parked":
        notes.append("parked in " + ", ".join(sorted({p["node"] for p in pending_interrupts})))
    if called:
        notes.append(f"{sum(len(ids) for ids in called.values())} @task call(s) made inside node(s) {', '.join(sorted(called))} "
                     "are left out: a graph history holds the nodes' steps, not @task results (LangGraph feeds the "
                     "checkpointed results back when the node runs again)")
    if unknown:
        notes.append(f"{unknown} task(s) name no node this importer could recover (written as {UNKNOWN_NODE!r}): "
                     "this saver stores no task paths and no current node's recomputed task id matches (give the graph with --workflows)")
    if len(chain) < len(checkpoints):
        notes.append(f"{len(checkpoints) - len(chain)} checkpoint(s) off the current chain (forks, earlier invocations' "
                     "replaced branches) are left out")
    return ImportedThread(thread_id, document, notes, unknown_tasks=unknown)


def resume_bookkeeping(
    latest: CheckpointRow, writes: Sequence[WriteRow], task_paths: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What LangGraph schedules a parked thread's resume from, beyond its state (``graph.checkpoint``, for the
    resume rehearsal, ``langgraph.graph_rehearsal``): the latest checkpoint's step, format version, channel
    versions and ``versions_seen``, the values of its edge and barrier channels (node names and markers, no
    payload; the ``Send`` packets' arguments and LangGraph's other channels are payload: only their count and
    names are kept), and every write hanging
    off it (task id, task path, index, channel), with its value only where it is a marker (None); the
    values of interrupts are the pending ``interrupt`` events' (which redaction sees). ``task_paths``: {task id:
    path} of the latest step's named tasks, for writes a saver stored without their path."""
    internal = {name: value for name, value in latest.channel_values.items() if lg.is_edge_channel(name)}
    unkept = sorted(name for name in latest.channel_values
                    if lg.is_internal_channel(name) and not lg.is_edge_channel(name) and name != lg.PREGEL_TASKS)
    kept: dict[str, Any] = {
        "step": latest.step, "v": latest.version, "channel_versions": dict(latest.channel_versions),
        "versions_seen": dict(latest.versions_seen), "edge_channels": internal,
        "writes": [],
    }
    sends = _as_list(latest.channel_values.get(lg.PREGEL_TASKS))
    if sends:
        kept["send_packets"] = len(sends)
    if unkept:
        kept["unkept_channels"] = unkept  # LangGraph's own channels holding a payload (the input, a return value)
    for write in sorted(writes, key=lambda w: (w.task_id, w.idx)):
        task_path = write.task_path or (task_paths or {}).get(write.task_id)
        row: dict[str, Any] = {"task_id": write.task_id, "task_path": task_path, "idx": write.idx,
                               "channel": write.channel}
        if write.value is None:
            row["value"] = None
        kept["writes"].append(row)
    return kept


def node_prompts_used(
    chain: Sequence[CheckpointRow], records: Sequence[PromptRecord]
) -> dict[tuple[str, str], list[dict[str, Any]]] | None:
    """{(checkpoint id, node task id): the prompts that node execution used}, from the records on the current
    chain (None: the chain has none, recorded before per-call records). A record names the node's task in the
    first level of its namespace (made in the node's code or in a ``@task`` it called) or of its scope (made
    around a ``@task`` call in the node); the choice among several per prompt is the module docstring's."""
    on_chain = {checkpoint.id for checkpoint in chain}
    chosen: dict[tuple[str, str, str], tuple[int, int, PromptRecord]] = {}
    for record in records:
        if record.checkpoint_id not in on_chain:
            continue
        if record.namespace is not None:
            levels = lg.namespace_tasks(record.namespace)
            # Inside a @task the node called (written only when the task ran), else in the node's own code.
            rank = (2 if len(levels) > 1 else 1, record.at)
        elif record.scope is not None:
            levels = lg.namespace_tasks(record.scope)
            rank = (0, -record.at)  # around a @task call: the node makes it again on every run
        else:
            continue
        task_id = levels[0][1]
        if not task_id:
            continue
        key = (record.checkpoint_id, task_id, record.name)
        if key not in chosen or rank > chosen[key][:2]:
            chosen[key] = (*rank, record)
    if not chosen:
        return None
    used: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (checkpoint_id, task_id, _), (_, _, record) in sorted(chosen.items(), key=lambda item: (item[0][:2], item[1][2].at)):
        entry: dict[str, Any] = {"name": record.name, "version": record.version}
        if record.params is not None:
            entry["params"] = record.params
        if record.model is not None:
            entry["model"] = record.model
        if record.source is not None:
            entry["source"] = record.source
        entry["via"] = record.via
        used.setdefault((checkpoint_id, task_id), []).append(entry)
    return used


def subgraph_prompts_used(
    thread_id: str, node_events: Iterable[tuple[str, str]], writes: Sequence[WriteRow]
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """{(checkpoint id, node task id): the prompts the nodes of the subgraph that node execution ran used}, from
    the records in the subgraph's own checkpoints: a record names the node's task in the first level of its
    namespace and the subgraph's node in the second (``subgraph_node``). A subgraph resumes from its own
    checkpoint, so its nodes that finished keep their results: their records count, the latest per prompt. A
    subgraph node parked at an interrupt (an interrupt write not resumed) runs again from its top: its
    records are left out, and its prompts are still to be used."""
    records, rest = split_prompt_records(thread_id, writes)
    interrupted = {(w.checkpoint_id, w.task_id) for w in rest if w.channel == lg.INTERRUPT}
    parked = interrupted - {(w.checkpoint_id, w.task_id) for w in rest if w.channel == lg.RESUME}
    checkpoint_of = {task_id: checkpoint_id for checkpoint_id, task_id in node_events}
    chosen: dict[tuple[str, str, str], tuple[PromptRecord, str]] = {}
    for record in records:
        if record.namespace is None:
            continue  # around a @task call inside a subgraph node: that node's own record is the one kept
        levels = lg.namespace_tasks(record.namespace)
        checkpoint_id = checkpoint_of.get(levels[0][1]) if len(levels) >= 2 else None
        if checkpoint_id is None or (record.checkpoint_id, levels[-1][1]) in parked:
            continue
        key = (checkpoint_id, levels[0][1], record.name)
        if key not in chosen or record.at > chosen[key][0].at:
            chosen[key] = (record, levels[1][0])
    used: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (checkpoint_id, task_id, _), (record, inner) in sorted(chosen.items(), key=lambda item: item[1][0].at):
        entry: dict[str, Any] = {"name": record.name, "version": record.version}
        for field in ("params", "model", "source"):
            if getattr(record, field) is not None:
                entry[field] = getattr(record, field)
        entry["via"] = record.via
        entry["subgraph_node"] = inner
        used.setdefault((checkpoint_id, task_id), []).append(entry)
    return used


def _merged(graphs: Sequence[GraphCode]) -> GraphCode:
    """One ``GraphCode`` with every given graph's nodes and triggers (candidates for naming tasks)."""
    nodes = tuple(dict.fromkeys(name for g in graphs for name in g.nodes))
    triggers = {name: trig for g in graphs for name, trig in g.triggers.items()}
    return GraphCode("", nodes, (), triggers)


def _current_chain(thread_id: str, checkpoints: Sequence[CheckpointRow]) -> list[CheckpointRow]:
    """The latest checkpoint and its ancestors, oldest first."""
    by_id = {checkpoint.id: checkpoint for checkpoint in checkpoints}
    chain: list[CheckpointRow] = []
    current: CheckpointRow | None = max(checkpoints, key=lambda c: c.id)
    while current is not None and len(chain) <= len(checkpoints):
        chain.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    if len(chain) > len(checkpoints):
        raise ImportRefused(f"thread {thread_id!r}: its checkpoints' parent links form a cycle")
    return chain[::-1]


def _branch_targets(channel_values: dict[str, Any]) -> str:
    names = [name[len(lg.BRANCH_TO):] for name in channel_values if name.startswith(lg.BRANCH_TO)]
    return names[0] if len(names) == 1 else ""


def _task_node(
    checkpoint: CheckpointRow, task_id: str, write: WriteRow, candidates: Sequence[str], code: GraphCode,
    graph_ns: str = "",
) -> tuple[str, Any, int | None]:
    """(node name, the Send packet's argument or None, the packet's index or None) of the task ``task_id``
    of ``checkpoint``'s step."""
    parsed = lg.parse_graph_task_path(write.task_path) if write.task_path else None
    if parsed is not None and parsed[0] == "pull":
        return str(parsed[1]), None, None
    if parsed is not None:
        packets = _as_list(checkpoint.channel_values.get(lg.PREGEL_TASKS))
        index = int(parsed[1])
        if index < len(packets):
            return _send_node(packets[index]), _send_arg(packets[index]), index
        return UNKNOWN_NODE, None, index
    # A saver without task paths: recompute the task id of each Send packet, and of each candidate node
    # triggered by its edge.
    step = checkpoint.step + 1
    for index, packet in enumerate(_as_list(checkpoint.channel_values.get(lg.PREGEL_TASKS))):
        node = _send_node(packet)
        if lg.send_task_id(checkpoint.id, checkpoint.version, step, node, index, graph_ns) == task_id:
            return node, _send_arg(packet), index
    for name in (lg.START, *candidates):
        triggers = code.triggers.get(name, (f"{lg.BRANCH_TO}{name}",))
        if name == lg.START:
            triggers = (lg.START,)
        if lg.pull_task_id(checkpoint.id, checkpoint.version, step, name, triggers, graph_ns) == task_id:
            return name, None, None
    return UNKNOWN_NODE, None, None


def _calling_node(checkpoint: CheckpointRow, write: WriteRow) -> str | None:
    """The node whose code called the ``@task`` that made ``write`` (``~__pregel_push`` followed by the path of
    the node's own task: ``~__pregel_pull, <node>`` or a Send task's ``~__pregel_push, <index>``, with one more
    ``~__pregel_push`` per level of tasks called from tasks); None for a node's own write, or without a path."""
    parts = [part.strip() for part in write.task_path.split(",")] if write.task_path else []
    if len(parts) < 3 or parts[0] != f"~{lg.PUSH}" or parts[1] not in (f"~{lg.PUSH}", f"~{lg.PULL}"):
        return None
    root = next((i for i, part in enumerate(parts) if part != f"~{lg.PUSH}"), len(parts))
    if root < len(parts) and parts[root] == f"~{lg.PULL}":
        return parts[root + 1] if root + 1 < len(parts) else UNKNOWN_NODE
    if root < len(parts) and parts[root].isdigit():
        packets = _as_list(checkpoint.channel_values.get(lg.PREGEL_TASKS))
        index = int(parts[root])
        return _send_node(packets[index]) if index < len(packets) else UNKNOWN_NODE
    return UNKNOWN_NODE


def _next_nodes(
    latest: CheckpointRow, pending: Sequence[WriteRow], candidates: Sequence[str], code: GraphCode, graph_ns: str = ""
) -> list[str]:
    """The nodes the step after ``latest`` runs: those its edge channels trigger and its Send packets name."""
    names = [name[len(lg.BRANCH_TO):] for name in latest.channel_values if name.startswith(lg.BRANCH_TO)]
    names += [_send_node(packet) for packet in _as_list(latest.channel_values.get(lg.PREGEL_TASKS))]
    finished = {write.task_id for write in pending if write.channel not in (lg.INTERRUPT, lg.RESUME, lg.ERROR)
                and _calling_node(latest, write) is None}
    done_nodes = set()
    for task_id in finished:
        row = next(w for w in pending if w.task_id == task_id)
        done_nodes.add(_task_node(latest, task_id, row, candidates, code, graph_ns)[0])
    out: list[str] = []
    for name in names:
        if name not in out and name not in done_nodes:
            out.append(name)
    return out


def _resumed(rows: Sequence[WriteRow]) -> bool:
    """The task's interrupt was answered and the task went on (it wrote more than the interrupt)."""
    return any(row.channel not in (lg.INTERRUPT, lg.RESUME) for row in rows)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _send_node(packet: Any) -> str:
    args = packet.get("$value") if isinstance(packet, dict) else None
    if isinstance(args, list) and args and isinstance(args[0], str):
        return args[0]
    if isinstance(args, dict) and isinstance(args.get("node"), str):
        return str(args["node"])
    return UNKNOWN_NODE


def _send_arg(packet: Any) -> Any:
    args = packet.get("$value") if isinstance(packet, dict) else None
    if isinstance(args, list) and len(args) > 1:
        return args[1]
    if isinstance(args, dict):
        return args.get("arg")
    return None


def _interrupt_values(value: Any) -> list[Any]:
    out = []
    for item in _as_list(value):
        inner = item.get("$value") if isinstance(item, dict) else None
        out.append(inner.get("value") if isinstance(inner, dict) else item)
    return out


def _error(value: Any) -> dict[str, str]:
    from replaytest.plugins.langgraph.importer import _error_info

    return _error_info(value)
