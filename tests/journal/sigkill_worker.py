"""Journal worker processes for the SIGKILL tests.

``python sigkill_worker.py JOURNAL_DB EFFECTS_DB [--stall-after N]`` runs one worker until no run is
ready; it exits 0, or 3 if its lease was taken over. With ``--stall-after N`` it prints ``stalled`` and
stops itself (SIGSTOP) before the Nth step's effect, for the takeover test.

``python sigkill_worker.py --zygote JOURNAL_DB EFFECTS_DB`` imports everything once, then serves one
command per stdin line: ``run K BLOCK OFFSET`` forks a worker process whose clock runs ``OFFSET``
seconds ahead, counts the progress points it passes — before a step's effect, after the effect but
before it is recorded, after the step was committed and returned to the workflow (steps answered from
the journal on resume pass none) — and kills it with SIGKILL at the K-th. With BLOCK=1 the worker waits
at that point, so the kill lands exactly there; with BLOCK=0 it runs on, so the kill lands wherever it
has got to (inside a commit, a claim, the resume of recorded steps, …). The answer is ``killed`` or
``exit CODE`` (the worker ran out of work first). K=0 never kills. Forking from a warm,
single-threaded parent makes a worker start in about a millisecond.

The workflow runs ``steps`` steps; each applies an effect (adding ``amount`` to a balance) to a
deduplicating store — a SQLite table keyed by the step's idempotency key, which applies a key once and
answers repeats with the first answer, like a payment API. Every attempt is also logged, so the test
can see re-executions.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
import uuid
from typing import Any, Callable

from replaytest.journal import Journal, RetryPolicy, Worker, workflow

LEASE_S = 5.0  # generous: a live worker never loses its lease to slowness, only to death or a stall

EFFECTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS applied (key TEXT PRIMARY KEY, run_id TEXT, seq INTEGER, token TEXT, amount INTEGER);
CREATE TABLE IF NOT EXISTS attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, seq INTEGER, pid INTEGER);
CREATE TABLE IF NOT EXISTS balance (id INTEGER PRIMARY KEY CHECK (id = 1), total INTEGER NOT NULL);
INSERT OR IGNORE INTO balance VALUES (1, 0);
"""


def open_effects(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=60)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(EFFECTS_SCHEMA)
    return db


class Points:
    """Progress points: each is reported on ``notify_fd``; at the ``block_at``-th the process waits
    (for its SIGKILL). ``stall_after`` stops the process (SIGSTOP) at that many effects instead."""

    def __init__(self, notify_fd: int | None = None, block_at: int = 0) -> None:
        self.notify_fd = notify_fd
        self.block_at = block_at
        self.hits = 0

    def hit(self) -> None:
        self.hits += 1
        if self.notify_fd is not None:
            os.write(self.notify_fd, b".")
        if self.hits == self.block_at:
            while True:
                signal.pause()


class Deduplicating:
    def __init__(self, db: sqlite3.Connection, points: Points, stall_after: int | None = None) -> None:
        self.db = db
        self.points = points
        self.stall_after = stall_after
        self.calls = 0

    def apply(self, run_id: str, seq: int, amount: int, key: str) -> dict:
        self.calls += 1
        if self.stall_after is not None and self.calls == self.stall_after:
            print("stalled", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        self.points.hit()
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO attempts (run_id, seq, pid) VALUES (?, ?, ?)", (run_id, seq, os.getpid()))
        inserted = self.db.execute(
            "INSERT OR IGNORE INTO applied VALUES (?, ?, ?, ?, ?)", (key, run_id, seq, uuid.uuid4().hex, amount)
        ).rowcount
        if inserted:
            self.db.execute("UPDATE balance SET total = total + ? WHERE id = 1", (amount,))
        token = self.db.execute("SELECT token FROM applied WHERE key = ?", (key,)).fetchone()[0]
        self.db.execute("COMMIT")
        self.points.hit()
        return {"seq": seq, "token": token}


def build(store: Deduplicating) -> Callable[..., Any]:
    @workflow(name="many-steps")
    def many_steps(ctx, params):
        results = []
        for index in range(params["steps"]):
            key = ctx.idempotency_key()
            calls = store.calls
            results.append(
                ctx.step(f"effect {index}", store.apply, ctx.run_id, ctx.seq + 1, params["amount"], key, retry=RetryPolicy(max_attempts=1))
            )
            if store.calls > calls:  # executed now, not answered from the journal: it has just been committed
                store.points.hit()
        return len(results)

    return many_steps


def work(journal_path: str, effects_path: str, points: Points, *, stall_after: int | None = None, clock_offset: float = 0.0) -> int:
    store = Deduplicating(open_effects(effects_path), points, stall_after)
    journal = Journal(journal_path, clock=lambda: time.time() + clock_offset)
    worker = Worker(journal, [build(store)], f"pid-{os.getpid()}", lease_s=LEASE_S)
    worker.run_until_idle()
    return 3 if worker.abandoned else 0


def run_and_kill(journal_path: str, effects_path: str, kill_at: int, block: bool, clock_offset: float) -> str:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        # The child never returns into the zygote's loop, whatever happens.
        os.close(read_end)
        code = 1
        try:
            points = Points(write_end, kill_at if block else 0)
            code = work(journal_path, effects_path, points, clock_offset=clock_offset)
        finally:
            os._exit(code)
    os.close(write_end)
    seen = 0
    while kill_at == 0 or seen < kill_at:
        chunk = os.read(read_end, 1)
        if not chunk:  # the child exited: it ran out of work before the K-th point
            break
        seen += 1
    if kill_at and seen == kill_at:
        os.kill(pid, signal.SIGKILL)  # before closing the pipe, so a running child never sees EPIPE
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "killed" if os.WTERMSIG(status) == signal.SIGKILL else f"signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}"


def zygote(journal_path: str, effects_path: str) -> int:
    for line in sys.stdin:
        command = line.split()
        if len(command) == 4 and command[0] == "run":
            print(run_and_kill(journal_path, effects_path, int(command[1]), command[2] == "1", float(command[3])), flush=True)
    return 0


def main() -> int:
    if sys.argv[1] == "--zygote":
        return zygote(sys.argv[2], sys.argv[3])
    stall_after = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--stall-after" else None
    offset = float(os.environ.get("SIGKILL_TEST_CLOCK_OFFSET", "0"))
    return work(sys.argv[1], sys.argv[2], Points(), stall_after=stall_after, clock_offset=offset)


if __name__ == "__main__":
    sys.exit(main())
