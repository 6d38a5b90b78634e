"""Long fuzz run over the history faces: mutated neutral and Temporal histories through the loader,
``replay``, ``diff`` and ``redact``; reports runs, uncaught exceptions and hangs (targets: 0 and 0).

Neutral histories (``fixtures/histories``) get byte-level mutations (inserted hostile tokens - 1e999,
NaN, lone surrogates, 5,000-digit integers, deep brackets, duplicate keys, NUL, control characters -
deletions, flipped bytes, truncation). Temporal histories (``tests/temporal/histories``) get event-level
mutations (deleted, duplicated, swapped or retyped events, ids changed, attributes dropped, truncation;
ids renumbered nine times in ten so the sequence checks are not the only line of defence) and are
replayed with the real temporalio Replayer against the workflow that recorded them.

An *uncaught exception* is anything but a ``HistoryError``/``DiffError`` or a replay result; a *hang*
is a run that does not finish within ``--timeout`` seconds (SIGALRM).

Usage: ``python benchmarks/fuzz_histories.py [--runs 2000] [--temporal-runs 150] [--seed 1] [--timeout 120]``
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "temporal"))

from replaytest.history import HistoryError, Redactor, load_history, redact_history  # noqa: E402
from replaytest.plugins import load_plugins  # noqa: E402
from replaytest.replay.adapter import ReplayOptions  # noqa: E402
from replaytest.replay.diff import DiffError, diff_files  # noqa: E402
from replaytest.replay.runner import load_workflows, replay_file  # noqa: E402

INSERTS = [b"1e999", b"NaN", b"Infinity", b'"\\ud800"', b"9" * 5000, b"[" * 900, b"{" * 50, b'"status": "x", "status"',
           b"\x00", b"\xff\xfe", b'"redacted": 3', b"-1", b"null", b'"\x1b[31m\r\n"', b"}", b'"result_ref": "sha256:00"']


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang()


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        action = rng.choice(["insert", "delete", "flip", "truncate"])
        if action == "insert":
            out[at:at] = rng.choice(INSERTS)
        elif action == "delete":
            del out[at : at + rng.randint(1, 60)]
        elif action == "flip" and at < len(out):
            out[at] = rng.randint(0, 255)
        elif action == "truncate":
            del out[at:]
    return bytes(out)


def mutate_temporal(rng: random.Random, document: dict) -> dict:
    events = document["events"]
    for _ in range(rng.choice([1, 1, 2, 3])):
        if len(events) < 2:
            break
        i = rng.randrange(1, len(events))
        op = rng.choice(["del", "dup", "swap", "id", "type", "attrdel", "trunc", "ref", "payload"])
        if op == "del":
            del events[i]
        elif op == "dup":
            events.insert(i, copy.deepcopy(events[i]))
        elif op == "swap":
            j = rng.randrange(1, len(events))
            events[i], events[j] = events[j], events[i]
        elif op == "id":
            events[i]["eventId"] = str(rng.choice([0, 1, 5, 99, -1, 10**6]))
        elif op == "type":
            events[i]["eventType"] = rng.choice([e.get("eventType", "") for e in events] + ["EVENT_TYPE_UNSPECIFIED", "bogus"])
        elif op == "attrdel":
            for key in [k for k in events[i] if k.endswith("Attributes")]:
                del events[i][key]
        elif op == "trunc":
            del events[i:]
        elif op == "ref":
            for value in events[i].values():
                if isinstance(value, dict):
                    for key in value:
                        if key.endswith("EventId"):
                            value[key] = str(rng.choice([0, 3, 7, 99]))
        elif op == "payload":
            text = json.dumps(events[i])
            events[i] = json.loads(text.replace('"data": "', '"data": "!!', 1)) if '"data": "' in text else events[i]
    if rng.random() < 0.9:
        for index, event in enumerate(events):
            event["eventId"] = str(index + 1)
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="neutral history runs")
    parser.add_argument("--temporal-runs", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    signal.signal(signal.SIGALRM, _alarm)
    folder = Path(tempfile.mkdtemp(prefix="fuzz-histories-"))
    plugins = load_plugins()
    replayers = [plugin.replayer for plugin in plugins if plugin.replayer is not None]
    neutral_seeds = sorted((REPO / "fixtures" / "histories").glob("*.json"))
    workflows = load_workflows(["fixtures.journal_app.agent:support_agent"], REPO)
    outcomes: Counter[str] = Counter()
    uncaught: list[str] = []
    hangs: list[str] = []
    started = time.perf_counter()

    def attempt(label: str, path: Path, work) -> None:  # type: ignore[no-untyped-def]
        signal.setitimer(signal.ITIMER_REAL, options.timeout)
        try:
            outcomes[work()] += 1
        except Hang:
            hangs.append(f"{label}: {path}")
        except (HistoryError, DiffError):
            outcomes["rejected"] += 1
        except Exception:
            uncaught.append(f"{label}: {path}\n{traceback.format_exc(limit=4)}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    for run in range(options.runs):
        path = folder / f"n{run}.json"
        path.write_bytes(mutate_bytes(rng, rng.choice(neutral_seeds).read_bytes()))
        attempt("load", path, lambda: (load_history(path), "loaded")[1])
        attempt("replay", path, lambda: "replay-" + replay_file(path, replayers, workflows, ReplayOptions()).status)
        attempt("diff", path, lambda: "diff-" + ("same" if diff_files(path, neutral_seeds[0]).identical else "differs"))
        attempt("redact", path, lambda: (redact_history(load_history(path), Redactor.build()), "redacted")[1])

    if options.temporal_runs:
        import temporal_wf_hello
        import temporal_wf_sayhello

        temporal_workflows = load_workflows((), None, [temporal_wf_hello.Hello, temporal_wf_sayhello.SayHelloWorkflow])
        seeds = [REPO / "tests/temporal/histories" / name for name in
                 ("hello_timer_history.json", "test_replayer_complete_history.json")]
        temporal_redactor = next(p for p in plugins if p.history_redactor is not None)
        for run in range(options.temporal_runs):
            document = mutate_temporal(rng, json.loads(rng.choice(seeds).read_text(encoding="utf-8")))
            path = folder / f"t{run}.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            attempt("temporal-replay", path,
                    lambda: "temporal-" + replay_file(path, replayers, temporal_workflows, ReplayOptions()).status)
            attempt("temporal-redact", path,
                    lambda: (temporal_redactor.redact_history_file(path, path.with_suffix(".red.json"), Redactor.build()),
                             "temporal-redacted")[1])

    elapsed = time.perf_counter() - started
    total = sum(outcomes.values()) + len(uncaught) + len(hangs)
    print(f"runs: {total} ({options.runs} neutral files x 4 faces, {options.temporal_runs} Temporal files x 2) in {elapsed:.0f} s")
    print(f"uncaught exceptions: {len(uncaught)}; hangs (> {options.timeout:.0f} s): {len(hangs)}")
    print("outcomes: " + ", ".join(f"{key} {value}" for key, value in sorted(outcomes.items())))
    for item in uncaught[:10] + hangs[:10]:
        print("---\n" + item)
    print(f"inputs kept in {folder}")
    if uncaught or hangs:
        sys.exit(1)


if __name__ == "__main__":
    main()
