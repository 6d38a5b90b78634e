"""Resume rehearsal for LangGraph graph-API (``StateGraph``) threads: a thread parked at an ``interrupt()`` in a
node is resumed by LangGraph itself, on the current compiled graph, from its latest checkpoint restored into a
scratch ``InMemorySaver``, one super-step past its history, no node body effect run.

Restoring: LangGraph schedules a resume from more than the state: the edge and barrier channels' values, every
channel's version and, per node, the versions it last ran on (``versions_seen``), and the writes hanging off
the checkpoint (the parked task's ``__interrupt__``). A graph history's steps and ``goes_to`` do not hold those,
so the importer keeps them for a parked thread (``graph.checkpoint``, ``graph_import.resume_bookkeeping``:
names, versions and markers only, no payload). The rehearsal writes the checkpoint (id = the history's run
id, the state from ``input``) and those writes (each interrupt rebuilt from the pending ``interrupt`` event's
value, under the id ``interrupt()`` derives) with ``put``/``put_writes``, then checks that LangGraph reads it
back as recorded before trusting it: ``get_state`` must name the recorded ``next`` nodes, give the parked
nodes' tasks the task ids their interrupts were recorded under, and show each parked node waiting at the
recorded question. Otherwise no rehearsal and a note says why.

Resuming: ``invoke(Command(resume=answer))`` on a copy of the current graph (``internals.graph_with_nodes``)
that stops before any node other than the parked ones (LangGraph's own ``interrupt_before``), so LangGraph's
loop resumes the parked node(s), applies their writes and routes by the current edges, and its ``get_state``
then names the next node(s): the verdict. Every other node runs a stub that raises ``NodeStubbed`` (a safety
net: LangGraph stops before them). A parked node runs again from its top on resume: its own body is run under
the caller's runtime guards, which watch one thread — LangGraph runs a step's lone task on the calling
thread, and the body's wrapper refuses to run it on any other — with every ``@task`` of its module stubbed.
When the guards stop an effect in it (its code after ``interrupt()``: an API call, a file write) or it would
run off the guarded thread, it is run again as a stub that returns no update, which is faithful only when its
edges do not depend on what it returns (no conditional edge, no ``Command`` destinations: ``internals.
node_routes_by_output``); otherwise the resume is not rehearsed, and the note names the node and the line. A
parked ``ToolNode`` is never run (its tools are effects, run on LangGraph's executor threads): it is the stub
that returns no update from the start. The graph is given a replay store (``internals.replay_store``) instead
of its own: a write is discarded, a read ends the resume as an effect does.

The answer is the neutral ``""`` (a graph history keeps no answer given to an earlier interrupt), said in
``Rehearsal.delivered``. Verdict: ``continues`` naming the next node(s) and their line (a ``@task`` the parked
node calls after its interrupt: that task), ``waits`` (a node waits at an ``interrupt()`` again), ``completes``
(no node left; or the parked node raised its own error, said in the note), ``breaks`` (LangGraph's own code
raised). A next node the graph recorded at import time lacked (``recorded_code``) carries ``detail["added"]``:
``impact`` reads it as the new path.

Not rehearsed, with a note: a thread not parked, imported without ``graph.checkpoint`` (before the importer
kept it), parked inside a subgraph or in a node a ``Send`` started, waiting on pending ``Send`` packets, on a
``DeltaChannel`` or another channel whose value the history does not hold, or with writes on its latest
checkpoint whose values it does not hold (a node that finished in the same super-step, a ``@task`` result,
an answer to an earlier interrupt of the node).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from replaytest.history import Event, History
from replaytest.plugins.langgraph import internals as lg
from replaytest.plugins.langgraph.rehearsal import TASK_LABEL
from replaytest.plugins.langgraph.values import normal_form, revive
from replaytest.replay.divergence import CommandView, Rehearsal, SourcePosition
from replaytest.replay.guards import NondeterministicCall

if TYPE_CHECKING:
    # LangGraph passes a node its config when the parameter is annotated by this name (or not at all).
    from langchain_core.runnables import RunnableConfig

NEUTRAL_ANSWER = ""
_THREAD = "replaytest-rehearsal"
NODE_LABEL: Mapping[str, Any] = MappingProxyType({"kind_label": "node"})


def driver() -> str:
    return (f"LangGraph {lg.installed_version()} (invoke with Command(resume=...), stopping before the next "
            "node) on a scratch InMemorySaver")


class _OffThread(BaseException):
    """The parked node's body would run on a thread the runtime guards do not watch: not run."""


class _Unfaithful(Exception):
    """The restored checkpoint is not the one LangGraph stored (the message says how)."""


def _pending(history: History) -> list[Event]:
    return [e for e in history.events if e.kind == "signal" and e.name == "interrupt" and e.extra.get("pending") is True]


def _unsupported(history: History, compiled: Any) -> str | None:
    """Why this graph thread's resume cannot be rehearsed, None when it can."""
    graph = history.graph or {}
    pending = _pending(history)
    if history.status != "parked" or not pending:
        return "the thread is not parked at a recorded interrupt (only parked graph threads are rehearsed)"
    kept = graph.get("checkpoint")
    if not isinstance(kept, dict):
        return ("the history does not hold LangGraph's checkpoint bookkeeping (channel versions, edge channels); "
                "import the thread again with this replaytest")
    if not history.workflow.run_id:
        return "the history does not record the thread's checkpoint id (its run id)"
    if any("node_input" in e.extra for e in pending):
        return "the thread is parked in a node a Send started, whose argument the restore does not rebuild"
    nodes = lg.graph_nodes(compiled)
    for event in pending:
        node = nodes.get(str(event.extra.get("node")))
        if node is not None and lg.is_subgraph_node(node):
            return (f"the thread is parked in node {event.extra.get('node')!r}, which runs a subgraph: its checkpoints "
                    "live in their own namespace, which the import does not read")
    if kept.get("send_packets"):
        return f"{kept['send_packets']} pending Send packet(s), whose arguments the history does not keep"
    if kept.get("unkept_channels"):
        return f"LangGraph channel(s) {', '.join(kept['unkept_channels'])} hold values the history does not keep"
    if graph.get("unstored_channels"):
        return (f"state key(s) {', '.join(graph['unstored_channels'])} hold values no checkpoint stores (a DeltaChannel "
                "or an untracked value)")
    return None


class _Restored:
    """The thread's latest checkpoint and its writes in a scratch ``InMemorySaver``."""

    def __init__(self, history: History, compiled: Any) -> None:
        from langgraph.checkpoint.memory import InMemorySaver

        self.history = history
        self.compiled = compiled
        self.graph_section = history.graph or {}
        self.kept: dict[str, Any] = self.graph_section["checkpoint"]
        self.saver = InMemorySaver()
        self.config: dict[str, Any] = {"configurable": {"thread_id": _THREAD}}
        self.pending = _pending(history)
        self.parked: dict[str, str] = {}  # parked node -> the task id its interrupt was recorded under

    def _node_of(self, write: Mapping[str, Any]) -> str | None:
        parsed = lg.parse_graph_task_path(write["task_path"]) if write.get("task_path") else None
        if parsed is not None:
            return str(parsed[1]) if parsed[0] == "pull" else None
        step = int(self.kept.get("step", -1)) + 1
        return next((e.name for e in self.history.events if e.kind == "step" and e.extra.get("task_id") == write["task_id"]
                     and e.extra.get("super_step") == step), None)

    def restore(self) -> None:
        """Write the checkpoint and its writes (``_Unfaithful`` when the history cannot give them)."""
        run_id = self.history.workflow.run_id or ""
        values = {name: revive(value) for name, value in dict(self.history.input or {}).items()}
        values.update({name: revive(value) for name, value in dict(self.kept.get("edge_channels") or {}).items()})
        versions = dict(self.kept.get("channel_versions") or {})
        checkpoint = {
            "v": int(self.kept.get("v", lg.checkpoint_version())), "id": run_id, "ts": "1970-01-01T00:00:00+00:00",
            "channel_values": values, "channel_versions": versions,
            "versions_seen": dict(self.kept.get("versions_seen") or {}), "updated_channels": None,
        }
        saved = self.saver.put({"configurable": {"thread_id": _THREAD, "checkpoint_ns": ""}}, checkpoint,  # type: ignore[arg-type]
                               {"source": "loop", "step": int(self.kept.get("step", -1)), "parents": {}}, versions)
        by_task: dict[str, list[Mapping[str, Any]]] = {}
        for write in self.kept.get("writes") or ():
            by_task.setdefault(str(write["task_id"]), []).append(write)
        for task_id, rows in by_task.items():
            node = self._node_of(rows[0])
            out: list[tuple[str, Any]] = []
            for row in sorted(rows, key=lambda r: int(r.get("idx", 0))):
                if row["channel"] == lg.INTERRUPT and node is not None:
                    asked = [e for e in self.pending if e.extra.get("node") == node]
                    out.append((lg.INTERRUPT, [lg.node_interrupt(revive(e.extra.get("interrupt_value")), node, task_id)
                                               for e in asked]))
                    self.parked[node] = task_id
                elif "value" in row:
                    out.append((str(row["channel"]), row["value"]))
                else:
                    raise _Unfaithful(
                        f"its latest checkpoint holds a write to channel {row['channel']!r} by "
                        f"{'node ' + repr(node) if node else 'task ' + task_id} whose value the history does not keep "
                        "(a node that finished in the same super-step, a @task result, or an answer to an earlier interrupt)")
            self.saver.put_writes(saved, out, task_id, rows[0].get("task_path") or "")

    def check(self, graph: Any) -> None:
        """LangGraph reads the restored thread as recorded (``_Unfaithful`` when not)."""
        state = graph.get_state(self.config)
        recorded_next = sorted(str(name) for name in self.graph_section.get("next", []))
        if sorted(state.next) != recorded_next:
            raise _Unfaithful(f"LangGraph would run {sorted(state.next)} from it, the thread recorded {recorded_next}")
        for node, task_id in self.parked.items():
            task = next((t for t in state.tasks if t.name == node), None)
            if task is None or task.id != task_id:
                raise _Unfaithful(f"LangGraph derives task id {task.id if task else None} for node {node!r}, the thread "
                                  f"recorded its interrupt under {task_id}")
            asked = [normal_form(i.value) for i in task.interrupts]
            recorded = [e.extra.get("interrupt_value") for e in self.pending if e.extra.get("node") == node]
            if asked != [normal_form(revive(value)) for value in recorded]:
                raise _Unfaithful(f"LangGraph does not see node {node!r} waiting at the recorded interrupt")
        missing = sorted(set(self.graph_section.get("next", [])) - {t.name for t in state.tasks})
        if missing or not self.parked:
            raise _Unfaithful("LangGraph does not see the parked node(s) waiting")


def rehearse(history: History, compiled: Any, namespaces: list[dict[str, Any]], project_prefixes: tuple[str, ...] = (),
             ) -> tuple[Rehearsal | None, str | None]:
    """Resume the parked graph thread of ``history`` with LangGraph on the current ``compiled`` graph (its
    nodes' ``@task`` objects, in ``namespaces``, stubbed). Returns the rehearsal, or None and the note saying
    why it was not made. Call it under the runtime guards, on the thread they watch."""
    why = _unsupported(history, compiled)
    if why is not None:
        return None, f"resume not rehearsed: {why}"
    parked = sorted({str(e.extra.get("node")) for e in _pending(history)})
    nodes = lg.graph_nodes(compiled)
    stopped: str | None
    if any(name in nodes and lg.is_tool_node(nodes[name]) for name in parked):
        stopped = "it runs LangGraph's ToolNode, whose tools are effects"
    else:
        outcome, stopped = _resume(history, compiled, namespaces, project_prefixes, parked, run_parked=True)
        if stopped is None:
            return outcome
    named = ("node " if len(parked) == 1 else "nodes ") + ", ".join(map(repr, parked))
    routed = [name for name in parked if lg.node_routes_by_output(compiled, name)]
    if routed:
        return None, (f"resume not rehearsed: {named}: {stopped}, which the rehearsal does not run, and where the thread "
                      f"goes after node {routed[0]!r} depends on what it returns (a conditional edge or Command leaves it)")
    (rehearsal, note), again = _resume(history, compiled, namespaces, project_prefixes, parked, run_parked=False)
    if rehearsal is not None and again is None:
        taken = (f"{named}: {stopped}, which the rehearsal does not run: taken to finish with no update (the edges "
                 "leaving it do not depend on it)")
        rehearsal = replace(rehearsal, note="; ".join(filter(None, (rehearsal.note, taken))))
    return rehearsal, note


def _resume(history: History, compiled: Any, namespaces: list[dict[str, Any]], project_prefixes: tuple[str, ...],
            parked: list[str], run_parked: bool) -> tuple[tuple[Rehearsal | None, str | None], str | None]:
    """One resume on a fresh restore: (the rehearsal or the note, None), or (…, what the parked node did that
    the rehearsal must not run: "makes an effect at …", "would run off the guarded thread")."""
    from langgraph.types import Command

    from replaytest.plugins.langgraph.replayer import project_raise_site

    nodes = lg.graph_nodes(compiled)
    scheduled: list[str] = []
    guarded_thread = threading.get_ident()

    def stub(name: str) -> Any:
        def body(state: Any, config: RunnableConfig) -> Any:
            scheduled.append(name)
            raise lg.NodeStubbed(name)
        return body

    def parked_body(name: str) -> Any:
        runnable = nodes[name].bound

        def body(state: Any, config: RunnableConfig) -> Any:
            if not run_parked:
                return None
            if threading.get_ident() != guarded_thread:
                raise _OffThread(name)
            return runnable.invoke(state, config)
        return body

    bodies = {name: parked_body(name) if name in parked else stub(name) for name in nodes}
    restored = _Restored(history, compiled)
    graph = lg.graph_with_nodes(compiled, restored.saver, bodies, [name for name in nodes if name not in parked])
    try:
        restored.restore()
        restored.check(graph)
    except _Unfaithful as why:
        return (None, f"resume not rehearsed: the thread's checkpoint could not be restored faithfully ({why})"), None
    delivered = (f"Command(resume={NEUTRAL_ANSWER!r}): a graph history keeps no answer given to an interrupt, a neutral "
                 "one was given")
    tasks: list[str] = []
    raised: BaseException | None = None
    with lg.stubbed_tasks(namespaces, tasks.append):
        try:
            graph.invoke(Command(resume=NEUTRAL_ANSWER), restored.config)
        except NondeterministicCall as trip:
            where = f" at {trip.source.path}:{trip.source.line}" if trip.source is not None else ""
            return (None, None), f"its code makes an effect{where} ({trip.call})"
        except _OffThread:
            return (None, None), "its body would run on a thread the runtime guards do not watch"
        except lg.StoreRead as read:
            site = project_raise_site(read, project_prefixes)
            where = f" at {site.path}:{site.line}" if site is not None else ""
            return (None, None), f"its code reads LangGraph's store ({read.operation}){where}, which no checkpoint keeps"
        except BaseException as error:  # noqa: BLE001 - a stub's stop, or the run's own error
            raised = error
    if tasks:
        commands = tuple(CommandView("step", name, detail=TASK_LABEL) for name in dict.fromkeys(tasks))
        source = project_raise_site(raised, project_prefixes) if raised is not None else None
        return (Rehearsal("continues", delivered, commands, (), None, source, driver()), None), None
    if raised is not None and not isinstance(raised, (Exception, lg.NodeStubbed)):
        raise raised  # KeyboardInterrupt and the like: the caller's
    if scheduled:  # LangGraph ran a node it should have stopped before: said, not hidden
        return (None, f"resume not rehearsed: LangGraph ran node {scheduled[0]!r} past the parked one instead of "
                      "stopping before it"), None
    if isinstance(raised, Exception):
        text = f"{type(raised).__name__}: {raised}"
        source = project_raise_site(raised, project_prefixes)
        if type(raised).__module__.split(".")[0] == "langgraph":
            return (Rehearsal("breaks", delivered, (), (), text, source, driver()), None), None
        return (Rehearsal("completes", delivered, (), (), None, source, driver(),
                          note=f"the run fails on resume: {text}"), None), None
    state = graph.get_state(restored.config)
    if any(task.interrupts for task in state.tasks):
        return (Rehearsal("waits", delivered, (), (), None, None, driver()), None), None
    if state.next:
        recorded = (history.graph or {}).get("recorded_code") or {}
        known = set(recorded.get("nodes") or ())
        commands = tuple(
            CommandView("node", name, detail={**NODE_LABEL, **({"added": True} if known and name not in known else {})})
            for name in dict.fromkeys(state.next))
        return (Rehearsal("continues", delivered, commands, (), None, _node_line(compiled, commands[0].name),
                          driver()), None), None
    return (Rehearsal("completes", delivered, (), (), None, None, driver()), None), None


def _node_line(compiled: Any, name: str) -> SourcePosition | None:
    """Where node ``name`` is defined: its function, else (a subgraph) the line that adds it to the graph."""
    from replaytest.plugins.langgraph.graph_check import added_at, definition_of

    nodes = lg.graph_nodes(compiled)
    node = nodes.get(name)
    if node is None:
        return None
    function = lg.node_function(node)
    if function is not None:
        return definition_of(function)
    return added_at(name, list(nodes.values()))
