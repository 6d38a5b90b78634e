"""Runs LangGraph checkpoints in namespaces of their own, read with the thread that started them: graphs
an ``@entrypoint`` invokes from its own code (nested runs), written into the parent thread's history, and
the subgraph a parked StateGraph node runs.

``editor.invoke(doc)`` (or ``await editor.ainvoke(doc)``) inside an entrypoint runs ``editor`` as a
nested run of the same thread: LangGraph checkpoints it under the entrypoint task's namespace
(``<entrypoint>:<task id>``; the k-th graph after the first under ``…|k``), with its own input checkpoint
and task writes, and resumes it from there. A resumed parent does not run a finished nested run again:
LangGraph hands the parent the nested run's recorded output, whatever input the code gives it now.

The parent's history gets, for each nested run k (in the order the code started them):

* a ``child-workflow`` event named after the nested entrypoint, with ``nested`` = k, the nested run's
  ``input``, its ``run_status`` (``completed``, ``failed``, ``parked``, ``running``) and its return value as
  ``result`` (or its failure as ``error``);
* right after it, one ``step`` event per task call the nested entrypoint made, as the importer writes the
  parent's (``task_id``, ``call_index``), with ``nested`` = k.

The history also lists the nested runs the import found (``nested_namespaces``: each one's number and
checkpoint namespace; an empty list when it found none), so that replay can tell a graph the code now starts
that the thread never ran (a divergence) from one the import left out.

The block stands after the last task call of the parent whose result was written before the nested
run's first write where the store keeps the order of writes (SQLite), else after the parent's task calls
(Postgres); replay matches nested runs by their number, as LangGraph finds them, not by this position. The
SQL readers (``SqliteThreads``, ``PostgresThreads``: a ``NamespaceSource``) read nested runs and subgraphs;
the others (a saver's API, the async savers) import the parent alone, and its replay stops at the nested
call saying so.

A parked StateGraph thread whose waiting node runs a subgraph gets, on that pending interrupt, the
subgraph's own history (``subgraph``: status, state, events, graph section, built by
``graph_import.build_graph_history`` from the subgraph's namespace ``<node>:<task id>``, recursively),
which ``graph_check`` checks against the current subgraph.

Values are decoded by ``langgraph.values`` (never unpickled). Nested runs inside a nested run are not
imported.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from replaytest.plugins.langgraph import internals as lg

if TYPE_CHECKING:  # the replayer reads the field names below without loading the importer
    from replaytest.plugins.langgraph.importer import CheckpointRow, CurrentCode, ImportedThread, WriteRow

CHILD_KIND = "child-workflow"
# The history's top-level field listing the nested runs the import found (``History.nested_namespaces``).
NESTED_NAMESPACES_FIELD = "nested_namespaces"
NESTED_FIELD = "nested"  # the nested run's number (0-based) on its child-workflow event and its task calls


class NamespaceSource(Protocol):
    """What a reader offers to read runs in namespaces of their own (``SqliteThreads``, ``PostgresThreads``)."""

    def namespaces(self, thread_id: str) -> list[str]:
        """The thread's checkpoint namespaces other than the root one."""
        ...

    def read_namespace(self, thread_id: str, namespace: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        """The checkpoints and writes of one namespace, as ``read`` gives the root one's."""
        ...

    def write_order(self, thread_id: str, namespace: str, checkpoint_id: str | None) -> dict[str, int] | None:
        """{task id: the position of its first write} in the namespace (of one checkpoint, or all), where the
        store keeps the order writes were made in; None where it does not."""
        ...


@dataclass
class NestedRun:
    """One nested run's rows, and where its writes started among the parent's."""

    index: int
    namespace: str
    checkpoints: list[CheckpointRow]
    writes: list[WriteRow]
    first_write: int | None  # the position of its first write (None: no write, or the order is unknown)
    parent_writes: dict[str, int] | None  # {parent task id: the position of its first write in the invocation}


def nested_runs(source: NamespaceSource, imported: ImportedThread) -> list[NestedRun]:
    """The nested runs of ``imported``'s invocation, by number."""
    entry_ns = imported.entry_ns
    if not entry_ns:
        return []
    thread_id = imported.thread_id
    found = sorted(
        (index, namespace) for namespace in source.namespaces(thread_id)
        if (index := lg.nested_run_index(entry_ns, namespace)) is not None
    )
    if not found:
        return []
    parent_writes = source.write_order(thread_id, "", imported.document["workflow"]["run_id"])
    runs = []
    for index, namespace in found:
        checkpoints, writes = source.read_namespace(thread_id, namespace)
        order = source.write_order(thread_id, namespace, None) if parent_writes is not None else None
        runs.append(NestedRun(index, namespace, checkpoints, writes, min(order.values(), default=None) if order else None,
                              parent_writes))
    return runs


# --- SQLite: namespaces read with plain SQL; the order of writes is their row number --------------------

# Parameters: the thread id.
_NAMESPACES_SQL = "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ? AND checkpoint_ns != ''"
# Parameters: the decode budget twice, the thread id, the namespace.
_CHECKPOINTS_SQL = (
    "SELECT checkpoint_id, parent_checkpoint_id, type, CASE WHEN length(checkpoint) <= ? THEN checkpoint END, "
    "length(checkpoint), CASE WHEN length(metadata) <= ? THEN metadata END, length(metadata) "
    "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id"
)
# Parameters: the thread id, the namespace.
_ORDER_SQL = "SELECT task_id, MIN(rowid) FROM writes WHERE thread_id = ? AND checkpoint_ns = ?"


def sqlite_namespaces(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    return [ns for (ns,) in conn.execute(_NAMESPACES_SQL, (thread_id,)) if isinstance(ns, str)]


def sqlite_read_namespace(
    conn: sqlite3.Connection, label: object, thread_id: str, namespace: str
) -> tuple[list[CheckpointRow], list[WriteRow]]:
    from replaytest.plugins.langgraph.importer import sqlite_checkpoint_rows, sqlite_write_rows, sqlite_writes_sql
    from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

    limit = DEFAULT_BUDGET.max_stored_bytes
    checkpoints = sqlite_checkpoint_rows(label, thread_id, conn.execute(_CHECKPOINTS_SQL, (limit, limit, thread_id, namespace)))
    columns = [row[1] for row in conn.execute("PRAGMA table_info(writes)")]
    sql = sqlite_writes_sql(columns).replace("checkpoint_ns = ''", "checkpoint_ns = ?")
    return checkpoints, sqlite_write_rows(label, thread_id, conn.execute(sql, (limit, thread_id, namespace)))


def sqlite_write_order(conn: sqlite3.Connection, thread_id: str, namespace: str, checkpoint_id: str | None) -> dict[str, int]:
    sql, params = _ORDER_SQL, [thread_id, namespace]
    if checkpoint_id is not None:
        sql, params = sql + " AND checkpoint_id = ?", [*params, checkpoint_id]
    return {task_id: row for task_id, row in conn.execute(sql + " GROUP BY task_id", params)}


def attach_nested_runs(imported: ImportedThread, runs: Sequence[NestedRun], code: CurrentCode) -> None:
    """Write each nested run into ``imported``'s history (see the module docstring); a nested run that
    cannot be imported refuses the thread, naming the run."""
    from replaytest.plugins.importing import ImportRefused
    from replaytest.plugins.langgraph.importer import build_history

    if not runs:
        return
    document = imported.document
    events: list[dict[str, Any]] = list(document["events"])
    thread_id = imported.thread_id
    for run in sorted(runs, key=lambda r: r.index, reverse=True):  # the later first: positions stay valid
        if not run.checkpoints:
            continue
        try:
            nested = build_history(thread_id, run.checkpoints, run.writes, code, parent_ns=run.namespace)
        except ImportRefused as error:
            raise ImportRefused(f"nested run #{run.index + 1} (checkpoint namespace {run.namespace!r}): {error}") from None
        child = nested.document
        event: dict[str, Any] = {"kind": CHILD_KIND, "name": child["workflow"]["type"], NESTED_FIELD: run.index,
                                 "input": child.get("input"), "run_status": child["status"]}
        if "result" in child:
            event["result"] = child["result"]
        if "error" in child:
            event["error"] = child["error"]
        block = [event]
        for step in child["events"]:
            if step["kind"] == "step":
                block.append({**{k: v for k, v in step.items() if k != "seq"}, NESTED_FIELD: run.index})
        at = _position(events, run)
        events[at:at] = block
        imported.unknown_tasks += nested.unknown_tasks
        imported.notes.extend(f"nested run #{run.index + 1} ({event['name']}): {note}" for note in nested.notes)
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq
    document["events"] = [{"seq": e.pop("seq"), **e} for e in events]
    count = len(runs)
    imported.notes.append(f"{count} graph run(s) started from the entrypoint's code imported from their own namespaces")


def record_nested_namespaces(imported: ImportedThread, runs: Sequence[NestedRun]) -> None:
    """Say in ``imported``'s history which nested runs the import found (``nested_namespaces``, even none), so
    replay can tell a graph the code now starts that the thread never ran from one the import left out. Not
    said when the invocation's namespace is unknown (nothing was looked for)."""
    if imported.entry_ns:
        imported.document[NESTED_NAMESPACES_FIELD] = [{NESTED_FIELD: run.index, "namespace": run.namespace}
                                                      for run in sorted(runs, key=lambda r: r.index)]


def _position(events: Sequence[dict[str, Any]], run: NestedRun) -> int:
    """Where the nested run's block goes: after the parent's last task call written before it, else after
    the leading ``previous`` value; with no write order known, after the parent's task calls."""
    parent_steps = [i for i, e in enumerate(events) if e["kind"] == "step" and NESTED_FIELD not in e]
    if run.first_write is None or run.parent_writes is None:
        return (max(parent_steps) + 1) if parent_steps else _after_previous(events)
    before = [i for i in parent_steps if run.parent_writes.get(events[i].get("task_id", ""), run.first_write + 1) < run.first_write]
    return (max(before) + 1) if before else _after_previous(events)


def _after_previous(events: Sequence[dict[str, Any]]) -> int:
    return 1 if events and events[0]["kind"] == "side-effect" and events[0]["name"] == "previous" else 0


# --- subgraphs of a StateGraph thread ----------------------------------------------------------------

SUBGRAPH_FIELD = "subgraph"  # on a pending interrupt of a node running a subgraph: the subgraph's own history


def attach_subgraph_runs(source: NamespaceSource, imported: ImportedThread) -> None:
    """Give each pending interrupt of ``imported`` (a graph thread) whose node runs a subgraph the subgraph's
    own history, read from the subgraph's checkpoint namespace (``<node>:<the node's task id>``), recursively
    for subgraphs inside it. LangGraph resumes such a thread by running the node again, which resumes the
    subgraph from those checkpoints: the subgraph's parked node is what the check re-runs."""
    namespaces = set(source.namespaces(imported.thread_id))
    if namespaces:
        _attach_subgraphs(source, imported, namespaces, "")


def _attach_subgraphs(source: NamespaceSource, imported: ImportedThread, namespaces: set[str], parent_ns: str) -> None:
    from replaytest.plugins.langgraph.graph_import import build_graph_history

    events = imported.document["events"]
    latest_step = max((e.get("super_step", -1) for e in events if e["kind"] == "step"), default=-1)
    for event in events:
        if not (event["kind"] == "signal" and event.get("pending") and isinstance(event.get("node"), str)):
            continue
        node = event["node"]
        # The node's task in the latest super-step: its id names the namespace its subgraph checkpoints in.
        task_ids = [e["task_id"] for e in events
                    if e["kind"] == "step" and e["name"] == node and e.get("super_step") == latest_step and "task_id" in e]
        found = [ns for ns in (f"{parent_ns}{'|' if parent_ns else ''}{node}:{task_id}" for task_id in task_ids) if ns in namespaces]
        if len(found) != 1:
            continue
        checkpoints, writes = source.read_namespace(imported.thread_id, found[0])
        if not checkpoints:
            continue
        sub = build_graph_history(imported.thread_id, checkpoints, writes, graph_ns=found[0])
        if sub.unknown_tasks:
            imported.notes.append(f"the subgraph node {node!r} runs: its tasks name no node this importer could recover "
                                  "(no task paths); its own history is left out")
            continue
        _attach_subgraphs(source, sub, namespaces, found[0])
        event[SUBGRAPH_FIELD] = {key: sub.document[key] for key in ("status", "input", "events", "graph") if key in sub.document}
        imported.notes.append(
            f"node {node!r} runs a subgraph, {sub.document['status']} in "
            + (", ".join(sub.document["graph"].get("next", [])) or "no node")
            + ": its own history imported from its namespace"
        )
