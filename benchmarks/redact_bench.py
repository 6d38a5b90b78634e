"""Redaction benchmark: how fast the redactor scrubs a large history of an agent's tool calls.

Builds one neutral history of ``--events`` events (default 20,000) shaped like a support agent's run:
model replies in free text, tool results as nested JSON with ids, UUIDs, sha256 argument digests,
timestamps, base64 attachments and, in one event in fifty, a planted credential of a known shape.
Times ``redact_history`` over it (best of ``--repeat`` runs, the pseudonym key fixed so every run does
the same work) and prints the string characters scrubbed per second of CPU time (the process's own,
less disturbed than wall time on a shared machine), wall time, and how many values were replaced.

Run from the repository root: ``python benchmarks/redact_bench.py [--events N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import time
import uuid
from typing import Any

from replaytest.history import Event, History, Redactor, WorkflowInfo, redact_history

# Fake credentials of the shapes the redactor knows, planted now and then in free text.
PLANTED = (
    "using key sk-proj-Zx81Lq0Pw2Ye7Rv5Tn3Ub6Wc9Md4Kf1Hg",
    "pushed with ghp_R8d2K1mQ7vX0cL5tN9wB3yH6fJ4sA2pZ1eUo",
    "db at postgres://orders:Vq7mX2pL9sK4wN8r@db.internal:5432/orders",
    "export STRIPE_KEY=sk_live_51HqLmN2eZvKYlo2CpT8rXw9QbF3aD7g",
    "header Authorization: Bearer 9f8e7d6c5b4a3928171615141312111009080706",
)


def _event(index: int) -> Event:
    order_id = f"ord_{index:08d}"
    request_id = str(uuid.UUID(int=index * 7919 + 13))
    digest = hashlib.sha256(f"args-{index}".encode()).hexdigest()
    reply = (
        f"I looked up order {order_id} (request {request_id}). The parcel left the Leeds depot on "
        f"2024-03-{index % 28 + 1:02d} and is expected within 3 working days; tracking number "
        f"1Z999AA1{index:010d}. Let me know if you want me to open a claim."
    )
    if index % 50 == 0:
        reply += " " + PLANTED[(index // 50) % len(PLANTED)]
    result = {
        "reply": reply,
        "order": {"id": order_id, "status": "shipped", "items": [{"sku": f"SKU-{index % 997:04d}", "qty": 2}]},
        "trace": {"request_id": request_id, "digest": digest, "at": f"2024-03-01T10:{index % 60:02d}:00Z"},
        "attachment": base64.b64encode(f"label for {order_id}".encode()).decode(),
        "max_tokens": 512,
    }
    return Event(index + 1, "step", "lookup_order", args_digest=f"sha256:{digest}", result=result)


def _string_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(key) + _string_chars(item) for key, item in value.items())
    if isinstance(value, list):
        return sum(_string_chars(item) for item in value)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    events = tuple(_event(index) for index in range(args.events))
    history = History(workflow=WorkflowInfo("support_agent", "support-run-1", run_id="r1"), status="completed",
                      input={"customer": {"name": "Dana"}}, events=events)
    chars = sum(_string_chars(event.result) for event in events)
    redactor = Redactor.build(secret=b"benchmark-key")
    best_cpu = best_wall = float("inf")
    count = 0
    for _ in range(args.repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        _, count = redact_history(history, redactor)
        best_cpu, best_wall = min(best_cpu, time.process_time() - cpu), min(best_wall, time.perf_counter() - wall)
    print(f"{args.events} events, {chars / 1e6:.1f} M string characters, best of {args.repeat}: "
          f"{best_cpu:.2f} s CPU ({chars / best_cpu / 1e6:.2f} M chars/s, {args.events / best_cpu:,.0f} events/s), "
          f"{best_wall:.2f} s wall; {count} values replaced")


if __name__ == "__main__":
    main()
