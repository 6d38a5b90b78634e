"""``replaytest import langgraph``: LangGraph functional-API threads from a checkpointer into neutral histories.

What a checkpointer holds for a thread of an ``@entrypoint``: one *input* checkpoint per invocation
(``metadata.source == "input"``, the input in channel ``__start__``, the previous invocation's saved
value in ``__previous__``) and, hanging off it, the *writes* of that invocation — each ``@task`` call's
result (``__return__``) or failure (``__error__``) under the call's task id, and the entrypoint task's own
``__interrupt__``, ``__resume__`` (the resume values so far) and ``__end__`` (its return value). A run
resumed with ``Command(resume=…)`` adds writes to the same checkpoint; a completed run adds a ``loop``
checkpoint after it.

A thread of a graph-API ``StateGraph`` (it writes state keys and edge channels no entrypoint writes) is
imported by ``langgraph.graph_import`` instead, into a history with a ``graph`` section.

One history per functional-API thread (engine ``langgraph``, type = the entrypoint's name, id = the thread id, run id =
the input checkpoint's id) describes the thread's latest invocation:

* ``step`` events, one per task call the entrypoint made, in call order (the call counter of the
  write's ``task_path``, or — for savers without task paths — the index whose recomputed id matches).
  LangGraph stores no task names: each is recovered by recomputing the call's task id with each
  candidate ``@task`` name of the current code. A call no candidate explains is written with the name
  ``?`` and reported, never guessed, so its replay fails there. Calls made inside a task's body (nested
  tasks) are part of that task, whose recorded result replay feeds back: they are counted, not events.
* ``signal`` events named ``interrupt``, one per ``interrupt()`` that was resumed, with the resume value
  as result. LangGraph does not record where an interrupt fell between task calls, so they follow the
  task events and replay answers interrupts by their index. A parked thread's last event is the
  interrupt it waits at (``pending``; ``task`` and ``call_index`` when a task's body raised it).
  LangGraph keeps one interrupt write per task, replaced at each interrupt: the value given to the
  latest ``interrupt()`` is recorded as ``interrupt_value`` on the pending interrupt, or on the last
  resumed one of a finished run; earlier values are gone.
* a leading ``side-effect`` event ``previous`` when the thread had an earlier invocation whose saved
  value the entrypoint receives as ``previous``.
* status ``completed`` (``__end__`` written), ``failed`` (the entrypoint's own ``__error__``), ``parked``
  (waiting at an interrupt) or ``running``.
* for each graph the entrypoint invoked from its own code (a nested run, read from its own checkpoint
  namespace; SQLite and Postgres databases), a ``child-workflow`` event and the nested run's task calls
  (``langgraph.nested``).
* ``prompt_manifest`` from the input checkpoint's metadata, when the thread was started with
  ``langgraph.prompts.with_prompts`` (``recorded_manifest``; a malformed one refuses the thread).

Values are decoded by ``replaytest.plugins.langgraph.values`` (no imports, no unpickling, within a decode
budget). SQLite files are read directly (read-only), Postgres databases by ``langgraph.postgres`` (SQL in a
read-only transaction; the rows are the same); ``histories_from_saver`` takes any ``BaseCheckpointSaver``
object (``langgraph.async_savers.ahistories_from_saver`` the async ones). A thread whose checkpoints or writes
cannot be decoded (malformed, over budget, pickled, encrypted) is refused with one line naming the thread
and the checkpoint; the other threads are still imported.
"""

from __future__ import annotations

import ast
import json
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import click

from replaytest.plugins.importing import EXIT_ERROR, ImportRefused, fail, histories_counted, import_redactor
from replaytest.plugins.langgraph import internals as lg

if TYPE_CHECKING:
    from replaytest.history.redact import Redactor
    from replaytest.plugins.import_files import RunKey

ENGINE = "langgraph"
UNKNOWN_TASK = "?"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_EXCEPTION_TEXT = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.DOTALL)
# Call indexes tried beyond the number of recorded results, for savers that store no task path (a call
# still running when the checkpoint was read has an index but no result).
_SPARE_CALL_INDEXES = 64
# Ids shown as they are in refusals; anything else (control characters, newlines) is shown quoted.
_PLAIN_ID = re.compile(r"^[\w.:-]{1,200}$")


@dataclass
class CheckpointRow:
    id: str
    parent_id: str | None
    step: int
    source: str
    version: int
    channel_values: dict[str, Any]
    # Sorted: savers do not keep the order of ``versions_seen`` (Postgres JSONB puts shorter keys first).
    nodes_seen: tuple[str, ...] = ()
    # The nodes that consumed the input channel (``__start__``): a functional thread's entrypoint.
    started_nodes: tuple[str, ...] = ()
    # ``metadata.replaytest_prompts`` as stored (``langgraph.prompts.with_prompts``), None when absent.
    prompts: Any = None
    # LangGraph's bookkeeping as stored: the version of every channel and, per node, the versions of its
    # triggers it last ran on (what the next super-step is scheduled from; ``graph_import`` keeps the latest
    # checkpoint's for the resume rehearsal).
    channel_versions: dict[str, Any] = field(default_factory=dict)
    versions_seen: dict[str, Any] = field(default_factory=dict)


@dataclass
class WriteRow:
    checkpoint_id: str
    task_id: str
    task_path: str | None  # None when the saver does not store it
    idx: int
    channel: str
    value: Any


@dataclass
class ImportedThread:
    """One thread's history (as a JSON document) and what the import noticed about it."""

    thread_id: str
    document: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    unknown_tasks: int = 0
    # The checkpoint namespace of the latest invocation's entrypoint task, where LangGraph checkpoints the
    # graphs its code invokes (``langgraph.nested``); None for a graph-API thread.
    entry_ns: str | None = None


# --- reading a checkpointer -------------------------------------------------------------------------


def _decode(type_name: str | None, data: bytes | None, where: str) -> Any:
    # Imported on use: every lint run loads this module (the plugin's import command) and never decodes.
    from replaytest.plugins.langgraph.values import ValueRefused, decode_typed

    if type_name is not None and not isinstance(type_name, str):
        raise ImportRefused(f"{where}: serializer type {type_name!r} is not a name")
    if isinstance(data, str):  # a TEXT cell where the saver writes a BLOB
        data = data.encode("utf-8", "surrogatepass")
    elif data is not None and not isinstance(data, bytes):
        raise ImportRefused(f"{where}: the stored value is a {type(data).__name__}, not bytes")
    try:
        return decode_typed(type_name, data)
    except ValueRefused as error:
        raise ImportRefused(f"{where}: {error}") from None


def _shown(identifier: object) -> str:
    """A checkpoint, task or channel id for a one-line message: as it is when plain, else quoted."""
    text = str(identifier)
    return text if _PLAIN_ID.match(text) else repr(text)


def _checkpoint_row(
    checkpoint_id: str, parent_id: str | None, checkpoint: Any, metadata: Any, where: str = "a checkpoint"
) -> CheckpointRow:
    if not isinstance(checkpoint, dict):
        raise ImportRefused(f"{where}: the checkpoint decodes to {type(checkpoint).__name__}, not a map")
    if not isinstance(metadata, dict):
        raise ImportRefused(f"{where}: its metadata decodes to {type(metadata).__name__}, not a map")
    seen = checkpoint.get("versions_seen") or {}
    channel_values = checkpoint.get("channel_values") or {}
    channel_versions = checkpoint.get("channel_versions") or {}
    step, version = metadata.get("step", -1), checkpoint.get("v", 1)
    for field_name, value, expected in (
        ("versions_seen", seen, dict), ("channel_values", channel_values, dict), ("metadata step", step, int),
        ("version v", version, int), ("channel_versions", channel_versions, dict),
    ):
        if not isinstance(value, expected) or isinstance(value, bool):
            raise ImportRefused(f"{where}: its {field_name} is {type(value).__name__}, not {expected.__name__}")
    return CheckpointRow(
        id=checkpoint_id,
        parent_id=parent_id,
        step=step,
        source=str(metadata.get("source", "")),
        version=version,
        channel_values=dict(channel_values),
        nodes_seen=tuple(sorted(name for name in seen if not name.startswith("__"))),
        started_nodes=tuple(sorted(
            name for name, channels in seen.items()
            if not name.startswith("__") and isinstance(channels, dict) and lg.START in channels
        )),
        prompts=metadata.get(PROMPTS_METADATA_KEY),
        channel_versions=dict(channel_versions),
        versions_seen=dict(seen),
    )


# ``langgraph.prompts.METADATA_KEY``, repeated so that importing does not load the recording helpers.
PROMPTS_METADATA_KEY = "replaytest_prompts"


def recorded_manifest(thread_id: str, start: CheckpointRow) -> dict[str, str] | None:
    """The prompt manifest in the input checkpoint's metadata (None: the thread was started without
    ``with_prompts``). A malformed one refuses the thread, naming the checkpoint and the JSON path."""
    stored = start.prompts
    if stored is None:
        return None
    where = f"thread {thread_id!r}: checkpoint {_shown(start.id)}: metadata $.{PROMPTS_METADATA_KEY}"
    if not isinstance(stored, str):
        raise ImportRefused(f"{where} is {type(stored).__name__}, not the JSON text of a prompt manifest")
    try:
        manifest = json.loads(stored)
    except ValueError as error:
        raise ImportRefused(f"{where} is not JSON ({error})") from None
    if not isinstance(manifest, dict):
        raise ImportRefused(f"{where} is {type(manifest).__name__}, not a map of prompt names to versions")
    for name, version in manifest.items():
        if not isinstance(version, str) or not version or not name:
            raise ImportRefused(f"{where}[{name!r}] is {version!r}, not a prompt version")
    return manifest


class SqliteThreads:
    """Threads of a ``SqliteSaver`` database, read with plain SQL on a read-only connection."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise ImportRefused(f"{path}: no such SQLite file")
        self.path = path
        self.conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        tables = {row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"checkpoints", "writes"} <= tables:
            raise ImportRefused(f"{path}: not a LangGraph SqliteSaver database (no checkpoints/writes tables)")

    def close(self) -> None:
        self.conn.close()

    def thread_ids(self, limit: int | None) -> list[str]:
        """Threads, most recently checkpointed first."""
        rows = self.conn.execute(SQLITE_THREADS_SQL + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [row[0] for row in rows]

    # Runs in namespaces of their own (nested runs, subgraphs): ``langgraph.nested.NamespaceSource``.
    def namespaces(self, thread_id: str) -> list[str]:
        from replaytest.plugins.langgraph.nested import sqlite_namespaces

        return sqlite_namespaces(self.conn, thread_id)

    def read_namespace(self, thread_id: str, namespace: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        from replaytest.plugins.langgraph.nested import sqlite_read_namespace

        return sqlite_read_namespace(self.conn, self.path, thread_id, namespace)

    def write_order(self, thread_id: str, namespace: str, checkpoint_id: str | None) -> dict[str, int] | None:
        from replaytest.plugins.langgraph.nested import sqlite_write_order

        return sqlite_write_order(self.conn, thread_id, namespace, checkpoint_id)

    def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

        # A cell over the decode budget is never fetched: SQLite measures it, Python never holds it.
        limit = DEFAULT_BUDGET.max_stored_bytes
        rows = self.conn.execute(SQLITE_CHECKPOINTS_SQL, (limit, limit, thread_id))
        checkpoints = sqlite_checkpoint_rows(self.path, thread_id, rows)
        columns = [row[1] for row in self.conn.execute("PRAGMA table_info(writes)")]
        writes = sqlite_write_rows(self.path, thread_id, self.conn.execute(sqlite_writes_sql(columns), (limit, thread_id)))
        return checkpoints, writes

    def subgraph_writes(self, thread_id: str) -> list[WriteRow]:
        """The prompt records, interrupts and resumes the thread's subgraphs wrote into their own checkpoints
        (namespaces other than the thread's), for the prompt versions of a node that runs a subgraph."""
        from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

        columns = [row[1] for row in self.conn.execute("PRAGMA table_info(writes)")]
        rows = self.conn.execute(sqlite_subgraph_writes_sql(columns), (DEFAULT_BUDGET.max_stored_bytes, thread_id, *SUBGRAPH_CHANNELS))
        return sqlite_write_rows(self.path, thread_id, rows)


def sqlite_checkpoint_rows(label: object, thread_id: str, rows: Iterable[Sequence[Any]]) -> list[CheckpointRow]:
    """The rows of ``SQLITE_CHECKPOINTS_SQL``, decoded (``label`` names the database in refusals; shared
    with the async reader)."""
    checkpoints = []
    for checkpoint_id, parent_id, type_name, blob, blob_size, metadata, metadata_size in rows:
        where = f"{label}: thread {thread_id!r} checkpoint {_shown(checkpoint_id)}"
        _check_size(blob_size, where, "checkpoint")
        _check_size(metadata_size, where, "metadata")
        checkpoint = _decode(type_name, blob, where)
        meta = _decode("json", metadata, f"{where} metadata") if metadata else {}
        checkpoints.append(_checkpoint_row(checkpoint_id, parent_id, checkpoint, meta, where))
    return checkpoints


def sqlite_write_rows(label: object, thread_id: str, rows: Iterable[Sequence[Any]]) -> list[WriteRow]:
    """The rows of ``sqlite_writes_sql``, decoded (shared with the async reader)."""
    writes = []
    for checkpoint_id, task_id, task_path, idx, channel, type_name, value, value_size in rows:
        where = (f"{label}: thread {thread_id!r} checkpoint {_shown(checkpoint_id)} "
                 f"write {_shown(channel)} of task {_shown(task_id)}")
        _check_size(value_size, where, "value")
        writes.append(WriteRow(checkpoint_id, task_id, task_path, idx, channel, _decode(type_name, value, where)))
    return writes


SQLITE_THREADS_SQL = (
    "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints WHERE checkpoint_ns = '' "
    "GROUP BY thread_id ORDER BY latest DESC"
)
# Parameters: the decode budget twice, the thread id.
SQLITE_CHECKPOINTS_SQL = (
    "SELECT checkpoint_id, parent_checkpoint_id, type, CASE WHEN length(checkpoint) <= ? THEN checkpoint END, "
    "length(checkpoint), CASE WHEN length(metadata) <= ? THEN metadata END, length(metadata) "
    "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id"
)


def sqlite_writes_sql(columns: Iterable[str]) -> str:
    """The writes query for a ``writes`` table with these columns (parameters: the decode budget, the
    thread id); langgraph-checkpoint-sqlite before 3.0 has no task_path column: call indexes then come
    from the ids."""
    task_path = "task_path" if "task_path" in columns else "NULL"
    return (
        f"SELECT checkpoint_id, task_id, {task_path}, idx, channel, type, CASE WHEN length(value) <= ? THEN value END, "
        "length(value) FROM writes WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY rowid"
    )


# What a subgraph's own checkpoints hold that the graph import reads: its nodes' prompt records, and the
# interrupts and resumes that say which of those nodes are parked (they run again when the thread resumes).
SUBGRAPH_CHANNELS = ("__replaytest_prompt__", lg.INTERRUPT, lg.RESUME)


def sqlite_subgraph_writes_sql(columns: Iterable[str]) -> str:
    """``sqlite_writes_sql`` for the writes of the thread's subgraph namespaces on ``SUBGRAPH_CHANNELS``
    (parameters: the decode budget, the thread id, the channels)."""
    return sqlite_writes_sql(columns).replace(
        "checkpoint_ns = ''", "checkpoint_ns != '' AND channel IN (?, ?, ?)"
    )


def _check_size(size: int | None, where: str, what: str) -> None:
    from replaytest.plugins.langgraph.values import DEFAULT_BUDGET

    if size is not None and size > DEFAULT_BUDGET.max_stored_bytes:
        raise ImportRefused(
            f"{where}: stored {what} of {size:,} bytes is over the decode budget of "
            f"{DEFAULT_BUDGET.max_stored_bytes:,} bytes (max_stored_bytes); not read"
        )


class _SafeSerde:
    """Stands in for a saver's serializer while replaytest reads through its API: decodes without
    importing or unpickling (``langgraph.values``). ``lenient`` (listing thread ids, where no value is
    used) reads a value it refuses as an empty map, so one broken thread does not hide the others; the
    thread's own read refuses it."""

    def __init__(self, lenient: bool = False) -> None:
        self.lenient = lenient

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        try:
            return _decode(data[0], data[1], "a value read through the saver")
        except ImportRefused:
            if self.lenient:
                return {}
            raise

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:  # pragma: no cover - reading never writes
        raise ImportRefused("replaytest reads checkpoints; it never writes them")


class SaverThreads:
    """Threads of any ``BaseCheckpointSaver`` read through its public API (``list``), its serializer
    swapped for a safe one for the duration. Savers return no task paths: call indexes are recovered
    from the task ids."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    def thread_ids(self, limit: int | None) -> list[str]:
        latest: dict[str, str] = {}
        with self._safe(lenient=True):
            for item in self.saver.list(None):
                configurable = item.config["configurable"]
                if configurable.get("checkpoint_ns", ""):
                    continue
                thread_id = configurable["thread_id"]
                latest[thread_id] = max(latest.get(thread_id, ""), configurable["checkpoint_id"])
        ordered = sorted(latest, key=lambda t: latest[t], reverse=True)
        return ordered[:limit] if limit else ordered

    def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]:
        checkpoints, writes = [], []
        try:
            with self._safe():
                items = list(self.saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}))
        except ImportRefused as error:  # the saver does not say which of the thread's checkpoints it was reading
            raise ImportRefused(f"thread {thread_id!r}: {error}") from None
        for item in sorted(items, key=lambda i: i.config["configurable"]["checkpoint_id"]):
            checkpoint_id = item.config["configurable"]["checkpoint_id"]
            parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            where = f"thread {thread_id!r} checkpoint {_shown(checkpoint_id)}"
            checkpoints.append(_checkpoint_row(checkpoint_id, parent, item.checkpoint, item.metadata or {}, where))
            for index, (task_id, channel, value) in enumerate(item.pending_writes or ()):
                writes.append(WriteRow(checkpoint_id, task_id, None, index, channel, value))
        return checkpoints, writes

    def subgraph_writes(self, thread_id: str) -> list[WriteRow]:
        """``SqliteThreads.subgraph_writes`` through the saver's API: the pending writes on
        ``SUBGRAPH_CHANNELS`` of the thread's checkpoints in other namespaces than its own."""
        writes: list[WriteRow] = []
        try:
            with self._safe():
                items = list(self.saver.list({"configurable": {"thread_id": thread_id}}))
        except ImportRefused as error:
            raise ImportRefused(f"thread {thread_id!r}: {error}") from None
        for item in items:
            configurable = item.config["configurable"]
            if not configurable.get("checkpoint_ns", ""):
                continue
            for index, (task_id, channel, value) in enumerate(item.pending_writes or ()):
                if channel in SUBGRAPH_CHANNELS:
                    writes.append(WriteRow(configurable["checkpoint_id"], task_id, None, index, channel, value))
        return writes

    def close(self) -> None:
        pass

    def _safe(self, lenient: bool = False) -> Any:
        saver = self.saver

        class _Swap:
            def __enter__(self) -> None:
                self.original = saver.serde
                saver.serde = _SafeSerde(lenient)

            def __exit__(self, *exc: object) -> None:
                saver.serde = self.original

        return _Swap()


# --- building a history ---------------------------------------------------------------------------


def build_history(
    thread_id: str, checkpoints: Sequence[CheckpointRow], writes: Sequence[WriteRow], code: CurrentCode,
    prompt_records: Sequence[PromptRecord] = (), parent_ns: str = "",
) -> ImportedThread:
    """The neutral history of ``thread_id``'s latest invocation (see the module docstring); ``parent_ns``:
    the checkpoint namespace of a nested run's checkpoints (``langgraph.nested``), which its task ids hash."""
    candidates = sorted(code.tasks)
    inputs = [c for c in checkpoints if c.source == "input"]
    if not inputs:
        raise ImportRefused(f"thread {thread_id!r}: no input checkpoint (not a functional-API thread?)")
    start = inputs[-1]
    notes: list[str] = []
    if len(inputs) > 1:
        notes.append(f"thread has {len(inputs)} invocations; the history is the latest one")
    own = [w for w in writes if w.checkpoint_id == start.id]
    step = start.step + 1
    entrypoint = _entrypoint_name(thread_id, checkpoints, own, start, step, code.entrypoints, parent_ns)
    entry_id = lg.entry_task_id(start.id, start.version, entrypoint, step, parent_ns)
    entry_writes = [w for w in own if w.task_id == entry_id]
    foreign = {w.task_id for w in own if w.task_path is not None and lg.parse_task_path(w.task_path)[0] == 0}
    foreign -= {entry_id, lg.NULL_TASK_ID}
    if foreign:
        raise ImportRefused(
            f"thread {thread_id!r}: the entrypoint task id recomputed for {entrypoint!r} ({entry_id}) is not the "
            f"recorded one ({', '.join(sorted(foreign))}); {lg.installed_version()} may derive ids differently "
            f"than the tested {lg.TESTED_RANGE}"
        )
    by_channel = {w.channel: w.value for w in entry_writes}
    # Task results: every write that is not the entrypoint's own and not the null task's (resume values).
    task_writes: dict[str, list[WriteRow]] = {}
    for write in own:
        if write.task_id in (entry_id, lg.NULL_TASK_ID) or write.channel not in (lg.RETURN, lg.ERROR):
            continue
        task_writes.setdefault(write.task_id, []).append(write)
    calls: list[tuple[int, str, WriteRow]] = []
    nested = 0
    unknown: list[str] = []
    unplaced = 0  # unknown calls of a saver without task paths: neither their index nor their depth is known
    ids = _CallIds(start, entrypoint, entry_id, step, candidates, len(task_writes) + _SPARE_CALL_INDEXES, parent_ns)
    outcomes = {task_id: next((r for r in rows if r.channel == lg.RETURN), rows[0]) for task_id, rows in task_writes.items()}
    pathless = ids.search({task_id for task_id, write in outcomes.items() if write.task_path is None})
    for task_id, outcome in outcomes.items():
        name: str | None
        if outcome.task_path is None:
            if task_id not in pathless:
                unknown.append(task_id)
                unplaced += 1
                continue
            depth, name, index = pathless[task_id]
        else:
            depth, parsed = lg.parse_task_path(outcome.task_path)
            if depth > 1:
                nested += 1
                continue
            if parsed is None:
                raise ImportRefused(f"thread {thread_id!r}: task {task_id} has no call index in {outcome.task_path!r}")
            index, name = parsed, ids.name_at(task_id, parsed)
            if name is None:
                unknown.append(task_id)
        if depth > 1:
            nested += 1
            continue
        calls.append((index, name or UNKNOWN_TASK, outcome))
    calls.sort(key=lambda c: c[0])
    gap = next((position for position, call in enumerate(calls) if call[0] != position), None)
    if gap is not None:
        # Call number ``gap`` has no recorded result (still running when the checkpoint was read, or
        # unknown to a saver without task paths): later results cannot be placed against the code.
        notes.append(
            f"call #{gap + 1} has no recorded result; the {len(calls) - gap} later recorded result(s) are left out"
        )
        calls = calls[:gap]
    events: list[dict[str, Any]] = []
    previous = start.channel_values.get(lg.PREVIOUS)
    if previous is not None:
        events.append({"kind": "side-effect", "name": "previous", "result": previous})
    used = calls_prompts(start, entrypoint, entry_id, calls, own, prompt_records)
    for index, name, write in calls:
        event: dict[str, Any] = {"kind": "step", "name": name}
        if write.channel == lg.ERROR:
            event["error"] = _error_info(write.value)
        elif write.value is not None:
            event["result"] = write.value
        if used is not None:
            # Every call of a thread with records says what it used (an empty list: no prompt).
            prompts = used.get(index, [])
            if prompts:
                event["prompt"] = {key: prompts[0][key] for key in ("name", "version", "params") if key in prompts[0]}
            event["prompts"] = prompts
        event["task_id"] = write.task_id
        event["call_index"] = index
        events.append(event)
    resumes = by_channel.get(lg.RESUME)
    if not isinstance(resumes, list):
        resumes = [] if resumes is None else [resumes]
    # LangGraph keeps one interrupt write per task, replaced at every interrupt: the latest interrupt's value.
    latest = _interrupt_values(by_channel[lg.INTERRUPT]) if lg.INTERRUPT in by_channel else []
    parked = lg.INTERRUPT in by_channel and lg.END not in by_channel and lg.ERROR not in by_channel
    signals: list[dict[str, Any]] = []
    for index, value in enumerate(resumes):
        signal: dict[str, Any] = {"kind": "signal", "name": "interrupt", "interrupt_index": index}
        if value is not None:
            signal["result"] = value
        signals.append(signal)
    if parked:
        # Where the run waits: the interrupt after the resumed ones, inside a task call if one raised it.
        pending: dict[str, Any] = {"kind": "signal", "name": "interrupt", "interrupt_index": len(resumes), "pending": True}
        inside = _interrupting_call(own, entry_id, ids)
        if inside is not None:
            pending["task"], pending["call_index"] = inside
        signals.append(pending)
    # A task's own interrupts bubble up into the entrypoint's write but are resumed through the task's
    # resume values: the latest value then belongs to no resumed interrupt of the entrypoint.
    in_tasks = any(w.channel == lg.INTERRUPT and w.task_id not in (entry_id, lg.NULL_TASK_ID) for w in own)
    if len(latest) == 1 and signals and (parked or not in_tasks):
        signals[-1]["interrupt_value"] = latest[0]
    elif len(latest) > 1:
        notes.append(f"{len(latest)} interrupts were pending at once; their values are not recorded")
    events.extend(signals)
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq
    document: dict[str, Any] = {
        "format": "replaytest-history",
        "format_version": 1,
        "workflow": {"type": entrypoint, "id": thread_id, "run_id": start.id, "engine": ENGINE},
        "status": "running",
        "input": start.channel_values.get(lg.START),
        "events": [{"seq": e.pop("seq"), **e} for e in events],
    }
    manifest = recorded_manifest(thread_id, start)
    if manifest is not None:
        document["prompt_manifest"] = manifest
    if lg.END in by_channel:
        document["status"] = "completed"
        if by_channel[lg.END] is not None:
            document["result"] = by_channel[lg.END]
    elif lg.ERROR in by_channel:
        document["status"] = "failed"
        document["error"] = _error_info(by_channel[lg.ERROR])
    elif lg.INTERRUPT in by_channel:
        document["status"] = "parked"
        notes.append(f"parked at interrupt #{len(resumes) + 1}" + (f" ({_short(latest[0])})" if latest else ""))
    if nested:
        notes.append(f"{nested} task result(s) of calls made inside task bodies (nested tasks) are part of their parent task")
    if unknown:
        notes.append(
            f"{len(unknown)} task call(s) match no @task name of the current code ({', '.join(candidates) or 'none given'}): "
            + (f"written as {UNKNOWN_TASK!r}" if not unplaced else
               "left out: this saver stores no task paths, so their call order is unknown too")
            + f" (task ids {', '.join(sorted(unknown))})"
        )
    return ImportedThread(thread_id, document, notes, unknown_tasks=len(unknown),
                          entry_ns=lg.entry_scope(entrypoint, entry_id, parent_ns)[0])


# --- per-call prompt records (``langgraph.recording``) --------------------------------------------

# ``langgraph.recording.RECORD_CHANNEL`` / ``RECORD_TASK_PREFIX``, repeated so that importing does not
# load the recorder.
PROMPT_RECORD_CHANNEL = "__replaytest_prompt__"
PROMPT_RECORD_PREFIX = "replaytest-prompt:"


@dataclass(frozen=True)
class PromptRecord:
    """One per-call prompt record, as the recorder wrote it (checked)."""

    checkpoint_id: str
    name: str
    version: str
    via: str  # "render" or "use_prompt" inside a task or node, "call" around a task call
    at: int
    params: dict[str, Any] | None = None
    namespace: str | None = None  # inside a task or node: its checkpoint namespace
    scope: str | None = None  # around a call: the caller's namespace, and the call's index
    call_index: int | None = None
    model: str | None = None
    source: str | None = None


def split_prompt_records(thread_id: str, writes: Sequence[WriteRow]) -> tuple[list[PromptRecord], list[WriteRow]]:
    """The thread's per-call prompt records and its other writes. A malformed record refuses the thread."""
    records: list[PromptRecord] = []
    rest: list[WriteRow] = []
    for write in writes:
        if write.channel != PROMPT_RECORD_CHANNEL:
            rest.append(write)
            continue
        where = f"thread {thread_id!r}: checkpoint {_shown(write.checkpoint_id)}: prompt record {_shown(write.task_id)}"
        value = write.value
        if not isinstance(value, dict):
            raise ImportRefused(f"{where} is {type(value).__name__}, not a map")
        fields: dict[str, Any] = {}
        for key, kinds, required in (
            ("name", str, True), ("version", str, True), ("via", str, True), ("at", int, True),
            ("params", dict, False), ("namespace", str, False), ("scope", str, False), ("call_index", int, False),
            ("model", str, False), ("source", str, False),
        ):
            item = value.get(key)
            if item is None and not required:
                continue
            if not isinstance(item, kinds) or isinstance(item, bool) or (kinds is str and required and not item):
                raise ImportRefused(f"{where}: $.{key} is {item!r}, not a {kinds.__name__}")
            fields[key] = item
        if ("namespace" in fields) == ("scope" in fields and "call_index" in fields):
            raise ImportRefused(f"{where}: names neither a task (namespace) nor a task call (scope, call_index)")
        records.append(PromptRecord(checkpoint_id=write.checkpoint_id, **fields))
    return records, rest


def calls_prompts(
    start: CheckpointRow, entrypoint: str, entry_id: str, calls: Sequence[tuple[int, str, WriteRow]],
    writes: Sequence[WriteRow], records: Sequence[PromptRecord],
) -> dict[int, list[dict[str, Any]]] | None:
    """{call index: the prompts that call used} from the records of this invocation (None: the thread
    has none, recorded before per-call records). Per prompt name, a record made inside the task's run
    wins over one made around its call; among those made inside, the latest (a task that ran again after
    an interrupt in its body); among those made around the call, the earliest (the entrypoint makes its
    calls again on every resume, answered from the stored results), or the latest for a call whose body
    was interrupted and ran again."""
    if not records:
        return None
    entry_ns = f"{entrypoint}:{entry_id}"
    by_task = {write.task_id: index for index, _, write in calls}
    rerun = {w.task_id for w in writes if w.channel == lg.INTERRUPT and w.task_id in by_task}
    chosen: dict[tuple[int, str], tuple[int, int, PromptRecord]] = {}
    for record in records:
        if record.checkpoint_id != start.id:
            continue
        index: int | None = None
        if record.namespace is not None:
            levels = lg.namespace_tasks(record.namespace)
            if len(levels) >= 2 and f"{levels[0][0]}:{levels[0][1]}" == entry_ns:
                index = by_task.get(levels[1][1])
            rank = (1, record.at)  # made inside the run: wins, latest first
        elif record.scope == entry_ns:
            index = record.call_index
            task_id = next((tid for tid, i in by_task.items() if i == index), None)
            rank = (0, record.at if task_id in rerun else -record.at)
        if index is None:
            continue
        key = (index, record.name)
        if key not in chosen or rank > chosen[key][:2]:
            chosen[key] = (*rank, record)
    used: dict[int, list[dict[str, Any]]] = {}
    for (index, _), (_, _, record) in sorted(chosen.items(), key=lambda item: (item[0][0], item[1][2].at)):
        entry: dict[str, Any] = {"name": record.name, "version": record.version}
        if record.params is not None:
            entry["params"] = record.params
        if record.model is not None:
            entry["model"] = record.model
        if record.source is not None:
            entry["source"] = record.source
        entry["via"] = record.via
        used.setdefault(index, []).append(entry)
    return used


def _entrypoint_name(
    thread_id: str, checkpoints: Sequence[CheckpointRow], writes: Sequence[WriteRow], start: CheckpointRow, step: int,
    candidates: Iterable[str], parent_ns: str = "",
) -> str:
    """From the task paths, else the node a later checkpoint saw consume the input (never the first key
    of ``versions_seen``: it lists the @task names too, in no reliable order), else the current entrypoint
    whose recomputed task id wrote to this invocation (savers without task paths, a thread never completed)."""
    names = set()
    for write in writes:
        if write.task_path:
            parts = [p.strip() for p in write.task_path.split(",")]
            if f"~{lg.PULL}" in parts and parts.index(f"~{lg.PULL}") + 1 < len(parts):
                names.add(parts[parts.index(f"~{lg.PULL}") + 1])
    if not names:
        for checkpoint in checkpoints:
            names.update(checkpoint.started_nodes)
    if not names:
        task_ids = {write.task_id for write in writes}
        names.update(name for name in candidates if lg.entry_task_id(start.id, start.version, name, step, parent_ns) in task_ids)
    if len(names) != 1 or lg.START in names:
        raise ImportRefused(
            f"thread {thread_id!r}: cannot tell the entrypoint's name from the checkpoints "
            f"(found {', '.join(sorted(names)) or 'none'}); is this a functional-API (@entrypoint) thread?"
        )
    return names.pop()


class _CallIds:
    """Names recorded task calls by recomputing their ids with each candidate ``@task`` name. With a task
    path the call index is known; without one (older savers, saver objects) every index up to
    ``max_index`` is tried, from the entrypoint and then from inside each task found (nested calls)."""

    def __init__(
        self, start: CheckpointRow, entrypoint: str, entry_id: str, step: int, candidates: Sequence[str], max_index: int,
        parent_ns: str = "",
    ) -> None:
        self.checkpoint = (start.id, start.version)
        self.step = step
        self.root = lg.entry_scope(entrypoint, entry_id, parent_ns)
        self.candidates = candidates
        self.max_index = max_index

    def _id(self, scope: tuple[str, str], name: str, index: int) -> str:
        return lg.scoped_task_id(*self.checkpoint, scope, self.step, name, index)

    def name_at(self, task_id: str, index: int) -> str | None:
        """The candidate name the entrypoint's call number ``index`` had, if its id is ``task_id``."""
        return next((name for name in self.candidates if self._id(self.root, name, index) == task_id), None)

    def search(self, task_ids: set[str]) -> dict[str, tuple[int, str, int]]:
        """{task id: (depth, name, call index)} for the ids some candidate explains (depth 1: called by
        the entrypoint; 2 and more: called inside a task)."""
        found: dict[str, tuple[int, str, int]] = {}
        scopes = [(self.root, 1)]
        while scopes and len(found) < len(task_ids):
            scope, depth = scopes.pop()
            for index in range(self.max_index):
                for name in self.candidates:
                    task_id = self._id(scope, name, index)
                    if task_id in task_ids and task_id not in found:
                        found[task_id] = (depth, name, index)
                        scopes.append((lg.child_scope(scope, name, task_id, index), depth + 1))
        return found


def _error_info(value: Any) -> dict[str, str]:
    """A stored task failure — LangGraph keeps ``repr(exception)`` — as ``{type, message}``."""
    text = value if isinstance(value, str) else json.dumps(value)
    match = _EXCEPTION_TEXT.match(text)
    if not match:
        return {"type": "Exception", "message": text}
    type_name, inner = match.groups()
    try:
        literal = ast.literal_eval(inner) if inner else ""
    except (ValueError, SyntaxError):
        literal = inner
    return {"type": type_name.rsplit(".", 1)[-1], "message": literal if isinstance(literal, str) else inner}


def _interrupting_call(writes: Sequence[WriteRow], entry_id: str, ids: _CallIds) -> tuple[str, int] | None:
    """(task name, call index) of the entrypoint's task call whose body raised the pending interrupt,
    or None when the entrypoint's own code raised it (or no candidate name explains the call)."""
    for write in writes:
        if write.channel != lg.INTERRUPT or write.task_id in (entry_id, lg.NULL_TASK_ID):
            continue
        if write.task_path is not None:
            depth, index = lg.parse_task_path(write.task_path)
            name = ids.name_at(write.task_id, index) if depth == 1 and index is not None else None
        else:
            depth, name, index = ids.search({write.task_id}).get(write.task_id, (0, None, None))
        if depth == 1 and name is not None and index is not None:
            return name, index
    return None


def _interrupt_values(value: Any) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("$value"), dict):
            out.append(item["$value"].get("value"))
        else:
            out.append(item)
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the current code's candidate task names ------------------------------------------------------


@dataclass(frozen=True)
class CurrentCode:
    """The names the current code gives its ``@task`` functions and ``@entrypoint``s: the candidates
    recorded task ids are recomputed with."""

    tasks: frozenset[str] = frozenset()
    entrypoints: frozenset[str] = frozenset()


def current_code(objects: Iterable[Any], task_names: Iterable[str] = ()) -> CurrentCode:
    """Every ``@task`` and ``@entrypoint`` in the modules (and their package's already imported modules)
    of the given entrypoints, modules or task objects, plus ``task_names``."""
    tasks: set[str] = set(task_names)
    entrypoints: set[str] = set()
    prefixes: set[str] = set()
    for obj in objects:
        if lg.is_task_function(obj):
            tasks.add(lg.task_name_of(obj))
            continue
        module_name = getattr(obj, "__name__", None) if isinstance(obj, type(sys)) else None
        if module_name is None:
            node = lg.entrypoint_node(obj)
            if node is not None:
                entrypoints.add(node[0])
            function = (getattr(node[1], "func", None) or getattr(node[1], "afunc", None)) if node else None
            module_name = getattr(function, "__module__", None) or getattr(obj, "__module__", None)
        if module_name:
            prefixes.add(module_name.split(".")[0])
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name.split(".")[0] not in prefixes:
            continue
        for value in list(vars(module).values()):
            if lg.is_task_function(value):
                tasks.add(lg.task_name_of(value))
            elif (node := lg.entrypoint_node(value)) is not None:
                entrypoints.add(node[0])
    return CurrentCode(frozenset(tasks), frozenset(entrypoints))


# --- writing files --------------------------------------------------------------------------------


def history_filename(entrypoint: str, thread_id: str) -> str:
    """``<entrypoint>-<thread id>.json``, collision-free (``import_files.history_file_name``)."""
    from replaytest.plugins.import_files import history_file_name

    return history_file_name(entrypoint, thread_id, separator="-")


def recorded_run(document: Any) -> RunKey | None:
    """The thread a LangGraph history file records (entrypoint and thread id: one history per thread, so
    a later invocation of the same thread is a re-import)."""
    from replaytest.plugins.import_files import neutral_run

    return neutral_run(document, engine=ENGINE, label="thread")


class ThreadSource(Protocol):
    """What ``iter_threads`` reads: ``SqliteThreads``, ``SaverThreads``, ``langgraph.postgres.PostgresThreads``."""

    def thread_ids(self, limit: int | None) -> list[str]: ...

    def read(self, thread_id: str) -> tuple[list[CheckpointRow], list[WriteRow]]: ...

    def close(self) -> None: ...


def iter_threads(
    source: ThreadSource, thread_ids: Sequence[str], limit: int | None, code: CurrentCode,
    graphs: Sequence[Any] = (),
) -> Iterator[ImportedThread | ImportRefused]:
    """Each selected thread's history, or the reason it could not be imported. A graph-API thread becomes a
    graph history (``langgraph.graph_import``; ``graphs``: the current graphs' ``GraphCode``)."""
    from replaytest.plugins.langgraph.graph_import import build_graph_history, is_graph_thread

    for thread_id in thread_ids or source.thread_ids(limit):
        try:
            checkpoints, writes = source.read(thread_id)
            if not checkpoints:
                raise ImportRefused(f"thread {thread_id!r}: no checkpoints")
            # Per-call prompt records are no task's writes: kept apart before anything reads the writes.
            records, writes = split_prompt_records(thread_id, writes)
            if is_graph_thread(checkpoints, writes):
                # Subgraph checkpoints, where the nodes of a subgraph record their prompts; None: this
                # source cannot read them (the graph check then says so).
                read_subgraphs = getattr(source, "subgraph_writes", None)
                subgraph_writes = read_subgraphs(thread_id) if read_subgraphs is not None else None
                graph_thread = build_graph_history(thread_id, checkpoints, writes, graphs, prompt_records=records,
                                                   subgraph_writes=subgraph_writes)
                # The subgraphs its parked nodes run: read where the source can (``langgraph.nested``).
                if hasattr(source, "read_namespace") and graph_thread.document["status"] == "parked":
                    from replaytest.plugins.langgraph.nested import attach_subgraph_runs

                    attach_subgraph_runs(source, graph_thread)  # type: ignore[arg-type]
                yield graph_thread
                continue
            imported = build_history(thread_id, checkpoints, writes, code, prompt_records=records)
            # Graphs the entrypoint's own code invoked, read where the source can (``langgraph.nested``).
            if hasattr(source, "read_namespace"):
                from replaytest.plugins.langgraph.nested import (
                    attach_nested_runs,
                    nested_runs,
                    record_nested_namespaces,
                )

                runs = nested_runs(source, imported)  # type: ignore[arg-type]
                attach_nested_runs(imported, runs, code)
                record_nested_namespaces(imported, runs)
            yield imported
        except ImportRefused as error:
            yield error
        except RecursionError:
            # Decoded values are at most DecodeBudget.max_depth deep, so this is a safety net, not a path.
            yield ImportRefused(f"thread {thread_id!r}: a stored value nests too deeply to import")


def write_histories(
    imported: Iterable[ImportedThread | ImportRefused], out: Path, redactor: Redactor | None = None
) -> tuple[list[tuple[Path, ImportedThread]], list[str]]:
    """Write each history into ``out`` (validated by the neutral loader first, payloads redacted by
    ``redactor``); returns (written, refusals)."""
    from replaytest.history import HistoryError, history_from_dict, redact_history, save_history
    from replaytest.plugins.import_files import ImportCollision, ImportFolder, neutral_key

    out.mkdir(parents=True, exist_ok=True)
    folder = ImportFolder(out, recorded_run)
    written: list[tuple[Path, ImportedThread]] = []
    refused: list[str] = []
    for item in imported:
        if isinstance(item, ImportRefused):
            refused.append(str(item))
            continue
        entrypoint = item.document["workflow"]["type"]
        try:
            history = history_from_dict(item.document, out / history_filename(entrypoint, item.thread_id))
            if redactor is not None:
                history, replaced = redact_history(history, redactor)
                if replaced:
                    item.notes.append(f"{replaced} value(s) redacted")
            # Named after the thread id as written (redacted), so the name shows nothing the history hides.
            written_id = history.workflow.id
            path = folder.claim(history_filename(entrypoint, written_id), neutral_key(ENGINE, entrypoint, written_id, label="thread"))
            save_history(history, path)
        except ImportCollision as collision:
            refused.append(str(collision))
            continue
        except HistoryError as error:
            refused.append(f"thread {item.thread_id!r}: {error}")
            continue
        written.append((path, item))
    return written, refused


def histories_from_saver(
    saver: Any, out: Path, *, workflows: Iterable[Any] = (), task_names: Iterable[str] = (),
    thread_ids: Sequence[str] = (), limit: int | None = None, redactor: Redactor | None = None,
) -> tuple[list[tuple[Path, ImportedThread]], list[str]]:
    """Import threads from a ``BaseCheckpointSaver`` object (any saver; a ``SqliteSaver`` or ``PostgresSaver``
    is read with SQL on its own connection, for its task paths; an async saver is refused: its connection
    belongs to its event loop, so ``langgraph.async_savers.ahistories_from_saver`` reads it). ``workflows`` are the
    current ``@entrypoint`` objects (or modules) whose ``@task`` names identify the recorded calls;
    ``task_names`` adds names; ``redactor`` (``replaytest.history.Redactor``) scrubs payloads. Returns what was
    written and the threads that were refused (with reasons)."""
    problem = lg.version_problem()
    if problem:
        raise ImportRefused(problem)
    from replaytest.plugins.langgraph import postgres as langgraph_postgres
    from replaytest.plugins.langgraph.async_savers import is_async_saver

    if is_async_saver(saver):
        raise ImportRefused(
            f"{type(saver).__name__} is an async saver: use "
            "await replaytest.plugins.langgraph.async_savers.ahistories_from_saver(saver, out, ...)"
        )
    workflows = list(workflows)
    code = current_code(workflows, task_names)
    from replaytest.plugins.langgraph.graph_import import graph_code

    graphs = graph_code(workflows)
    conn = getattr(saver, "conn", None)
    source: ThreadSource
    if isinstance(conn, sqlite3.Connection):
        source = _SqliteConnection(conn)
    elif langgraph_postgres.is_postgres_saver(saver):
        source = langgraph_postgres.PostgresThreads.of_saver(saver)  # SQL, for the task paths
    else:
        source = SaverThreads(saver)
    try:
        return write_histories(iter_threads(source, thread_ids, limit, code, graphs), out, redactor)
    finally:
        source.close()


class _SqliteConnection(SqliteThreads):
    """``SqliteThreads`` over a ``SqliteSaver``'s own open connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.path = Path("<SqliteSaver>")
        self.conn = conn

    def close(self) -> None:
        pass


@click.command("langgraph")
@click.option("--checkpointer", required=True, metavar="sqlite:///PATH|postgresql://…",
              help="The SqliteSaver file or PostgresSaver database to read (read-only).")
@click.option("--thread-id", "thread_ids", multiple=True, metavar="ID", help="Import this thread (repeatable; default: every thread).")
@click.option("--limit", type=click.IntRange(min=1), help="Import the N most recently checkpointed threads.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the history files.")
@click.option("--workflows", "workflow_specs", multiple=True, metavar="MODULE:ATTR",
              help="The current @entrypoint(s) whose @task names identify recorded calls, or the StateGraph whose nodes and channels are recorded (default: [tool.replaytest.replay] workflows).")
@click.option("--task-name", "extra_names", multiple=True, metavar="NAME", help="Another @task name to try (repeatable).")
@click.option("--redact-key", "keys", multiple=True, metavar="NAME", help="Key name to scrub in values (repeatable; default: [tool.replaytest.redact] or common secret fields).")
@click.option("--redact-path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub in the history, e.g. $.input.email (repeatable).")
@click.option("--no-redact", is_flag=True, help="Write values as the checkpointer stores them.")
def import_command(
    checkpointer: str, thread_ids: tuple[str, ...], limit: int | None, out_dir: Path, workflow_specs: tuple[str, ...],
    extra_names: tuple[str, ...], keys: tuple[str, ...], paths: tuple[str, ...], no_redact: bool,
) -> None:
    """Import LangGraph threads (functional API and StateGraph) from a SqliteSaver or PostgresSaver into OUT,
    one history per thread."""
    if thread_ids and limit:
        fail("--thread-id and --limit exclude each other")
    postgres = checkpointer.startswith(POSTGRES_SCHEMES)
    if not checkpointer.startswith("sqlite:///") and not postgres:
        fail(f"--checkpointer {checkpointer!r}: the command line reads sqlite:///PATH (SqliteSaver) or "
              "postgresql://USER@HOST:PORT/DATABASE (PostgresSaver); "
              "other savers: replaytest.plugins.langgraph.importer.histories_from_saver(saver, out)")
    problem = lg.version_problem()
    if problem:
        fail(problem)
    from replaytest.config import ConfigError, load_config
    from replaytest.replay.runner import WorkflowImportError, load_workflows

    try:
        config = load_config()
        if workflow_specs:
            workflows = load_workflows(workflow_specs, Path.cwd())
        else:
            workflows = load_workflows(config.replay.workflows, config.root)
    except (ConfigError, WorkflowImportError) as error:
        fail(str(error))
    # Pseudonyms as for every engine: an e-mail keeps its domain, so code branching on it replays.
    redactor = import_redactor(no_redact, keys, paths, config.redact)
    code = current_code(workflows.objects, extra_names)
    from replaytest.plugins.langgraph.graph_import import graph_code

    graphs = graph_code(workflows.objects)
    if not code.tasks and not graphs:
        click.echo("warning: no @task names known (give --workflows or --task-name); every call will be unnamed", err=True)
    source: ThreadSource
    try:
        if postgres:
            source = _postgres_threads(checkpointer)
        else:
            source = SqliteThreads(Path(checkpointer[len("sqlite:///"):]))
    except (ImportRefused, sqlite3.Error) as error:
        fail(str(error))
    try:
        written, refused = write_histories(iter_threads(source, thread_ids, limit, code, graphs), out_dir, redactor)
    except ImportRefused as error:  # the threads could not even be listed (a Postgres role that may not read)
        fail(str(error))
    finally:
        source.close()
    for path, item in written:
        document = item.document
        click.echo(f"{path}: {document['workflow']['type']} thread {item.thread_id!r} {document['status']}, "
                   f"{len(document['events'])} event(s)", err=True)
        for note in item.notes:
            click.echo(f"  note: {note}", err=True)
    for reason in refused:
        click.echo(f"error: {reason}", err=True)
    unknown = sum(item.unknown_tasks for _, item in written)
    click.echo(f"imported {histories_counted(len(written))} into {out_dir}"
               + (f"; {len(refused)} thread(s) refused" if refused else "")
               + (f"; {unknown} task call(s) unnamed" if unknown else ""))
    if refused or unknown:
        sys.exit(EXIT_ERROR)


def _postgres_threads(url: str) -> ThreadSource:
    try:
        import psycopg  # noqa: F401 - the driver the postgres extra installs
    except ImportError:
        raise ImportRefused(
            f"--checkpointer {url.split('://')[0]}://…: reading a PostgresSaver database needs psycopg; "
            "install replaytest[langgraph-postgres]"
        ) from None
    from replaytest.plugins.langgraph.postgres import PostgresThreads

    return PostgresThreads.connect(url)


