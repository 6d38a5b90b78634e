"""``replaytest corpus`` on a production-like folder: 10,000 histories of one workflow type, skewed the
way a busy type is — few command shapes with many runs each, a rare path or two, some runs in flight.

The histories are real runs of the corpus tests' triage agent (``tests/corpus/triage_agent.py``) on the
journal runtime, each ticket from another customer (so every file differs), in these shares:

* 88.9% questions from standard-plan customers (one shape),
* 9% outages, acknowledged, under the current code (the shape with the ``page-on-call`` patch marker),
* 1% outages nobody acknowledged yet (parked: in flight, always kept),
* 1% questions from the enterprise customer (the same shape as the questions; a rare line: the
  ``priority`` queue),
* 0.1% outages recorded before the patch (a rare shape: no marker, no page).

By hand: the selection keeps the 100 parked runs and three more (the enterprise question, the old outage,
one acknowledged outage; the parked runs cover the standard queue and the outage block): 103 of 10,000.
The script records the runs (timed apart), then times one ``replaytest corpus --out`` (replaying and
measuring all, selecting, copying and measuring the kept set again) and prints the kept count and the
coverage before and after.

Measured once (2 December 2026, two cores at load 8 to 11): recording 353 s; ``corpus --out`` 312.7 s
wall, 69.3 s CPU (6.9 ms of CPU per history); kept 103 of 10,000, before and after 4 shapes, 12 lines,
6 branches.

Usage: ``python benchmarks/corpus_bench.py [--runs 10000]``. It prints ``uptime`` before and after: the
machine's load moves the wall time.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "tests" / "corpus"
sys.path.insert(0, str(AGENT))

import triage_agent  # noqa: E402
import triage_agent_before_paging  # noqa: E402

from replaytest.history import save_history  # noqa: E402
from replaytest.journal import Journal, Worker  # noqa: E402

OUTAGE = "The dashboard is down for our whole team."


def _kinds(runs: int) -> list[str]:
    """The kind of each run, spread through the folder (not in blocks), in the shares the docstring names."""
    kinds = []
    for index in range(runs):
        if index % 1000 == 500:
            kinds.append("outage-before-paging")
        elif index % 100 == 7:
            kinds.append("outage-waiting")
        elif index % 100 == 13:
            kinds.append("question-enterprise")
        elif index % 100 in (21, 34, 42, 55, 63, 71, 86, 90, 98):
            kinds.append("outage")
        else:
            kinds.append("question")
    return kinds


def record(histories: Path, scratch: Path, runs: int) -> dict[str, int]:
    histories.mkdir()
    kinds = _kinds(runs)
    with Journal(scratch / "current.sqlite3") as journal:
        worker = Worker(journal, [triage_agent.triage_agent])
        for index, kind in enumerate(kinds):
            if kind == "outage-before-paging":
                continue
            customer = "eve@example.com" if kind == "question-enterprise" else f"user{index}@example.com"
            text = OUTAGE if kind.startswith("outage") else f"How do I export invoice {index}?"
            journal.start(triage_agent.triage_agent, {"customer": customer, "text": text}, run_id=f"run-{index:05}",
                          workflow_id=f"ticket-{index:05}")
        worker.run_until_idle()
        for index, kind in enumerate(kinds):
            if kind == "outage":
                journal.signal(f"run-{index:05}", "acknowledged", {"by": "oncall@example.com"})
        worker.run_until_idle()
        for index, kind in enumerate(kinds):
            if kind != "outage-before-paging":
                save_history(journal.export(f"run-{index:05}"), histories / f"triage-{index:05}.json")
    with Journal(scratch / "before.sqlite3") as journal:
        worker = Worker(journal, [triage_agent_before_paging.triage_agent])
        for index, kind in enumerate(kinds):
            if kind == "outage-before-paging":
                journal.start(triage_agent_before_paging.triage_agent,
                              {"customer": f"user{index}@example.com", "text": OUTAGE}, run_id=f"run-{index:05}",
                              workflow_id=f"ticket-{index:05}")
        worker.run_until_idle()
        for index, kind in enumerate(kinds):
            if kind == "outage-before-paging":
                journal.signal(f"run-{index:05}", "acknowledged", {"by": "oncall@example.com"})
        worker.run_until_idle()
        for index, kind in enumerate(kinds):
            if kind == "outage-before-paging":
                save_history(journal.export(f"run-{index:05}"), histories / f"triage-{index:05}.json")
    return {kind: kinds.count(kind) for kind in sorted(set(kinds))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shutil.copy(AGENT / "triage_agent.py", root / "triage_agent.py")
        (root / "pyproject.toml").write_text(
            '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["triage_agent:triage_agent"]\n'
        )
        started = time.perf_counter()
        shares = record(root / "histories", root, args.runs)
        recorded = time.perf_counter() - started
        print(f"recorded {args.runs} histories in {recorded:.1f} s: " + ", ".join(f"{k} {v}" for k, v in shares.items()))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "replaytest", "corpus", "-q", "--output-format", "json",
                              "--out", "corpus"], cwd=root, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # The command and the fresh process measuring the kept set again; on a shared machine CPU time
        # moves less with the load than wall time does.
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if run.returncode != 0:
            print(run.stdout[-4000:], run.stderr[-4000:], sep="\n")
            return 1
        document = json.loads(run.stdout)
        summary = document["summary"]
        print(f"replaytest corpus --out: {elapsed:.1f} s wall, {cpu:.1f} s CPU for {summary['histories']} histories "
              f"({1000 * elapsed / summary['histories']:.2f} ms wall, {1000 * cpu / summary['histories']:.2f} ms CPU each)")
        print(f"kept {summary['kept']}, dropped {summary['dropped']} ({summary['smaller_percent']}% smaller); "
              f"coverage equal: {summary['coverage_equal']}")
        for workflow in document["workflows"]:
            reasons: dict[str, int] = {}
            for item in workflow["kept_histories"]:
                for reason in item["reasons"]:
                    reasons[reason["kind"]] = reasons.get(reason["kind"], 0) + 1
            print(f"  {workflow['workflow_type']}: {len(workflow['shapes'])} shapes "
                  f"({', '.join(str(shape['runs']) for shape in sorted(workflow['shapes'], key=lambda s: -s['runs']))} runs); "
                  f"before {workflow['coverage_before']}, after {workflow['coverage_after']}; reasons {reasons}")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
