"""Replay benchmark: how replay time grows with history length, and how fast pytest collects histories.

1. Builds neutral histories of 51,200 and 512,000 events for a loop workflow (a model call and a step
   per iteration; events written directly in the format the journal exports, with the real argument
   digests and prompt versions, because recording half a million SQLite commits is not what is being
   measured) and times ``replaytest``'s replay of each: load + validate, and the replay itself.
2. Replays many small journal histories (``--replay-files`` files of ``--replay-file-events`` events)
   through ``replay.runner.replay_file``, the dispatch the CLI and pytest use, counting how often each
   history file is opened, then redacted histories that diverge at their last event (``--diverging-files``
   of ``--diverging-file-events``: the report lists the redacted paths), and measures the peak memory
   (tracemalloc) of loading and of replaying one large history (``--peak-events``).
3. Generates 10,000 small history files in a temporary project and times
   ``pytest --collect-only -q`` there (``--no-collect`` leaves this out).

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
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from replaytest.history import Event, History, PromptRef, WorkflowInfo, args_digest, load_history, save_history
from replaytest.journal import Prompt, workflow
from replaytest.plugins import load_plugins
from replaytest.plugins.journal.replayer import JournalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.runner import replay_file

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


@workflow("bench_loop")
def bench_loop_last_renamed(ctx: Any, n: int) -> int:
    """A later edit of ``bench_loop`` that renames the last step: a divergence at the last event."""
    total = 0
    for i in range(n):
        summary = ctx.model("summarise", summarise, i, prompt=PROMPT)
        total += ctx.step("store" if i < n - 1 else "store last", store, i, summary)
    return total


def build_history(events: int, redacted: tuple[str, ...] = ()) -> History:
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
        redacted=redacted,
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


class OpenCounter:
    """Counts opens of files below one folder (an audit hook: ``open`` and ``os.open`` both raise it)."""

    def __init__(self, folder: Path) -> None:
        self.prefix = str(folder)
        self.counts: Counter[str] = Counter()
        self.active = False
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.active and event == "open" and isinstance(args[0], (str, os.PathLike)):
            name = os.fspath(args[0])
            if name.startswith(self.prefix):
                self.counts[name] += 1


def time_many(files: int, events: int, directory: Path, counter: OpenCounter, diverging: bool = False) -> dict[str, float]:
    """Replays ``files`` journal histories of ``events`` events each through ``replay_file`` with every
    built-in replayer installed, as ``replaytest replay`` does; counts the opens of each history file.
    ``diverging``: the histories are redacted and the code diverges at their last event, so each report
    lists the redacted paths."""
    folder = directory / ("diverging" if diverging else "many")
    folder.mkdir()
    paths = []
    for i in range(files):
        path = folder / f"run-{i:05d}.json"
        save_history(build_history(events, ("$.workflow.id",) if diverging else ()), path)
        paths.append(path)
    replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
    workflows, options = WorkflowSet((bench_loop_last_renamed if diverging else bench_loop,)), ReplayOptions()
    expected = "diverged" if diverging else "passed"
    assert replay_file(paths[0], replayers, workflows, options).status == expected  # warm up imports
    counter.counts.clear()
    counter.active = True
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        statuses = Counter(replay_file(path, replayers, workflows, options).status for path in paths)
    finally:
        counter.active = False
    total, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert statuses == {expected: files}, statuses
    opens = [counter.counts[str(path)] for path in paths]
    return {"files": files, "events": events, "total_s": total, "cpu_s": cpu, "opens_min": min(opens),
            "opens_max": max(opens)}


def peak_memory(events: int, directory: Path) -> dict[str, float]:
    """Peak traced memory of ``load_history`` and of ``replay_file`` (read, recognise, load, replay) of one
    history of ``events`` events, against the size of the file."""
    path = directory / f"peak-{events}.json"
    save_history(build_history(events), path)
    replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
    workflows, options = WorkflowSet((bench_loop,)), ReplayOptions()
    assert replay_file(path, replayers, workflows, options).status == "passed"  # imports outside the trace
    figures: dict[str, float] = {"events": events, "file_mb": path.stat().st_size / 1e6}
    for name, run in (("load", lambda: load_history(path)), ("replay_file", lambda: replay_file(path, replayers, workflows, options))):
        gc.collect()
        tracemalloc.start()
        try:
            run()
            figures[f"{name}_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        finally:
            tracemalloc.stop()
    return figures


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
    parser.add_argument("--files", type=int, default=10_000, help="history files pytest collects")
    parser.add_argument("--no-collect", action="store_true", help="leave out the pytest collection timing")
    parser.add_argument("--sizes", default="51200,512000", help="events of the long histories, comma-separated")
    parser.add_argument("--replay-files", type=int, default=1_000, help="small histories replayed one by one")
    parser.add_argument("--replay-file-events", type=int, default=40, help="events in each small history")
    parser.add_argument("--diverging-files", type=int, default=40, help="redacted histories replayed to a divergence")
    parser.add_argument("--diverging-file-events", type=int, default=4_000, help="events in each of them")
    parser.add_argument("--peak-events", type=int, default=51_200, help="events of the history whose peak memory is traced")
    args = parser.parse_args()
    counter = OpenCounter(Path(tempfile.gettempdir()).resolve())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"## replay benchmark (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f}, "
        f"{time.strftime('%Y-%m-%d %H:%M')})",
        "",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        rows = [time_replay(int(size), directory) for size in args.sizes.split(",")]
        small, large = rows[0], rows[-1]
        for row in rows:
            lines.append(
                f"- {row['events']:,} events: {row['total_s']:.3f} s in total = load+validate {row['load_s']:.3f} s "
                f"+ replay {row['replay_s']:.3f} s ({row['total_s'] / row['events'] * 1e6:.1f} µs/event; "
                f"CPU time {row['cpu_s']:.3f} s)"
            )
        if len(rows) > 1:
            lines.append(
                f"- x{large['events'] / small['events']:g} the events: x{large['total_s'] / small['total_s']:.1f} the total "
                f"time (replay part x{large['replay_s'] / small['replay_s']:.1f}, load part "
                f"x{large['load_s'] / small['load_s']:.1f})"
            )
        scratch_dir = Path(scratch).resolve()
        many = time_many(args.replay_files, args.replay_file_events, scratch_dir, counter)
        lines.append(
            f"- replay_file over {many['files']:,} histories of {many['events']} events: {many['total_s']:.2f} s "
            f"({many['total_s'] / many['files'] * 1e3:.2f} ms/history; CPU time {many['cpu_s']:.2f} s); opens of "
            f"each history file: {many['opens_min']}..{many['opens_max']}"
        )
        diverging = time_many(args.diverging_files, args.diverging_file_events, scratch_dir, counter, diverging=True)
        lines.append(
            f"- replay_file over {diverging['files']:,} redacted histories of {diverging['events']:,} events diverging "
            f"at their last event: {diverging['total_s']:.2f} s ({diverging['total_s'] / diverging['files'] * 1e3:.1f} "
            f"ms/history; CPU time {diverging['cpu_s']:.2f} s); opens of each history file: "
            f"{diverging['opens_min']}..{diverging['opens_max']}"
        )
        peak = peak_memory(args.peak_events, scratch_dir)
        lines.append(
            f"- peak traced memory for a history of {peak['events']:,} events ({peak['file_mb']:.1f} MB): "
            f"load_history {peak['load_peak_mb']:.1f} MB, replay_file {peak['replay_file_peak_mb']:.1f} MB"
        )
        if not args.no_collect:
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
