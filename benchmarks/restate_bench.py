"""Restate: import and replay of invocations recorded on a real Restate server.

Starts ``restate-server`` 1.7.12 (npm) and the tests' order desk (``tests/restate/restate_shop``, served by
hypercorn) on 127.0.0.1, sends ``--invocations`` orders through the ingress (``orders/place``: two ``ctx.run``
steps, a call to a service and one to a virtual object that reads and writes its state; one in ten waits for
an approval and stays suspended), waits until every one is completed or suspended, and then times:

* **import**: ``import_invocations`` in-process (two SQL queries per 200 invocations over the admin API,
  split and decode each entry, write and validate one neutral history per invocation);
* **replay**: ``RestateReplayer().replay`` of every imported history (load, rebuild the protocol messages,
  run the handler on the SDK's state machine, match).

    python benchmarks/restate_bench.py [--invocations 1000] [--repeat 3]

Needs the test extra (restate-sdk, hypercorn) and npm. Prints the machine load with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "restate"))

from restate_kit import http, query, running_desk  # noqa: E402
from restate_shop import orders  # noqa: E402

from replaytest.plugins.restate.importer import import_invocations  # noqa: E402
from replaytest.plugins.restate.replayer import RestateReplayer  # noqa: E402
from replaytest.replay.adapter import ReplayOptions, WorkflowSet  # noqa: E402

_SETTLE_SECONDS = 300


def _send_orders(ingress: str, count: int) -> float:
    started = time.perf_counter()

    def send(number: int) -> None:
        body = {"item": f"item-{number}", "customer": f"customer-{number % 50}", "approval": number % 10 == 0}
        http("POST", f"{ingress}/orders/place/send", body)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(send, range(count)))
    return time.perf_counter() - started


def _settled(admin: str, count: int) -> float:
    started = time.perf_counter()
    deadline = time.monotonic() + _SETTLE_SECONDS
    while time.monotonic() < deadline:
        rows = query(admin, "SELECT status, count(*) AS n FROM sys_invocation WHERE target_service_name = 'orders' GROUP BY status")
        by_status = {row["status"]: int(row["n"]) for row in rows}
        if by_status.get("completed", 0) + by_status.get("suspended", 0) >= count:
            return time.perf_counter() - started
        time.sleep(0.5)
    raise TimeoutError(f"the orders did not settle within {_SETTLE_SECONDS}s: {by_status}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invocations", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    imports: list[float] = []
    replays: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        with running_desk(folder) as desk:
            sending = _send_orders(desk.ingress, arguments.invocations)
            settling = _settled(desk.admin, arguments.invocations)
            for attempt in range(arguments.repeat):
                out = folder / f"histories-{attempt}"
                started = time.perf_counter()
                written, _ = import_invocations(desk.admin, out, service="orders")
                imports.append(time.perf_counter() - started)
        paths = sorted(out.glob("*.json"))
        replayer = RestateReplayer()
        workflows = WorkflowSet((orders.orders, orders.ledger, orders.pricing))
        for _ in range(arguments.repeat):
            started = time.perf_counter()
            results = [replayer.replay(path, workflows, ReplayOptions()) for path in paths]
            replays.append(time.perf_counter() - started)
        statuses = {status: sum(1 for r in results if r.status == status) for status in ("passed", "diverged", "stale", "error")}
        in_flight = sum(1 for r in results if r.in_flight)
        events = sum(r.events for r in results)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"recorded on restate-server 1.7.12: {arguments.invocations} invocations sent in {sending:.1f}s, settled {settling:.1f}s later")
    print(f"import: {written} histories ({events} commands, {in_flight} in flight), median {statistics.median(imports):.2f}s "
          f"({1000 * statistics.median(imports) / max(written, 1):.2f} ms per invocation) over {arguments.repeat} runs")
    print(f"replay: median {statistics.median(replays):.2f}s ({1000 * statistics.median(replays) / max(len(paths), 1):.2f} ms per history) "
          f"over {arguments.repeat} runs; {statuses}")
    print(f"load average (1, 5, 15 min): {load} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
