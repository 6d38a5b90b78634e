"""Kill benchmark for the journal runtime: N ``kill -9``s of worker processes at random points, then
count what was lost and what was applied twice.

The same harness as ``tests/journal/test_journal_sigkill.py`` (a warm parent forks each worker from
``tests/journal/sigkill_worker.py`` and kills it at a counted progress point, three in four exactly at
a point, the rest free-running), but it reports instead of asserting, for many more kills than the test:

* lost steps: steps seen committed after one kill that are missing or changed after a later one;
* re-executed steps: steps committed before a kill that a later worker ran again;
* duplicated effects: keyed effects applied more than once (the store's balance against the steps);
* deduplicated re-executions: effects attempted again after a kill between an effect and its record,
  which the idempotency key absorbed (expected, and proof such kills happened).

Usage: ``python benchmarks/journal_kill_bench.py [--kills 500] [--steps 40] [--seed N]``
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKER = HERE.parent / "tests" / "journal" / "sigkill_worker.py"
sys.path.insert(0, str(WORKER.parent))

from sigkill_worker import LEASE_S, open_effects  # noqa: E402

from replaytest.journal import Journal  # noqa: E402


def committed(journal_db: Path) -> dict[tuple[str, int], str]:
    db = sqlite3.connect(journal_db)
    try:
        rows = db.execute("SELECT run_id, seq, result FROM events WHERE state = 'done'").fetchall()
    finally:
        db.close()
    return {(run_id, seq): result for run_id, seq, result in rows}


def attempts_since(effects_db: Path, after_id: int) -> tuple[int, set[tuple[str, int]]]:
    db = sqlite3.connect(effects_db)
    try:
        rows = db.execute("SELECT id, run_id, seq FROM attempts WHERE id > ?", (after_id,)).fetchall()
    finally:
        db.close()
    return max([after_id, *(row[0] for row in rows)]), {(row[1], row[2]) for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--amount", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261130)
    options = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="journal-kill-"))
    journal_db, effects_db = folder / "journal.db", folder / "effects.db"
    journal = Journal(journal_db)
    open_effects(str(effects_db)).close()
    zygote = subprocess.Popen([sys.executable, str(WORKER), "--zygote", str(journal_db), str(effects_db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    assert zygote.stdin is not None and zygote.stdout is not None

    def run(kill_at: int, block: bool, offset: float) -> str:
        zygote.stdin.write(f"run {kill_at} {int(block)} {offset}\n")  # type: ignore[union-attr]
        zygote.stdin.flush()  # type: ignore[union-attr]
        return zygote.stdout.readline().strip()  # type: ignore[union-attr]

    rng = random.Random(options.seed)
    started = time.monotonic()
    runs: list[str] = []
    kills = {True: 0, False: 0}
    offset = 0.0
    seen: dict[tuple[str, int], str] = {}
    last_attempt = 0
    lost: set[tuple[str, int]] = set()
    redone: set[tuple[str, int]] = set()
    odd_outcomes = 0
    try:
        while sum(kills.values()) < options.kills:
            if not runs or all(journal.status(r) == "completed" for r in runs[-2:]):
                runs.extend(journal.start("many-steps", {"steps": options.steps, "amount": options.amount}) for _ in range(2))
            offset += LEASE_S + 1
            block = rng.random() < 0.75
            outcome = run(rng.randint(1, 30), block, offset)
            if outcome not in ("killed", "exit 0"):
                odd_outcomes += 1
            kills[block] += outcome == "killed"
            now = committed(journal_db)
            lost |= {key for key, value in seen.items() if now.get(key) != value}
            last_attempt, attempted = attempts_since(effects_db, last_attempt)
            redone |= attempted & set(seen)
            seen = now
        final = run(0, False, offset + LEASE_S + 1)
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=60)
    elapsed = time.monotonic() - started

    db = sqlite3.connect(effects_db)
    applied = db.execute("SELECT COUNT(*) FROM applied").fetchone()[0]
    attempts = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    balance = db.execute("SELECT total FROM balance").fetchone()[0]
    db.close()
    completed = sum(journal.status(r) == "completed" for r in runs)
    total_steps = len(runs) * options.steps
    duplicated = (balance - applied * options.amount) // options.amount + max(0, applied - total_steps)
    print(f"kills: {sum(kills.values())} ({kills[True]} at an exact point, {kills[False]} free-running); "
          f"final worker: {final}; unexpected worker outcomes: {odd_outcomes}")
    print(f"runs: {len(runs)} ({completed} completed) x {options.steps} steps = {total_steps} keyed effects")
    print(f"lost steps: {len(lost)}; committed steps executed again: {len(redone)}")
    print(f"effects applied: {applied}; duplicated effects: {duplicated} (balance {balance}, expected {total_steps * options.amount})")
    print(f"re-executed effects deduplicated by key: {attempts - total_steps}")
    print(f"time: {elapsed:.1f} s; journal in {folder}")


if __name__ == "__main__":
    main()
