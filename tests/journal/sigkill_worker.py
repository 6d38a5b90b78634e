"""A journal worker process for the SIGKILL test: ``python sigkill_worker.py JOURNAL_DB EFFECTS_DB [--stall-after N]``.

Its workflow runs ``steps`` steps; each applies an effect (adding ``amount`` to a balance) to a
deduplicating store — a SQLite table keyed by the step's idempotency key, which applies a key once and
answers repeats with the first answer, like a payment API. Every attempt is also logged, so the test
can see re-executions. The process exits 0 when no run is ready, 3 if its lease was taken over.
With ``SIGKILL_TEST_HANDSHAKE=1`` it prints ``ready`` after start-up and reads one line from stdin before claiming, so
the test can start it ahead of time and kill it at a random point of its *work*, not of its imports.
With ``--stall-after N`` it stops itself (SIGSTOP) before the Nth step's effect, for the takeover test.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import uuid

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


def build(store: Deduplicating):
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


def main() -> int:
    journal_path, effects_path = sys.argv[1], sys.argv[2]
    stall_after = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--stall-after" else None
    lease_s = float(os.environ.get("SIGKILL_TEST_LEASE", "0.05"))
    store = Deduplicating(open_effects(effects_path), stall_after)
    worker = Worker(Journal(journal_path), [build(store)], f"pid-{os.getpid()}", lease_s=lease_s)
    if os.environ.get("SIGKILL_TEST_HANDSHAKE") == "1":
        print("ready", flush=True)
        sys.stdin.readline()
    worker.run_until_idle()
    return 3 if worker.abandoned else 0


if __name__ == "__main__":
    sys.exit(main())
