"""Replay benchmark: how replay time grows with history length, and how fast pytest collects histories.

1. Builds neutral histories of 51,200 and 512,000 events for a loop workflow (a model call and a step
   per iteration; events written directly in the format the journal exports, with the real argument
   digests and prompt versions, because recording half a million SQLite commits is not what is being
   measured) and times ``replaytest``'s replay of each: load + validate, and the replay itself.
2. Generates 10,000 small history files in a temporary project and times
   ``pytest --collect-only -q`` there.

Run from the repository root: ``python benchmarks/replay_bench.py [--out FILE]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from replaytest.history import Event, History, PromptRef, WorkflowInfo, args_digest, load_history, save_history
from replaytest.journal import Prompt, workflow
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.plugins.journal_replay import JournalReplayer

PROMPT = Prompt("summariser", "Summarise item {i}")


def summarise(i: int) -> str:
    raise AssertionError("replay must not call steps")


def store(i: int, summary: str) -> int:
    raise AssertionError("replay must not call steps")


@workflow("bench_loop")
def bench_loop(ctx: Any, n: int) -> int:
    total = 0
    for i in range(n):
        summary = ctx.model("summarise", summarise, i, prompt=PROMPT)
        total += ctx.step("store", store, i, summary)
    return total


def build_history(events: int) -> History:
    iterations = events // 2
    recorded = []
    prompt = PromptRef(PROMPT.name, PROMPT.version)
    for i in range(iterations):
        summary = f"summary {i}"
        recorded.append(Event(seq=2 * i + 1, kind="model", name="summarise", args_digest=args_digest((i,)), prompt=prompt, result=summary))
        recorded.append(Event(seq=2 * i + 2, kind="step", name="store", args_digest=args_digest((i, summary)), result=1))
    return History(
        workflow=WorkflowInfo("bench_loop", f"bench-{events}", f"run-{events}"),
        status="completed",
        events=tuple(recorded),
        input=iterations,
        result=iterations,
        prompt_versions={PROMPT.name: PROMPT.version},
    )


def time_replay(events: int, directory: Path) -> dict[str, float]:
    """Times ``JournalReplayer.replay`` (what the CLI and pytest call: load + validate + replay), and
    loading alone, for the split."""
    path = directory / f"bench-{events}.json"
    save_history(build_history(events), path)
    gc.collect()
    replayer = JournalReplayer()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = replayer.replay(path, WorkflowSet((bench_loop,)), ReplayOptions())
    total, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert result.status == "passed", result
    gc.collect()
    gc.disable()  # as replay() does, so the split is comparable
    try:
        started = time.perf_counter()
        load_history(path)
        load = time.perf_counter() - started
    finally:
        gc.enable()
    return {"events": events, "load_s": load, "replay_s": total - load, "total_s": total, "cpu_s": cpu}


HISTORY_TEMPLATE = textwrap.dedent(
    """\
    {{
      "format": "replaytest-history",
      "format_version": 1,
      "workflow": {{"type": "bench_loop", "id": "bench-{i}", "engine": "journal"}},
      "status": "completed",
      "input": 0,
      "events": [],
      "result": 0
    }}
    """
)


def time_collection(files: int, directory: Path) -> dict[str, float]:
    project = directory / "collect"
    histories = project / "histories"
    for shard in range(files // 1000 + 1):
        (histories / f"shard{shard:02d}").mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (histories / f"shard{i // 1000:02d}" / f"run-{i:05d}.json").write_text(HISTORY_TEMPLATE.format(i=i))
    (project / "benchloop.py").write_text("def placeholder():\n    pass\n")
    (project / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\nreplay_workflows = ["benchloop:placeholder"]\n'
    )
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    subprocess.run([*command, "benchloop.py"], cwd=project, capture_output=True, check=False)  # warm bytecode caches
    cpu_before = _children_cpu()
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    count = sum(1 for line in completed.stdout.splitlines() if line.endswith("::replay"))
    assert count == files, completed.stdout[-2000:] + completed.stderr[-2000:]
    baseline_started = time.perf_counter()
    subprocess.run([*command, "benchloop.py"], cwd=project, capture_output=True, check=False)
    baseline = time.perf_counter() - baseline_started
    return {"files": files, "collect_s": elapsed, "collect_cpu_s": cpu, "pytest_startup_s": baseline}


def _children_cpu() -> float:
    if sys.platform == "win32":
        return float("nan")
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also append the figures (markdown) to this file")
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"## replay benchmark (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f}, "
        f"{time.strftime('%Y-%m-%d %H:%M')})",
        "",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        small = time_replay(51_200, directory)
        large = time_replay(512_000, directory)
        for row in (small, large):
            lines.append(
                f"- {row['events']:,} events: {row['total_s']:.3f} s in total = load+validate {row['load_s']:.3f} s "
                f"+ replay {row['replay_s']:.3f} s ({row['total_s'] / row['events'] * 1e6:.1f} µs/event; "
                f"CPU time {row['cpu_s']:.3f} s)"
            )
        lines.append(
            f"- 10x the events: x{large['total_s'] / small['total_s']:.1f} the total time "
            f"(replay part x{large['replay_s'] / small['replay_s']:.1f}, load part x{large['load_s'] / small['load_s']:.1f})"
        )
        collect = time_collection(args.files, directory)
        lines.append(
            f"- pytest --collect-only over {collect['files']:,} history files: {collect['collect_s']:.2f} s "
            f"(CPU time {collect['collect_cpu_s']:.2f} s; pytest start-up alone: {collect['pytest_startup_s']:.2f} s)"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
