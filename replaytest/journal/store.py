"""``Journal``: the SQLite store of runs, their recorded commands and their signals.

Three tables: ``runs`` (one row per run: status, input, result, lease), ``events`` (one row per recorded
command, keyed by run and position) and ``signals`` (arrivals, consumed in order). The database is in
WAL mode and every write is its own ``BEGIN IMMEDIATE`` transaction, so a step's result is committed
before the next step starts and writers from several processes serialise.

Fencing: a worker owns a run through a lease (``lease_owner``, ``lease_expires``) and an epoch
(``lease_epoch``) that grows by one on every claim. Every write a worker makes on behalf of a run names
the epoch it claimed with; inside the write transaction the epoch is compared with the run's current one
and a mismatch raises ``StaleLeaseError`` — so a worker that stalled past its lease and was taken over
can never append to the run again. A successful append also extends the lease, and while a step runs
the worker's heartbeat thread extends it through ``renew`` on a second connection (``reopen``), fenced
the same way: a renewal never revives a lease another worker has claimed, nor one its holder released.

Durability: ``synchronous=NORMAL`` (the default here) survives process crashes (SIGKILL) with every
committed transaction intact; pass ``synchronous="FULL"`` to survive power loss too.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replaytest.history.model import ErrorInfo, Event, History, PromptRef, Waiting, WorkflowInfo
from replaytest.journal.context import RunInfo
from replaytest.journal.errors import StaleLeaseError
from replaytest.journal.workflow import definition_of
from replaytest.prompts import prompt_manifest

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    workflow_type TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    code_version TEXT,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    error TEXT,
    lease_owner TEXT,
    lease_expires REAL,
    lease_epoch INTEGER NOT NULL DEFAULT 0,
    wake_at REAL,
    waiting_signal TEXT,
    continued_to TEXT,
    prompt_manifest TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_ready ON runs (status, wake_at, created_at);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    args_digest TEXT,
    prompt_name TEXT,
    prompt_version TEXT,
    prompt_params TEXT,
    idempotency_key TEXT,
    patch_id TEXT,
    patch_deprecated INTEGER,
    result TEXT,
    error TEXT,
    duration_s REAL,
    due_at REAL,
    epoch INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS signals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    payload TEXT,
    consumed_seq INTEGER
);
CREATE INDEX IF NOT EXISTS signals_pending ON signals (run_id, name, consumed_seq, id);
"""

# Database status -> neutral history status. A run that is ready or being executed is "running".
_STATUSES = {"running": "running", "parked": "parked", "completed": "completed", "failed": "failed"}


@dataclass(frozen=True)
class Claim:
    """A lease on one run: appends must carry ``epoch``."""

    run: RunInfo
    epoch: int
    worker_id: str


@dataclass(frozen=True)
class EventRow:
    """One recorded command as the live backend reads it back. ``state`` is ``done`` or ``pending`` (a
    timer not yet fired, a signal not yet received: ``due_at`` is when it fires / times out)."""

    seq: int
    kind: str
    name: str
    state: str
    result: Any = None
    error: ErrorInfo | None = None
    patch_id: str | None = None
    due_at: float | None = None


def dumps(value: Any) -> str:
    """The stored JSON form (compact, UTF-8, order kept). TypeError/ValueError for non-JSON values."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _error_json(error: ErrorInfo | None) -> str | None:
    return None if error is None else dumps({"type": error.type, "message": error.message})


def _error_of(text: str | None) -> ErrorInfo | None:
    if text is None:
        return None
    data = json.loads(text)
    return ErrorInfo(type=data["type"], message=data["message"])


class Journal:
    """A journal database. ``path`` may be ``":memory:"`` (one process, e.g. experiments and tests).

    ``clock`` (epoch seconds) decides leases and timers; tests pass a fake one.
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL"):
            raise ValueError("synchronous must be OFF, NORMAL or FULL")
        self.path = str(path)
        self.clock = clock
        self.synchronous = synchronous
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=60.0, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout = 60000")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute(f"PRAGMA synchronous = {synchronous}")
        self._db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Add what later versions store to a database created by an earlier one."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        if "prompt_manifest" not in columns:
            with self._write():
                columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
                if "prompt_manifest" not in columns:  # another process may have just added it
                    self._db.execute("ALTER TABLE runs ADD COLUMN prompt_manifest TEXT")
        event_columns = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
        if "patch_deprecated" not in event_columns:
            with self._write():
                event_columns = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
                if "patch_deprecated" not in event_columns:
                    self._db.execute("ALTER TABLE events ADD COLUMN patch_deprecated INTEGER")
        if "prompt_params" not in event_columns:
            with self._write():
                event_columns = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
                if "prompt_params" not in event_columns:
                    self._db.execute("ALTER TABLE events ADD COLUMN prompt_params TEXT")

    @property
    def shareable(self) -> bool:
        """Whether another connection reaches the same database (false for ``":memory:"`` and ``""``,
        which are private to their connection)."""
        return self.path not in ("", ":memory:")

    def reopen(self) -> Journal:
        """Another connection to the same database, with the same clock and durability: for another
        thread (a connection must not be shared by threads that each run transactions)."""
        if not self.shareable:
            raise ValueError(f"a {self.path or 'temporary'!r} journal cannot be reopened: it is private to its connection")
        return Journal(self.path, clock=self.clock, synchronous=self.synchronous)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ---------------------------------------------------------------------------
    def _write(self) -> _WriteTx:
        return _WriteTx(self._db)

    def _check_epoch(self, run_id: str, epoch: int) -> None:
        row = self._db.execute("SELECT lease_epoch FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        current = None if row is None else row[0]
        if current != epoch:
            raise StaleLeaseError(run_id, epoch, current)

    # -- starting and signalling ----------------------------------------------------------------
    def start(self, workflow: Any, input: Any = None, *, run_id: str | None = None, workflow_id: str | None = None) -> str:
        """Create a run of ``workflow`` (a decorated function or a workflow name) and return its id.

        Starting with an existing ``run_id`` returns it without creating a second run, so a caller that
        crashed between start and bookkeeping can simply start again.
        """
        definition = definition_of(workflow)
        if definition is None and not isinstance(workflow, str):
            raise TypeError(f"{workflow!r} is neither a @workflow function nor a workflow name")
        name = definition.name if definition is not None else workflow
        version = definition.version if definition is not None else None
        # The prompts this run can use, as they are now: replaying the run while it is unfinished tells
        # which of them changed since (see replaytest.prompts). A bare name has no code to look at.
        manifest = dumps(prompt_manifest(definition.fn)) if definition is not None else None
        run_id = run_id or uuid.uuid4().hex
        now = self.clock()
        with self._write():
            self._db.execute(
                "INSERT OR IGNORE INTO runs (run_id, workflow_type, workflow_id, code_version, input, status,"
                " prompt_manifest, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                (run_id, name, workflow_id or run_id, version, dumps(input), manifest, now, now),
            )
        return run_id

    def signal(self, run_id: str, name: str, payload: Any = None) -> None:
        """Deliver signal ``name`` to a run; a run parked waiting for it becomes ready at once."""
        with self._write():
            if self._db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise KeyError(f"no run {run_id!r}")
            self._db.execute("INSERT INTO signals (run_id, name, payload) VALUES (?, ?, ?)", (run_id, name, dumps(payload)))
            self._db.execute(
                "UPDATE runs SET status = 'running', wake_at = NULL, waiting_signal = NULL, updated_at = ?"
                " WHERE run_id = ? AND status = 'parked' AND waiting_signal = ?",
                (self.clock(), run_id, name),
            )

    # -- leases -----------------------------------------------------------------------------------
    def claim(self, worker_id: str, lease_s: float, run_id: str | None = None) -> Claim | None:
        """Lease the oldest ready run (or ``run_id``, if ready): a running run whose lease is free or
        expired, or a parked run whose wake time has come. Returns None when nothing is ready."""
        now = self.clock()
        ready = (
            "((status = 'running' AND (lease_expires IS NULL OR lease_expires <= :now))"
            " OR (status = 'parked' AND wake_at IS NOT NULL AND wake_at <= :now))"
        )
        with self._write():
            if run_id is None:
                row = self._db.execute(
                    f"SELECT run_id FROM runs WHERE {ready} ORDER BY created_at, run_id LIMIT 1", {"now": now}
                ).fetchone()
            else:
                row = self._db.execute(f"SELECT run_id FROM runs WHERE run_id = :run AND {ready}", {"now": now, "run": run_id}).fetchone()
            if row is None:
                return None
            self._db.execute(
                "UPDATE runs SET status = 'running', lease_owner = ?, lease_expires = ?, lease_epoch = lease_epoch + 1,"
                " wake_at = NULL, waiting_signal = NULL, updated_at = ? WHERE run_id = ?",
                (worker_id, now + lease_s, now, row[0]),
            )
            run = self._db.execute(
                "SELECT run_id, workflow_type, workflow_id, input, code_version, lease_epoch FROM runs WHERE run_id = ?", (row[0],)
            ).fetchone()
        info = RunInfo(workflow_type=run[1], workflow_id=run[2], run_id=run[0], input=_loads(run[3]), code_version=run[4])
        return Claim(run=info, epoch=run[5], worker_id=worker_id)

    def renew(self, claim: Claim, lease_s: float) -> bool:
        """Extend the lease to ``lease_s`` from now (the heartbeat), fenced like an append:
        ``StaleLeaseError`` if another worker has claimed the run since. False, changing nothing, when
        the claim's holder has already released the run (parked, finished, continued): a late renewal
        must not lease a run that is free, or one a signal has just made ready, to nobody."""
        run_id = claim.run.run_id
        with self._write():
            renewed = self._db.execute(
                "UPDATE runs SET lease_expires = ? WHERE run_id = ? AND lease_epoch = ? AND lease_owner IS NOT NULL",
                (self.clock() + lease_s, run_id, claim.epoch),
            ).rowcount
            if renewed != 1:
                self._check_epoch(run_id, claim.epoch)
        return renewed == 1

    # -- recorded commands ------------------------------------------------------------------------
    def events(self, run_id: str) -> dict[int, EventRow]:
        rows = self._db.execute(
            "SELECT seq, kind, name, state, result, error, patch_id, due_at FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        return {
            row[0]: EventRow(
                seq=row[0], kind=row[1], name=row[2], state=row[3], result=_loads(row[4]), error=_error_of(row[5]),
                patch_id=row[6], due_at=row[7],
            )
            for row in rows
        }

    def append(
        self,
        claim: Claim,
        event: Event,
        *,
        state: str = "done",
        due_at: float | None = None,
        lease_s: float | None = None,
        result_json: str | None = None,
    ) -> None:
        """Record (or complete a pending) command of the claimed run, fenced by the claim's epoch; with
        ``lease_s`` the lease is extended too. ``result_json`` is ``event.result`` already encoded."""
        with self._write():
            self._append(claim, event, state, due_at, lease_s, result_json)

    def _append(
        self, claim: Claim, event: Event, state: str, due_at: float | None, lease_s: float | None, result_json: str | None = None
    ) -> None:
        run_id = claim.run.run_id
        # The fencing check and the heartbeat in one statement: it matches only under the claimed epoch.
        expires = None if lease_s is None else self.clock() + lease_s
        fenced = self._db.execute(
            "UPDATE runs SET lease_expires = COALESCE(?, lease_expires) WHERE run_id = ? AND lease_epoch = ?",
            (expires, run_id, claim.epoch),
        )
        if fenced.rowcount != 1:
            self._check_epoch(run_id, claim.epoch)
        if result_json is None and event.result is not None:
            result_json = dumps(event.result)
        self._db.execute(
            "INSERT OR REPLACE INTO events (run_id, seq, kind, name, state, args_digest, prompt_name, prompt_version,"
            " prompt_params, idempotency_key, patch_id, patch_deprecated, result, error, duration_s, due_at, epoch)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, event.seq, event.kind, event.name, state, event.args_digest,
                event.prompt.name if event.prompt else None, event.prompt.version if event.prompt else None,
                dumps(dict(event.prompt.params)) if event.prompt and event.prompt.params is not None else None,
                event.idempotency_key, event.patch_id, 1 if event.extra.get("deprecated") is True else None, result_json, _error_json(event.error), event.duration_s, due_at,
                claim.epoch,
            ),
        )

    def take_signal(self, claim: Claim, event: Event, lease_s: float | None = None) -> tuple[bool, Any]:
        """Consume the oldest pending signal named ``event.name`` and record it as ``event``'s result, in
        one fenced transaction. Returns (found, payload)."""
        run_id = claim.run.run_id
        with self._write():
            self._check_epoch(run_id, claim.epoch)
            row = self._db.execute(
                "SELECT id, payload FROM signals WHERE run_id = ? AND name = ? AND consumed_seq IS NULL ORDER BY id LIMIT 1",
                (run_id, event.name),
            ).fetchone()
            if row is None:
                return False, None
            self._db.execute("UPDATE signals SET consumed_seq = ? WHERE id = ?", (event.seq, row[0]))
            payload = _loads(row[1])
            self._append(claim, Event(seq=event.seq, kind=event.kind, name=event.name, result=payload), "done", None, lease_s)
        return True, payload

    # -- ending an execution ----------------------------------------------------------------------
    def finish(self, claim: Claim, status: str, result: Any = None, error: ErrorInfo | None = None) -> None:
        """Mark the claimed run completed or failed and release its lease (fenced)."""
        if status not in ("completed", "failed"):
            raise ValueError(f"finish status must be completed or failed, not {status!r}")
        with self._write():
            self._check_epoch(claim.run.run_id, claim.epoch)
            self._db.execute(
                "UPDATE runs SET status = ?, result = ?, error = ?, lease_owner = NULL, lease_expires = NULL,"
                " code_version = COALESCE(?, code_version), updated_at = ? WHERE run_id = ?",
                (status, None if result is None else dumps(result), _error_json(error), claim.run.code_version, self.clock(), claim.run.run_id),
            )

    def park(self, claim: Claim, wake_at: float | None, signal: str | None) -> None:
        """Release the claimed run until ``wake_at`` or until ``signal`` arrives (fenced). A signal that
        arrived while the run was executing makes it ready again immediately instead."""
        run_id = claim.run.run_id
        with self._write():
            self._check_epoch(run_id, claim.epoch)
            arrived = signal is not None and self._db.execute(
                "SELECT 1 FROM signals WHERE run_id = ? AND name = ? AND consumed_seq IS NULL LIMIT 1", (run_id, signal)
            ).fetchone()
            status = "running" if arrived else "parked"
            self._db.execute(
                "UPDATE runs SET status = ?, wake_at = ?, waiting_signal = ?, lease_owner = NULL, lease_expires = NULL,"
                " code_version = COALESCE(?, code_version), updated_at = ? WHERE run_id = ?",
                (status, wake_at, None if arrived else signal, claim.run.code_version, self.clock(), run_id),
            )

    def continue_as_new(self, claim: Claim, input: Any, manifest: Mapping[str, str] | None = None) -> str:
        """Complete the claimed run and start its successor (same workflow id, new run id); fenced.
        ``manifest``: the prompts of the code that continues it (default: the predecessor's)."""
        run = claim.run
        new_id = uuid.uuid4().hex
        now = self.clock()
        with self._write():
            self._check_epoch(run.run_id, claim.epoch)
            self._db.execute(
                "UPDATE runs SET status = 'completed', continued_to = ?, lease_owner = NULL, lease_expires = NULL,"
                " code_version = COALESCE(?, code_version), updated_at = ? WHERE run_id = ?",
                (new_id, run.code_version, now, run.run_id),
            )
            self._db.execute(
                "INSERT INTO runs (run_id, workflow_type, workflow_id, code_version, input, status, prompt_manifest,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'running',"
                " COALESCE(?, (SELECT prompt_manifest FROM runs WHERE run_id = ?)), ?, ?)",
                (new_id, run.workflow_type, run.workflow_id, run.code_version, dumps(input),
                 None if manifest is None else dumps(manifest), run.run_id, now, now),
            )
        return new_id

    # -- reading ----------------------------------------------------------------------------------
    def status(self, run_id: str) -> str:
        """The run's neutral status: completed, failed, running (ready or executing) or parked."""
        return _STATUSES[self._run_row(run_id)["status"]]

    def result(self, run_id: str) -> Any:
        return _loads(self._run_row(run_id)["result"])

    def error(self, run_id: str) -> ErrorInfo | None:
        return _error_of(self._run_row(run_id)["error"])

    def successor(self, run_id: str) -> str | None:
        """The run this one continued as new into, if any."""
        return self._run_row(run_id)["continued_to"]

    def next_wake(self) -> float | None:
        """The earliest time a parked run becomes due (timers and signal timeouts), if any."""
        row = self._db.execute("SELECT MIN(wake_at) FROM runs WHERE status = 'parked'").fetchone()
        return row[0]

    def run_ids(self, status: str | None = None) -> list[str]:
        query = "SELECT run_id FROM runs" + (" WHERE status = ?" if status else "") + " ORDER BY created_at, run_id"
        return [row[0] for row in self._db.execute(query, (status,) if status else ())]

    def _run_row(self, run_id: str) -> dict[str, Any]:
        cursor = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        row = cursor.fetchone()
        if row is None:
            raise KeyError(f"no run {run_id!r}")
        return dict(zip((column[0] for column in cursor.description), row))

    def _waiting(self, run_id: str, seq: int) -> Waiting | None:
        """The pending timer or signal wait a parked run stands at, right after its completed events."""
        row = self._db.execute(
            "SELECT kind, name, duration_s FROM events WHERE run_id = ? AND seq = ? AND state = 'pending'", (run_id, seq)
        ).fetchone()
        if row is None or row[0] not in ("signal", "timer"):
            return None
        return Waiting(row[0], row[1], row[2] if row[0] == "timer" else None)

    def export(self, run_id: str) -> History:
        """The run as a neutral history (any status). Pending timers and signal waits are not events;
        a parked run's pending wait is its ``waiting``, so a replay can check the code still reaches it.

        Concurrent steps of an async workflow (``asyncio.gather``) can complete out of order; a run caught
        between them has a later position done and an earlier one not. The history holds the completed
        prefix only, which is where a resume would stand (the later result is still in the journal)."""
        run = self._run_row(run_id)
        events: list[Event] = []
        prompts: dict[str, str] = {}
        rows = self._db.execute(
            "SELECT seq, kind, name, args_digest, prompt_name, prompt_version, idempotency_key, patch_id, result, error,"
            " duration_s, patch_deprecated, prompt_params FROM events WHERE run_id = ? AND state = 'done' ORDER BY seq",
            (run_id,),
        )
        for row in rows:
            if row[0] != len(events) + 1:
                break
            prompt = PromptRef(row[4], row[5], _loads(row[12]) if row[12] is not None else None) if row[4] is not None else None
            if prompt is not None:
                prompts[prompt.name] = prompt.version
            events.append(
                Event(
                    seq=row[0], kind=row[1], name=row[2], args_digest=row[3], prompt=prompt, idempotency_key=row[6],
                    patch_id=row[7], result=_loads(row[8]), error=_error_of(row[9]), duration_s=row[10],
                    extra={"deprecated": True} if row[11] else {},
                )
            )
        status = _STATUSES[run["status"]]
        return History(
            workflow=WorkflowInfo(type=run["workflow_type"], id=run["workflow_id"], run_id=run_id, engine="journal"),
            status=status,
            waiting=self._waiting(run_id, len(events) + 1) if status == "parked" else None,
            events=tuple(events),
            input=_loads(run["input"]),
            result=_loads(run["result"]),
            error=_error_of(run["error"]),
            code_version=run["code_version"],
            prompt_versions=prompts,
            prompt_manifest=_loads(run["prompt_manifest"]),
        )


class _WriteTx:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error): the write lock is taken up front so the
    epoch check and the write cannot be interleaved with another writer's."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:  # a failed COMMIT may already have ended it
            self.db.execute("ROLLBACK")
