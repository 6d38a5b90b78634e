"""What the audit layer of the replay guards costs: replays timed with and without the audit hook.

The guards stop effects twice: patched calls name them at their line, and a PEP 578 audit hook, once
installed never removable, stops the interpreter's effect events that no patch sees. The hook runs for
every audited event of the process (``open`` for reading, ``sys._getframe``, imports, ...), so this
measures a replay with it against the same replay in a process where it is never installed.

Each round starts two child processes, one per mode, in alternating order; each replays the same
journal histories through ``replay.runner.replay_file`` (what the CLI and pytest call): ``--files`` small
histories of ``--events`` events, and one history of ``--large`` events. Best CPU time over ``--rounds``.

Run from the repository root: ``python benchmarks/guard_cost_bench.py [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def child(directory: Path, audit: bool) -> dict[str, float]:
    from replay_bench import bench_loop

    from replaytest.plugins.journal.replayer import JournalReplayer
    from replaytest.replay import guards
    from replaytest.replay.adapter import ReplayOptions, WorkflowSet
    from replaytest.replay.runner import replay_file

    if not audit:
        guards._install_audit_hook = lambda: None  # type: ignore[assignment]
    replayers, workflows = [JournalReplayer()], WorkflowSet((bench_loop,))
    small = sorted(directory.glob("small-*.json"))
    started = time.process_time()
    for path in small:
        assert replay_file(path, replayers, workflows, ReplayOptions()).status == "passed"
    small_cpu = time.process_time() - started
    started = time.process_time()
    assert replay_file(directory / "large.json", replayers, workflows, ReplayOptions()).status == "passed"
    large_cpu = time.process_time() - started
    return {"small_cpu_s": small_cpu, "large_cpu_s": large_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--large", type=int, default=51_200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", choices=("audit", "no-audit"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(child(arguments.dir, arguments.child == "audit")))
        return

    from replay_bench import build_history

    from replaytest.history import save_history

    with tempfile.TemporaryDirectory(prefix="replaytest-guard-bench-") as folder:
        directory = Path(folder)
        small = build_history(arguments.events)
        for index in range(arguments.files):
            save_history(small, directory / f"small-{index:05d}.json")
        save_history(build_history(arguments.large), directory / "large.json")
        best: dict[str, dict[str, float]] = {}
        for round_number in range(arguments.rounds):
            modes = ("audit", "no-audit") if round_number % 2 == 0 else ("no-audit", "audit")
            for mode in modes:
                run = subprocess.run([sys.executable, __file__, "--child", mode, "--dir", str(directory)],
                                     capture_output=True, text=True, check=True)  # fmt: skip
                figures = json.loads(run.stdout)
                kept = best.setdefault(mode, figures)
                for key, value in figures.items():
                    kept[key] = min(kept[key], value)
    print(f"load: {os.getloadavg()[0]:.2f}; best CPU of {arguments.rounds} rounds")
    for key, label in (("small_cpu_s", f"{arguments.files} histories of {arguments.events} events"),
                       ("large_cpu_s", f"one history of {arguments.large} events")):  # fmt: skip
        without, with_hook = best["no-audit"][key], best["audit"][key]
        print(f"{label}: {without:.3f} s without the audit hook, {with_hook:.3f} s with it: {100 * (with_hook / without - 1):+.1f} %")


if __name__ == "__main__":
    main()
