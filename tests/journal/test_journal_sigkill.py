"""Acceptance: worker processes killed with SIGKILL at random points lose no committed step and, with
idempotency keys passed to a deduplicating store, apply no effect twice; a stalled worker whose lease
was taken over cannot append.

Each cycle forks a worker process (from a warm parent, so the kill lands in the work rather than in
interpreter start-up) on a shared SQLite journal, kills it with SIGKILL after a random short delay, and
checks the journal: every step seen committed before is still there with the same result, and no step
committed before the cycle was attempted again during it (re-execution resumes after it).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sigkill_worker import open_effects

from replaytest.journal import Journal

WORKER = Path(__file__).with_name("sigkill_worker.py")
KILLS = 200
STEPS = 40
AMOUNT = 3


def _spawn(journal_db: Path, effects_db: Path, *extra: str, lease: str = "0.05") -> subprocess.Popen:
    env = dict(os.environ, SIGKILL_TEST_LEASE=lease)
    return subprocess.Popen([sys.executable, str(WORKER), str(journal_db), str(effects_db), *extra], env=env)


class Zygote:
    """A warm parent process that forks worker processes on request (see sigkill_worker.py)."""

    def __init__(self, journal_db: Path, effects_db: Path, lease: str = "0.05") -> None:
        env = dict(os.environ, SIGKILL_TEST_LEASE=lease)
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), "--zygote", str(journal_db), str(effects_db)],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def _ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def fork(self) -> int:
        return int(self._ask("fork"))

    def wait(self, pid: int) -> str:
        """``exit CODE`` or ``signal NUMBER``."""
        return self._ask(f"wait {pid}")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


def _committed(journal_db: Path) -> dict[tuple[str, int], str]:
    db = sqlite3.connect(journal_db)
    try:
        rows = db.execute("SELECT run_id, seq, result FROM events WHERE state = 'done'").fetchall()
    finally:
        db.close()
    return {(run_id, seq): result for run_id, seq, result in rows}


def _attempts_since(effects_db: Path, after_id: int) -> tuple[int, set[tuple[str, int]]]:
    db = sqlite3.connect(effects_db)
    try:
        rows = db.execute("SELECT id, run_id, seq FROM attempts WHERE id > ?", (after_id,)).fetchall()
    finally:
        db.close()
    return max([after_id, *(row[0] for row in rows)]), {(row[1], row[2]) for row in rows}


@pytest.mark.slow
def test_sigkill_at_random_points_loses_no_committed_step_and_duplicates_no_effect(tmp_path: Path) -> None:
    journal_db, effects_db = tmp_path / "journal.db", tmp_path / "effects.db"
    journal = Journal(journal_db)
    open_effects(str(effects_db)).close()
    zygote = Zygote(journal_db, effects_db)
    rng = random.Random(20261130)
    started = time.monotonic()
    runs: list[str] = []
    kills = 0
    kills_in_work = 0  # kills of a worker that had begun applying effects: it died between or inside steps
    seen: dict[tuple[str, int], str] = {}
    last_attempt = 0
    try:
        while kills < KILLS:
            if not runs or all(journal.status(run) == "completed" for run in runs[-2:]):
                runs.extend(journal.start("many-steps", {"steps": STEPS, "amount": AMOUNT}) for _ in range(2))
            pid = zygote.fork()
            time.sleep(rng.uniform(0.0, 0.08))
            os.kill(pid, signal.SIGKILL)  # harmless if it already finished: it stays a zombie until waited
            killed = zygote.wait(pid) == f"signal {signal.SIGKILL.value}"
            kills += killed
            committed = _committed(journal_db)
            lost = {key: value for key, value in seen.items() if committed.get(key) != value}
            assert not lost, f"committed steps lost or changed after kill {kills}: {sorted(lost)[:5]}"
            last_attempt, attempted = _attempts_since(effects_db, last_attempt)
            kills_in_work += killed and bool(attempted or len(committed) > len(seen))
            redone = attempted & set(seen)
            assert not redone, f"steps committed before kill {kills} were executed again: {sorted(redone)[:5]}"
            seen = committed
            time.sleep(0.05)  # the dead worker's lease (0.05 s, renewed at every step) runs out
        finisher = zygote.fork()
        assert zygote.wait(finisher) == "exit 0"
    finally:
        zygote.close()
    elapsed = time.monotonic() - started

    assert all(journal.status(run) == "completed" for run in runs)
    db = sqlite3.connect(effects_db)
    applied = dict(((run_id, seq), token) for run_id, seq, token in db.execute("SELECT run_id, seq, token FROM applied"))
    attempts = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    balance = db.execute("SELECT total FROM balance").fetchone()[0]
    db.close()
    total_steps = len(runs) * STEPS
    assert len(applied) == total_steps
    assert balance == total_steps * AMOUNT, "an effect was applied twice"
    for run in runs:
        history = journal.export(run)
        assert [event.seq for event in history.events] == list(range(1, STEPS + 1))
        for event in history.events:
            assert event.idempotency_key == f"{run}:{event.seq}"
            assert event.result == {"seq": event.seq, "token": applied[(run, event.seq)]}
    print(
        f"\n{kills} SIGKILLs ({kills_in_work} during the work), {len(runs)} runs x {STEPS} steps, "
        f"{attempts - total_steps} re-executed attempts deduplicated, {elapsed:.1f} s"
    )
    assert attempts >= total_steps
    assert kills_in_work >= KILLS // 2
    assert elapsed < 60


@pytest.mark.slow
def test_stalled_worker_taken_over_cannot_append(tmp_path: Path) -> None:
    journal_db, effects_db = tmp_path / "journal.db", tmp_path / "effects.db"
    journal = Journal(journal_db)
    open_effects(str(effects_db)).close()
    run_id = journal.start("many-steps", {"steps": 10, "amount": 1})
    stalled = _spawn(journal_db, effects_db, "--stall-after", "4", lease="0.5")
    deadline = time.monotonic() + 20
    while len(_committed(journal_db)) < 3:  # steps 1-3 committed, then it stops itself before step 4
        assert time.monotonic() < deadline and stalled.poll() is None
        time.sleep(0.01)
    time.sleep(0.7)  # its lease expires
    taker = _spawn(journal_db, effects_db, lease="30")
    assert taker.wait(timeout=30) == 0
    assert journal.status(run_id) == "completed"
    before = _committed(journal_db)
    stalled.send_signal(signal.SIGCONT)
    # It resumes inside step 4's effect (deduplicated by key), then its append is fenced off.
    assert stalled.wait(timeout=30) == 3
    assert _committed(journal_db) == before
    db = sqlite3.connect(journal_db)
    epochs = db.execute("SELECT DISTINCT epoch FROM events WHERE run_id = ? ORDER BY epoch", (run_id,)).fetchall()
    db.close()
    assert epochs == [(1,), (2,)]
    balance = sqlite3.connect(effects_db).execute("SELECT total FROM balance").fetchone()[0]
    assert balance == 10
