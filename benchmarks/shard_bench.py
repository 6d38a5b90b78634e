"""Sharding at scale: ``replaytest check --shard I/4`` over 100,000 generated histories, the four shards run one
after another on this machine as four CI jobs would run side by side.

Reports each shard's wall and CPU time and how many histories it took, the total (the sum: the machine time
a CI matrix pays) and the slowest shard (the matrix's wall time), then merges the four JSON reports with
``replaytest merge-results`` and checks that every history was replayed exactly once. The histories are
copies of a few runs recorded by the real journal (``histories_at_scale``); no cache (``--no-cache``), so
every shard replays its whole share.

Measured once (a quiet two-core machine, load average 0.3): 100,000 histories generated in 14 s; shards
1-4 took 25,057 / 25,043 / 25,025 / 24,875 histories in 47.9 / 46.8 / 42.8 / 54.1 s wall (45.8 / 45.5 /
42.2 / 46.5 s CPU); 191.7 s in all, the slowest shard 54.1 s; merged, every history replayed exactly once.

Run from the repository root: ``python benchmarks/shard_bench.py [--histories 100000] [--shards 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from histories_at_scale import make_project  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        project = make_project(Path(folder) / "project", args.histories)
        print(f"generated {args.histories:,} histories in {time.perf_counter() - started:.1f} s; "
              f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start")
        print("| shard | histories | wall s | CPU s |")
        print("| --- | --- | --- | --- |")
        reports, walls, cpus = [], [], []
        for index in range(1, args.shards + 1):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "replaytest", "check", "--no-cache", "-q", "--format", "json",
                                   "--shard", f"{index}/{args.shards}", "delays.py"],
                                  cwd=project, capture_output=True, text=True, timeout=7200)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(f"shard {index} failed ({done.returncode}): {done.stderr[-3000:]}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            report = Path(folder) / f"shard-{index}.json"
            report.write_text(done.stdout, encoding="utf-8")
            reports.append(str(report))
            shard = json.loads(done.stdout)["replay"]["shard"]
            walls.append(wall)
            cpus.append(cpu)
            print(f"| {index}/{args.shards} | {shard['histories']:,} of {shard['of']:,} | {wall:.1f} | {cpu:.1f} |")
        print(f"| total | {args.histories:,} | {sum(walls):.1f} | {sum(cpus):.1f} |")
        print(f"slowest shard (the matrix's wall time): {max(walls):.1f} s")
        merged = subprocess.run([sys.executable, "-m", "replaytest", "merge-results", *reports], cwd=project,
                                capture_output=True, text=True, timeout=600, check=True)
        replay = json.loads(merged.stdout)["replay"]
        names = [result["history"] for result in replay["results"]]
        assert len(names) == len(set(names)) == args.histories, (len(names), len(set(names)))
        assert replay["summary"]["passed"] == args.histories
        print(f"merged: {replay['merged']}; every history replayed exactly once, all passed")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
