"""The pytest path against ``replaytest check``, per history: both replay the same N small journal histories
(``histories_at_scale``) in one run of this script, serially and under ``pytest -n 2``.

Each command runs over all N histories and in the same project with one history; the difference divided by
N - 1 is the cost of a history, free of start-up (pytest's plugin loading and, with ``PYTHONDONTWRITEBYTECODE``,
its assertion rewriting of every plugin module, paid once per process). Times are wall clock and CPU time of the
child processes (the CPU figure is the steadier one on a shared machine); ``--repeat K`` keeps the least of K
runs of each command. Three rows take the pytest figure apart: ``pytest --collect-only`` (collection alone),
``pytest, replay stubbed`` (a conftest replaces every replay by a constant passed result: pytest's protocol over
one file node and one item per history, plus the plugin's own work) and ``pytest, empty tests`` (N parametrized
empty tests: pytest's cost of any item). Under ``-n 2`` the controller also says how much CPU it used itself.
``--profile`` also runs the N-history pytest run in-process under cProfile and prints the functions with the
most own time.

Measured at N = 10,000 on two cores shared with other work, best of 3, one run of this script before and one
after the plugin's per-item work was cut (the display path worked out once per item and without
``os.path.relpath``, no exclusion lookup when nothing is excluded, no marker walk for history items, one pass
over a report's properties); load average 2.3 to 3.6 before, 3.5 to 3.0 after:

| run | before: CPU ms | after: CPU ms | after: wall ms |
| --- | --- | --- | --- |
| replaytest check | 0.54 | 0.53 | 0.53 |
| pytest | 1.23 | 1.22 | 1.25 |
| pytest -n 2 | 2.31 | 2.40 | 1.47 |
| pytest --collect-only | 0.19 | 0.22 | 0.24 |
| pytest, replay stubbed | 0.69 | 0.65 | 0.71 |
| pytest, empty tests | 0.53 | 0.46 | 0.45 |

Where a history's 1.22 ms goes: its replay, as in check (1.22 - 0.65 = 0.57 ms against check's 0.53), and
pytest's protocol over one file node and one item (0.65 ms: collection 0.22, then three phases, each with its
capture, logging, warnings and report hooks), about an empty test's 0.46 ms plus the file node. The plugin's
own share of that is small and was small before: with the replay stubbed and the two versions run alternately
(four runs each at N = 10,000), 0.65 ms before and 0.61 ms after, against 0.57 ms for a bare ``pytest.File``
and ``pytest.Item`` that do nothing; single runs of the bench differ by more than that (the empty-test row
moved by 0.07 ms between the two runs above with nothing changed). So pytest stays at about 2.3x check for
small histories: its per-item cost is as large as the replay of a small history, and it is pytest's. (The
figures this docstring gave before, 3.48 ms against 1.23 ms or 2.8x, were measured at load average 4 to 6:
on a shared machine the ratio moves with the load.) For large history sets ``replaytest check`` is the
cheaper path.

``-n 2`` is slower than serial on two cores, and cannot be faster there: it spends 2.40 ms of CPU per history
against 1.22 serially, because every worker collects every history (+0.22 ms), the controller receives and
re-dispatches three reports and three more events per item (0.55 ms of its own CPU), and the remaining 0.4 ms
is the workers' side of that traffic (serializing and sending) and three busy processes on two cores. Spread
over two cores that is at least 1.20 ms of wall time per history, what serial already takes (1.25 ms), and
the controller takes its share of the same two cores from the workers: 1.47 ms measured. By the same arithmetic (not measured here) ``-n`` can pay only where its CPU per
history spread over the free cores comes to less than serial's: three or more free cores.

Run from the repository root:
``python benchmarks/pytest_path_bench.py [--histories 10000] [--repeat 3] [--profile]``.
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

# A conftest that replaces the replay of every history item by a constant passed result: what is left is
# pytest's protocol over one file node and one item per history, plus the plugin's own work.
STUB_REPLAY = """\
import replaytest.pytest_plugin
from replaytest.replay.divergence import ReplayResult


def _passed(path, replayers, workflows, options, loaded=None):
    return ReplayResult(path, "journal", "delivery_delay", status="passed", run_status="completed")


replaytest.pytest_plugin.replay_file = _passed
"""


# pytest run in a process that says, last, how much CPU it used itself: under pytest-xdist, the controller's
# share (the workers are its children).
CONTROLLER = ("import sys, time, pytest; code = pytest.main(sys.argv[1:]); "
              "print(f'controller CPU s: {time.process_time():.3f}'); sys.exit(code)")


def _timed(command: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the child and its children, CPU seconds the child says it used itself,
    or 0) of a command that must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = done.stdout.rstrip().rpartition("\n")[2]
    own = float(last.rpartition(":")[2]) if last.startswith("controller CPU s:") else 0.0
    return wall, cpu, own


def _best(command: list[str], cwd: Path, repeat: int) -> tuple[float, float, float]:
    """The least of each time over ``repeat`` runs (other work on a shared machine only adds)."""
    runs = [_timed(command, cwd) for _ in range(repeat)]
    walls, cpus, owns = zip(*runs)
    return min(walls), min(cpus), min(owns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=10_000)
    parser.add_argument("--profile", action="store_true", help="also profile the pytest run in-process")
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="run every command K times and keep the least time (default 1)")
    args = parser.parse_args()
    python = sys.executable
    pytest_command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    with tempfile.TemporaryDirectory() as folder:
        project = make_project(Path(folder) / "project", args.histories)
        single = make_project(Path(folder) / "single" / "project", 1)
        stubbed = [make_project(Path(folder) / "stubbed" / "project", args.histories),
                   make_project(Path(folder) / "stubbed-single" / "project", 1)]
        for root in stubbed:
            (root / "conftest.py").write_text(STUB_REPLAY, encoding="utf-8")
        # pytest's own cost per item, with no replay in it: the same number of empty tests (one parametrized
        # function), against one of them.
        empty = Path(folder) / "empty"
        empty.mkdir()
        (empty / "test_empty.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('i', range({args.histories}))\ndef test_empty(i):\n    pass\n",
            encoding="utf-8")
        # (name, command, where it runs over all N, where over one): check replays the configured paths;
        # pytest is pointed at the same files.
        runs = [
            ("replaytest check", [python, "-m", "replaytest", "check", "--no-cache", "-q", "delays.py"], project, single),
            ("pytest", [*pytest_command, "histories"], project, single),
            ("pytest -n 2", [python, "-c", CONTROLLER, *pytest_command[3:], "-n", "2", "histories"], project, single),
            # Collection alone (pytest-xdist does not distribute --collect-only: this is one process's share).
            ("pytest --collect-only", [*pytest_command, "--collect-only", "histories"], project, single),
            ("pytest, replay stubbed", [*pytest_command, "histories"], *stubbed),
            ("pytest, empty tests", [*pytest_command, "test_empty.py"], empty, None),
        ]
        print(f"{args.histories:,} histories; {os.cpu_count()} CPUs; best of {args.repeat}; "
              f"load average {os.getloadavg()[0]:.1f} at start")
        print("| run | all: wall s | all: CPU s | one: wall s | one: CPU s | per history: wall ms | per history: CPU ms |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        per_history: dict[str, float] = {}
        controller = ""
        for name, command, every, one in runs:
            wall, cpu, own = _best(command, every, args.repeat)
            if one is None:  # the empty tests: one of them, in the same file
                wall_one, cpu_one, own_one = _best([*command[:-1], "test_empty.py::test_empty[0]"], every, args.repeat)
            else:
                wall_one, cpu_one, own_one = _best(command, one, args.repeat)
            per_wall = (wall - wall_one) / (args.histories - 1) * 1000
            per_history[name] = per_cpu = (cpu - cpu_one) / (args.histories - 1) * 1000
            print(f"| {name} | {wall:.1f} | {cpu:.1f} | {wall_one:.1f} | {cpu_one:.1f} | {per_wall:.2f} | {per_cpu:.2f} |")
            if own:
                controller = (f"{name}: the controller alone {own:.1f} s CPU over all, {own_one:.1f} s over one: "
                              f"{(own - own_one) / (args.histories - 1) * 1000:.2f} ms per history")
        if controller:
            print(controller)
        print(f"pytest / check, CPU per history: {per_history['pytest'] / per_history['replaytest check']:.2f}x")
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
