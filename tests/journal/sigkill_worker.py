"""Journal worker processes for the SIGKILL tests.

``python sigkill_worker.py JOURNAL_DB EFFECTS_DB [--stall-after N]`` runs one worker until no run is
ready; it exits 0, or 3 if its lease was taken over. With ``--stall-after N`` it stops itself
(SIGSTOP) before the Nth step's effect, for the takeover test.

``python sigkill_worker.py --zygote JOURNAL_DB EFFECTS_DB`` imports everything once and then, for each
``fork`` line on stdin, forks a worker process and answers its pid once the worker has opened its
databases; ``wait PID`` answers how that
process ended (``exit CODE`` or ``signal NUMBER``). Forking from a warm, single-threaded parent makes a
worker start in about a millisecond, so a test can kill hundreds of them at random points of their
work in seconds rather than paying interpreter start-up for each.

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
import uuid
from typing import Any, Callable

from replaytest.journal import Journal, RetryPolicy, Worker, workflow

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


class Deduplicating:
    def __init__(self, db: sqlite3.Connection, stall_after: int | None) -> None:
        self.db = db
        self.stall_after = stall_after
        self.calls = 0

    def apply(self, run_id: str, seq: int, amount: int, key: str) -> dict:
        self.calls += 1
        if self.stall_after is not None and self.calls == self.stall_after:
            os.kill(os.getpid(), signal.SIGSTOP)
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO attempts (run_id, seq, pid) VALUES (?, ?, ?)", (run_id, seq, os.getpid()))
        inserted = self.db.execute(
            "INSERT OR IGNORE INTO applied VALUES (?, ?, ?, ?, ?)", (key, run_id, seq, uuid.uuid4().hex, amount)
        ).rowcount
        if inserted:
            self.db.execute("UPDATE balance SET total = total + ? WHERE id = 1", (amount,))
        token = self.db.execute("SELECT token FROM applied WHERE key = ?", (key,)).fetchone()[0]
        self.db.execute("COMMIT")
        return {"seq": seq, "token": token}


def build(store: Deduplicating) -> Callable[..., Any]:
    @workflow(name="many-steps")
    def many_steps(ctx, params):
        results = []
        for index in range(params["steps"]):
            key = ctx.idempotency_key()
            results.append(
                ctx.step(f"effect {index}", store.apply, ctx.run_id, ctx.seq + 1, params["amount"], key, retry=RetryPolicy(max_attempts=1))
            )
        return len(results)

    return many_steps


def work(journal_path: str, effects_path: str, stall_after: int | None, lease_s: float, ready: Callable[[], None] | None = None) -> int:
    store = Deduplicating(open_effects(effects_path), stall_after)
    worker = Worker(Journal(journal_path), [build(store)], f"pid-{os.getpid()}", lease_s=lease_s)
    if ready is not None:
        ready()
    worker.run_until_idle()
    return 3 if worker.abandoned else 0


def zygote(journal_path: str, effects_path: str, lease_s: float) -> int:
    for line in sys.stdin:
        command = line.split()
        if command == ["fork"]:
            # The pid is answered once the child has opened its databases, so that the caller's random
            # delay before the kill falls in the work.
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                # The child never returns into the zygote's loop, whatever happens.
                os.close(read_end)
                code = 1
                try:
                    code = work(journal_path, effects_path, None, lease_s, ready=lambda: os.close(write_end))
                finally:
                    os._exit(code)
            os.close(write_end)
            os.read(read_end, 1)  # returns at the child's ready (or its death): the write end is closed
            os.close(read_end)
            print(pid, flush=True)
        elif len(command) == 2 and command[0] == "wait":
            _, status = os.waitpid(int(command[1]), 0)
            if os.WIFSIGNALED(status):
                print(f"signal {os.WTERMSIG(status)}", flush=True)
            else:
                print(f"exit {os.WEXITSTATUS(status)}", flush=True)
    return 0


def main() -> int:
    lease_s = float(os.environ.get("SIGKILL_TEST_LEASE", "0.05"))
    if sys.argv[1] == "--zygote":
        return zygote(sys.argv[2], sys.argv[3], lease_s)
    stall_after = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--stall-after" else None
    return work(sys.argv[1], sys.argv[2], stall_after, lease_s)


if __name__ == "__main__":
    sys.exit(main())
