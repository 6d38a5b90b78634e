"""Recorded Restate histories with damaged journal bytes: each replays to a result (passed, diverged or
error naming the file), never an exception out of the replayer. Bounded by time."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from restate_kit import Recording
from restate_shop import orders

from replaytest.plugins.restate.replayer import RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

_SECONDS = 8.0


def _mutate(rng: random.Random, document: dict) -> dict:
    entries = [entry for event in document["events"] for entry in event["journal"] if entry["rest"]]
    entry = rng.choice(entries)
    data = bytearray(bytes.fromhex(entry["rest"]))
    for _ in range(rng.randint(1, 3)):
        operation = rng.randrange(3)
        at = rng.randrange(len(data)) if data else 0
        if operation == 0 and data:
            data[at] = rng.randrange(256)
        elif operation == 1 and data:
            del data[at]
        else:
            data.insert(at, rng.randrange(256))
    entry["rest"] = bytes(data).hex()
    return document


def test_damaged_journal_bytes_replay_to_a_result(recording: Recording, tmp_path: Path) -> None:
    rng = random.Random(22)
    source = json.loads((recording.histories / f"{recording.ids['approved']}.json").read_text())
    replayer = RestateReplayer()
    workflows = WorkflowSet((orders.orders, orders.ledger))
    outcomes: dict[str, int] = {}
    deadline = time.monotonic() + _SECONDS
    attempt = 0
    while time.monotonic() < deadline and attempt < 300:
        attempt += 1
        path = tmp_path / f"damaged-{attempt}.json"
        path.write_text(json.dumps(_mutate(rng, json.loads(json.dumps(source)))))
        result = replayer.replay(path, workflows, ReplayOptions())
        outcomes[result.status] = outcomes.get(result.status, 0) + 1
        assert result.status in ("passed", "diverged", "error"), (path.read_text(), result)
        if result.status == "error":
            assert str(path) in str(result.error)
    assert attempt >= 20 and outcomes.get("error", 0) > 0, outcomes
