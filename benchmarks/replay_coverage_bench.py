"""What replay coverage and the replay cache cost: the bundled journal example's histories replayed
N times over, as subprocesses (the way CI runs them), best of a few runs each:

* ``replaytest check`` without coverage (the baseline: lint of the one module + replay of every history),
* ``replaytest check --coverage`` (orchestration functions only, per history context, branch coverage),
* ``coverage run --branch -m replaytest check`` — the peer: the coverage package measuring everything,
* ``replaytest check`` a second time with the replay cache warm (every history skipped).

Run from the repository root: ``python benchmarks/replay_coverage_bench.py [N] [REPEATS]``. Write down
``uptime`` with the figures; the machine's load moves them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _project(root: Path, copies: int) -> None:
    shutil.copy(REPO / "fixtures" / "journal_app" / "agent.py", root / "agent.py")
    histories = root / "histories"
    histories.mkdir()
    sources = sorted((REPO / "fixtures" / "histories").glob("*.json"))
    for n in range(copies):
        source = sources[n % len(sources)]
        shutil.copy(source, histories / f"{n:04}-{source.name}")
    (root / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent"]\n'
    )


def _time(command: list[str], cwd: Path, repeats: int, before: list[str] | None = None) -> float:
    best = float("inf")
    for _ in range(repeats):
        if before is not None:
            subprocess.run(before, cwd=cwd, capture_output=True, check=False)
        started = time.perf_counter()
        run = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if run.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed: {run.stderr}")
        best = min(best, elapsed)
    return best


def main() -> None:
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    python = sys.executable
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _project(root, copies)
        check = [python, "-m", "replaytest", "check", "agent.py"]
        clear = [python, "-c", "import shutil; shutil.rmtree('.replaytest_cache', ignore_errors=True)"]
        rows = [
            ("check (no coverage, cold cache)", _time([*check, "--no-cache"], root, repeats)),
            ("check --coverage", _time([*check, "--no-cache", "--coverage"], root, repeats)),
            ("coverage run --branch (peer, whole program)",
             _time([python, "-m", "coverage", "run", "--branch", "-m", "replaytest", "check", "--no-cache", "agent.py"],
                   root, repeats)),
            ("check, replay cache warm", _time(check, root, repeats, before=None)),
        ]
        _time(check, root, 1, before=clear)  # leaves a warm cache for the last row's repeats
        rows[-1] = ("check, replay cache warm", _time(check, root, repeats))
    base = rows[0][1]
    print(f"{copies} histories, best of {repeats}")
    for label, seconds in rows:
        print(f"  {label:<46} {seconds:7.2f} s  ({seconds / base:4.2f}x)")


if __name__ == "__main__":
    main()
