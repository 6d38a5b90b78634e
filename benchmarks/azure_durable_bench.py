"""Azure Durable Functions benchmark: import from Azurite's task hub tables and replay of N orchestrations.

Records ``--runs`` orders of the approvals app (tests/azure_durable/approvals) with the real SDK, played the
way the Functions host plays it (``tests/azure_durable/azure_kit.record``: a fan-out over three activities,
a price activity, a timer, an external event and a sub-orchestration per big order; small orders skip the
timer and the event), writes their rows to an Azurite table service on 127.0.0.1 in the
``AzureTableTrackingStore`` schema, then times

1. ``replaytest import azure-durable`` of the whole task hub (one process, as a user runs it), and
2. the replay of every imported history (orchestrations and their sub-orchestrations) through
   ``replay.runner.replay_file``, the dispatch the CLI and pytest use, against the unchanged app.

Needs ``node``/``npm`` (Azurite is installed into .test-tools on first use). Run from the repository root:
``python benchmarks/azure_durable_bench.py [--runs 1000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "azure_durable"))

from azure_kit import START, TASK_HUB, all_runs, azurite, record, run_cli, write_task_hub  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="orchestrations to record, import and replay")
    args = parser.parse_args()

    from approvals import function_app

    from replaytest.plugins import load_plugins
    from replaytest.replay.adapter import ReplayOptions, WorkflowSet
    from replaytest.replay.runner import iter_history_files, replay_file

    started = time.perf_counter()
    runs = []
    for number in range(args.runs):
        big = number % 2 == 0
        items = ["apple", "banana", "kiwi"] if big else ["fig"]
        events = {"approval": {"approved": True}} if big else None
        runs.append(record(function_app.app, "order_approval", f"bench-{number:05d}", {"id": f"b{number}", "items": items},
                           events, created=START + timedelta(seconds=number)))
    everything = all_runs(runs)
    rows = sum(len(run.events) + 1 for run in everything)
    print(f"recorded {len(runs)} orchestrations ({len(everything)} instances with their sub-orchestrations, {rows:,} History rows) "
          f"in {time.perf_counter() - started:.1f}s")

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "azurite").mkdir()
        with azurite(folder / "azurite") as server:
            started = time.perf_counter()
            write_task_hub(server.service(), runs)
            print(f"wrote the task hub to Azurite in {time.perf_counter() - started:.1f}s")
            out = folder / "histories"
            started = time.perf_counter()
            done = run_cli("import", "azure-durable", "--connection-string", server.connection_string, "--task-hub", TASK_HUB,
                           "--out", str(out), "--no-redact", timeout_s=3600)
            elapsed = time.perf_counter() - started
            if done.returncode != 0:
                raise SystemExit(done.stdout + done.stderr[-3000:])
            files = sorted(iter_history_files([out]))
            print(f"import: {len(files)} histories in {elapsed:.1f}s ({len(files) / elapsed:.0f} histories/s, one process)")

        replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
        workflows = WorkflowSet([function_app.app])
        options = ReplayOptions()
        started = time.perf_counter()
        statuses: dict[str, int] = {}
        for path in files:
            result = replay_file(path, replayers, workflows, options)
            statuses[result.status] = statuses.get(result.status, 0) + 1
        elapsed = time.perf_counter() - started
        print(f"replay: {len(files)} histories in {elapsed:.2f}s ({elapsed / len(files) * 1000:.2f} ms each): {statuses}")
        if set(statuses) != {"passed"}:
            raise SystemExit("every history must replay green against the unchanged app")


if __name__ == "__main__":
    main()
