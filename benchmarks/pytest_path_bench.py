"""The pytest path against ``replaytest check``, per history: both replay the same N small journal histories
(``histories_at_scale``) in one run of this script, serially and under ``pytest -n 2``.

Each command runs twice: over all N histories and in the same project with one history. The difference divided by N - 1 is the cost of a
history, free of start-up (pytest's plugin loading and, with ``PYTHONDONTWRITEBYTECODE``, its assertion
rewriting of every plugin module, paid once per process). Times are wall clock and CPU time of the child
processes (the CPU figure is the steadier one on a shared machine). ``--profile`` also runs the N-history
pytest run in-process under cProfile and prints the functions with the most own time.

Measured (two cores shared with other work, load average 4 to 6; CPU ms per history, the steadier figure),
before and after the guards stopped walking all of ``sys.modules`` for every replay:

| run | before: CPU ms | after: CPU ms | after: wall ms |
| --- | --- | --- | --- |
| replaytest check | 1.85 | 1.23 | 2.43 |
| pytest | 4.85 | 3.48 | 5.61 |
| pytest -n 2 | 6.71 | 6.08 | 5.46 |
| pytest, empty tests | | 1.21 | 1.20 |

pytest costs 2.8x check per history; of its 2.25 ms more, 1.2 ms is pytest's own per-item protocol (the
empty tests: three phases, each with its capture, logging, warnings and report hooks), and most of the rest is
collecting one file node and one item per history. ``-n 2`` spends more CPU than serial (every worker starts
pytest, imports the plugins and collects every history; the controller receives three reports per item), so on
two cores it gains little wall time.

Run from the repository root: ``python benchmarks/pytest_path_bench.py [--histories 10000] [--profile]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from histories_at_scale import make_project  # noqa: E402

def _timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, last output line) of a command that must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=10_000)
    parser.add_argument("--profile", action="store_true", help="also profile the pytest run in-process")
    args = parser.parse_args()
    python = sys.executable
    runs = {
        "replaytest check": [python, "-m", "replaytest", "check", "--no-cache", "-q", "delays.py"],
        "pytest": [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        "pytest -n 2": [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"],
    }
    with tempfile.TemporaryDirectory() as folder:
        project = make_project(Path(folder) / "project", args.histories)
        single = make_project(Path(folder) / "single" / "project", 1)
        print(f"{args.histories:,} histories; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start")
        print("| run | all: wall s | all: CPU s | one: wall s | one: CPU s | per history: wall ms | per history: CPU ms |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, command in runs.items():
            # check replays the configured paths; pytest is pointed at the same files.
            every = command if name == "replaytest check" else [*command, "histories"]
            (wall, cpu, _), (wall_one, cpu_one, _) = _timed(every, project), _timed(every, single)
            per_wall = (wall - wall_one) / (args.histories - 1) * 1000
            per_cpu = (cpu - cpu_one) / (args.histories - 1) * 1000
            print(f"| {name} | {wall:.1f} | {cpu:.1f} | {wall_one:.1f} | {cpu_one:.1f} | {per_wall:.2f} | {per_cpu:.2f} |")
        # pytest's own cost per item, with no replay in it: the same number of empty tests (one parametrized
        # function), against one of them.
        empty = Path(folder) / "empty"
        empty.mkdir()
        (empty / "test_empty.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('i', range({args.histories}))\ndef test_empty(i):\n    pass\n",
            encoding="utf-8")
        command = runs["pytest"]
        (wall, cpu, _) = _timed([*command, "test_empty.py"], empty)
        (wall_one, cpu_one, _) = _timed([*command, "test_empty.py::test_empty[0]"], empty)
        per_wall = (wall - wall_one) / (args.histories - 1) * 1000
        per_cpu = (cpu - cpu_one) / (args.histories - 1) * 1000
        print(f"| pytest, empty tests | {wall:.1f} | {cpu:.1f} | {wall_one:.1f} | {cpu_one:.1f} | {per_wall:.2f} | {per_cpu:.2f} |")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        if args.profile:
            _profile(project)


def _profile(project: Path) -> None:
    import cProfile
    import pstats

    import pytest

    os.chdir(project)
    profiler = cProfile.Profile()
    profiler.enable()
    pytest.main(["-q", "-p", "no:cacheprovider", "histories"])
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
