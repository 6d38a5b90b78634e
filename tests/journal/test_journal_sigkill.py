"""Acceptance: worker processes killed with SIGKILL at random points lose no committed step and, with
idempotency keys passed to a deduplicating store, apply no effect twice; a stalled worker whose lease
was taken over cannot append.

Each cycle starts a worker process on a shared SQLite journal, kills it after a random short delay,
and checks the journal: every step seen committed before is still there with the same result, and no
step committed before the cycle was attempted again during it (re-execution resumes after it).
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


def _spawn(journal_db: Path, effects_db: Path, *extra: str, lease: str = "0.05", handshake: bool = False) -> subprocess.Popen:
    env = dict(os.environ, SIGKILL_TEST_LEASE=lease, SIGKILL_TEST_HANDSHAKE="1" if handshake else "0")
    pipe = subprocess.PIPE if handshake else None
    return subprocess.Popen([sys.executable, str(WORKER), str(journal_db), str(effects_db), *extra], env=env, stdin=pipe, stdout=pipe)


def _go(process: subprocess.Popen) -> None:
    assert process.stdin is not None and process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    process.stdin.write(b"go\n")
    process.stdin.close()


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
    rng = random.Random(20261130)
    started = time.monotonic()
    runs: list[str] = []
    kills = 0
    kills_mid_work = 0  # kills in cycles that committed steps: the process died between or inside steps
    seen: dict[tuple[str, int], str] = {}
    last_attempt = 0
    # The next worker starts (imports, opens the journal) while the current one works, and begins
    # claiming on "go": kills then land at random points of the work itself.
    spare = _spawn(journal_db, effects_db, handshake=True)
    while kills < KILLS:
        if not runs or all(journal.status(run) == "completed" for run in runs[-2:]):
            runs.extend(journal.start("many-steps", {"steps": STEPS, "amount": AMOUNT}) for _ in range(2))
        process, spare = spare, _spawn(journal_db, effects_db, handshake=True)
        time.sleep(0.06)  # the previous worker's lease (0.05 s, renewed per step) expires
        _go(process)
        time.sleep(rng.uniform(0.0, 0.06))
        killed = process.poll() is None
        if killed:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
        committed = _committed(journal_db)
        kills_mid_work += killed and len(committed) > len(seen)
        lost = {key: value for key, value in seen.items() if committed.get(key) != value}
        assert not lost, f"committed steps lost or changed after kill {kills}: {sorted(lost)[:5]}"
        last_attempt, attempted = _attempts_since(effects_db, last_attempt)
        redone = attempted & set(seen)
        assert not redone, f"steps committed before kill {kills} were executed again: {sorted(redone)[:5]}"
        seen = committed

    time.sleep(0.1)  # the last killed worker's lease expires
    _go(spare)
    assert spare.wait(timeout=60) == 0
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
    print(f"\n{kills} SIGKILLs ({kills_mid_work} after progress), {len(runs)} runs x {STEPS} steps, {attempts - total_steps} re-executed attempts deduplicated, {elapsed:.1f} s")
    assert attempts >= total_steps
    assert kills_mid_work >= KILLS // 3
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
