"""History size benchmark: the memory of loading a large neutral history, and the cost of refusing one
over ``max-history-bytes``.

1. Builds a neutral history of ``--events`` events (default 500,000: about 139 MB; the loop workflow of
   ``replay_bench``) and, each in a fresh child interpreter so one measurement cannot warm the next,
   measures the peak of ``LoadedHistory.read(...).history()`` (read, strict parse, validate) and of
   ``replay_file`` (read, recognise, load, replay): the peak resident set (``VmHWM``, Linux) and, in a second
   child, the peak traced by ``tracemalloc`` (Python allocations only, and slower).
2. Makes a sparse 2 GiB history file and replays it with ``replaytest replay`` in a child whose address
   space is limited to 1 GiB (``RLIMIT_AS``): the run must end with exit 2 and the refusal, having read
   nothing of the file; prints its wall time and peak resident set.

Run from the repository root: ``python benchmarks/history_limits_bench.py [--events N]``. Figures on a
shared, noisy machine vary by tens of percent between runs; compare peaks, not times.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import gc, json, sys, time, tracemalloc
sys.path.insert(0, {here!r})
from pathlib import Path
from replay_bench import bench_loop
from replaytest.plugins import load_plugins
from replaytest.replay.adapter import LoadedHistory, ReplayOptions, WorkflowSet
from replaytest.replay.runner import replay_file
path, what, traced = Path({path!r}), {what!r}, {traced!r}
replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
workflows, options = WorkflowSet((bench_loop,)), ReplayOptions()
import replaytest.plugins.journal.replayer  # imported outside the measurement
def high_water_kb():
    # VmHWM, not ru_maxrss: a child inherits its parent's ru_maxrss through fork, and exec keeps it.
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
gc.collect()
before = high_water_kb()
if traced:
    tracemalloc.start()
started = time.perf_counter()
if what == "load":
    LoadedHistory.read(path, options).history()
else:
    assert replay_file(path, replayers, workflows, options).status == "passed"
seconds = time.perf_counter() - started
peak = tracemalloc.get_traced_memory()[1] if traced else 0
print(json.dumps({{"seconds": seconds, "rss_before_kb": before,
                  "rss_peak_kb": high_water_kb(), "traced_peak": peak}}))
"""


def measure(path: Path, what: str, traced: bool) -> dict[str, float]:
    code = CHILD.format(here=str(HERE), path=str(path), what=what, traced=traced)
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(ran.stdout.strip().splitlines()[-1])
    return figures


def refuse_sparse(directory: Path) -> dict[str, float]:
    project = directory / "project"
    histories = project / "histories"
    histories.mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.replaytest.replay]\npaths = ["histories"]\n')
    with open(histories / "imported.json", "wb") as handle:
        handle.truncate(2 * 1024**3)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    started = time.perf_counter()
    ran = subprocess.run([sys.executable, "-m", "replaytest", "replay"], cwd=project, capture_output=True,
                         text=True, preexec_fn=limit)
    seconds = time.perf_counter() - started
    assert ran.returncode == 2 and "more than the history limit" in ran.stdout, ran.stdout + ran.stderr
    return {"seconds": seconds, "rss_peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500_000)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from replay_bench import build_history

    from replaytest.history import save_history

    with tempfile.TemporaryDirectory() as temp:
        directory = Path(temp)
        path = directory / "large" / "bench.json"
        save_history(build_history(args.events), path)
        size_mb = path.stat().st_size / 1e6
        print(f"history: {args.events:,} events, {size_mb:.0f} MB")
        # First: RUSAGE_CHILDREN is the largest child so far.
        refused = refuse_sparse(directory)
        for what in ("load", "replay_file"):
            rss = measure(path, what, traced=False)
            traced = measure(path, what, traced=True)
            grown = (rss["rss_peak_kb"] - rss["rss_before_kb"]) / 1e3
            print(f"{what}: peak RSS {rss['rss_peak_kb'] / 1e3:.0f} MB (+{grown:.0f} MB, {grown / size_mb:.1f}x the file), "
                  f"{rss['seconds']:.1f} s; tracemalloc peak {traced['traced_peak'] / 1e6:.0f} MB")
        print(f"sparse 2 GiB history under a 1 GiB address-space limit: refused (exit 2) in {refused['seconds']:.1f} s, "
              f"peak RSS {refused['rss_peak_kb'] / 1e3:.0f} MB")


if __name__ == "__main__":
    main()
