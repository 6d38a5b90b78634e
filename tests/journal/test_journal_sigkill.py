"""Acceptance: worker processes killed with SIGKILL at random points lose no committed step and, with
idempotency keys passed to a deduplicating store, apply no effect twice; a stalled worker whose lease
was taken over cannot append.

Each cycle forks a worker process (from a warm parent, see sigkill_worker.py) on a shared SQLite
journal and kills it with SIGKILL at a randomly chosen progress point — a count of points observed, not
a timer, so the test means the same on a loaded machine. Three in four kills land exactly at the point
(before an effect, between an effect and its record, after a step returned); the rest let the worker run
on, so the kill lands anywhere after it, commits and claims included. After every kill the journal is
checked: every step seen committed before is still there with the same result, and no step committed
before the cycle was attempted again (re-execution resumes after it). Lease expiry costs no waiting:
each new worker's clock runs further ahead (simulated time), and leases are generous (5 s).
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
from sigkill_worker import LEASE_S, open_effects

from replaytest.journal import Journal

WORKER = Path(__file__).with_name("sigkill_worker.py")
KILLS = 200
STEPS = 40
AMOUNT = 3


class Zygote:
    """A warm parent process that forks worker processes and kills them on request."""

    def __init__(self, journal_db: Path, effects_db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), "--zygote", str(journal_db), str(effects_db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def run(self, kill_at: int, block: bool, clock_offset: float) -> str:
        """``killed`` or ``exit CODE``."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"run {kill_at} {int(block)} {clock_offset}\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


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
    kills = {True: 0, False: 0}  # exact point / free-running
    offset = 0.0
    seen: dict[tuple[str, int], str] = {}
    last_attempt = 0
    try:
        while sum(kills.values()) < KILLS:
            if not runs or all(journal.status(run) == "completed" for run in runs[-2:]):
                runs.extend(journal.start("many-steps", {"steps": STEPS, "amount": AMOUNT}) for _ in range(2))
            offset += LEASE_S + 1  # the previous (dead) worker's lease has run out for the next one
            block = rng.random() < 0.75
            outcome = zygote.run(rng.randint(1, 30), block, offset)
            assert outcome in ("killed", "exit 0"), outcome
            kills[block] += outcome == "killed"
            committed = _committed(journal_db)
            lost = {key: value for key, value in seen.items() if committed.get(key) != value}
            assert not lost, f"committed steps lost or changed after kill {sum(kills.values())}: {sorted(lost)[:5]}"
            last_attempt, attempted = _attempts_since(effects_db, last_attempt)
            redone = attempted & set(seen)
            assert not redone, f"steps committed before kill {sum(kills.values())} were executed again: {sorted(redone)[:5]}"
            seen = committed
        assert zygote.run(0, False, offset + LEASE_S + 1) == "exit 0"  # one last worker finishes every run
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
    # Kills between an effect and its record must have happened, and been deduplicated.
    assert attempts > total_steps
    print(
        f"\n{sum(kills.values())} SIGKILLs ({kills[True]} at an exact point, {kills[False]} free-running), "
        f"{len(runs)} runs x {STEPS} steps, {attempts - total_steps} re-executed effects deduplicated, {elapsed:.1f} s"
    )


@pytest.mark.slow
def test_stalled_worker_taken_over_cannot_append(tmp_path: Path) -> None:
    journal_db, effects_db = tmp_path / "journal.db", tmp_path / "effects.db"
    journal = Journal(journal_db)
    open_effects(str(effects_db)).close()
    run_id = journal.start("many-steps", {"steps": 10, "amount": 1})
    stalled = subprocess.Popen(
        [sys.executable, str(WORKER), str(journal_db), str(effects_db), "--stall-after", "4"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert stalled.stdout is not None
        assert stalled.stdout.readline().strip() == "stalled"  # steps 1-3 committed; stopped before step 4's effect
        assert len(_committed(journal_db)) == 3
        # Another worker, later than the stalled one's lease, takes the run over and finishes it.
        taker_env = dict(os.environ, SIGKILL_TEST_CLOCK_OFFSET=str(LEASE_S + 1))
        taker = subprocess.run([sys.executable, str(WORKER), str(journal_db), str(effects_db)], env=taker_env, timeout=120)
        assert taker.returncode == 0
        assert journal.status(run_id) == "completed"
        before = _committed(journal_db)
    finally:
        stalled.send_signal(signal.SIGCONT)
    # It resumes inside step 4's effect (deduplicated by key), then its append is fenced off.
    assert stalled.wait(timeout=120) == 3
    assert _committed(journal_db) == before
    db = sqlite3.connect(journal_db)
    epochs = db.execute("SELECT DISTINCT epoch FROM events WHERE run_id = ? ORDER BY epoch", (run_id,)).fetchall()
    db.close()
    assert epochs == [(1,), (2,)]
    effects = sqlite3.connect(effects_db)
    assert effects.execute("SELECT total FROM balance").fetchone()[0] == 10
    assert effects.execute("SELECT COUNT(*) FROM attempts WHERE seq = 4").fetchone()[0] == 2
    effects.close()
