"""Deploy-impact benchmark: ``impact`` (one replay of every history, the resume rehearsal of every green
in-flight run by the engine's own code, grouping, guard synthesis and the verification replay — with
rehearsal — of every history against the guarded copy) against one plain ``replaytest check`` of the same
histories. Targets: at most 3x for 1,000 histories with 100 in flight (rehearsal on); at most 4x before it.

An order-fulfilment workflow on the journal runtime (version 1, committed in a temporary git project)
is run by the real runtime for four template orders: one parked at the payment wait, one paid, one
unpaid, one paid gift order. ``--histories`` files (default 1,000), ``--in-flight`` of them (default 100)
parked, the others finished, are cloned from those templates with fresh workflow and run ids (the workflow uses no idempotency keys, so a clone replays exactly as a
recorded run would). Version 2 changes the paid branch, the unpaid branch and the gift step: three
divergence groups, three guards, verified together in one replay of every history.

Run from the repository root: ``python benchmarks/impact_bench.py [--histories N] [--in-flight M]``. The
plain ``check`` runs once before and once after impact (the machine's load may change meanwhile); the ratio
is to their mean.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ORDERS_V1 = '''"""Order fulfilment: reserve stock, price the order, wait for payment, ship or release."""

from __future__ import annotations

from typing import Any

from replaytest.journal import workflow


def reserve(sku: str, qty: int) -> dict[str, Any]:
    return {"sku": sku, "reserved": qty}


def price(sku: str, qty: int) -> float:
    return round(qty * (9.5 + len(sku)), 2)


def wrap(order_id: str) -> str:
    return "wrapped " + order_id


def ship(order_id: str, speed: str) -> str:
    return f"{speed} parcel for {order_id}"


def release(sku: str, qty: int) -> int:
    return qty


def receipt(order_id: str, total: float) -> str:
    return f"receipt {order_id}: {total}"


@workflow(name="order_fulfilment")
def order_fulfilment(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    ctx.step("reserve stock", reserve, order["sku"], order["qty"])
    total = ctx.step("price order", price, order["sku"], order["qty"])
    payment = ctx.wait_signal("payment", timeout=3 * 86400)
    if payment and payment.get("paid"):
        if order.get("gift"):
            ctx.step("wrap gift", wrap, order["id"])
        ctx.step("ship parcel", ship, order["id"], "standard")
    else:
        ctx.step("release stock", release, order["sku"], order["qty"])
    ctx.step("send receipt", receipt, order["id"], total)
    return {"order": order["id"], "paid": bool(payment and payment.get("paid"))}
'''

# Version 2: three changes, each reached by another kind of run.
CHANGES = [
    ('            ctx.step("wrap gift", wrap, order["id"])\n',
     '            ctx.step("wrap gift in recycled paper", wrap, order["id"])\n'),
    ('        ctx.step("ship parcel", ship, order["id"], "standard")\n',
     '        ctx.step("ship parcel by courier", ship, order["id"], "express")\n'),
    ('        ctx.step("release stock", release, order["sku"], order["qty"])\n',
     '        ctx.step("return stock to shelf", release, order["sku"], order["qty"])\n'),
]
TEMPLATES = {
    "parked": ({"id": "O-1", "sku": "lamp", "qty": 1}, None),
    "paid": ({"id": "O-2", "sku": "desk", "qty": 2}, {"paid": True}),
    "unpaid": ({"id": "O-3", "sku": "chair", "qty": 4}, {"paid": False}),
    "gift": ({"id": "O-4", "sku": "vase", "qty": 1, "gift": True}, {"paid": True}),
}
SPEC = "shop.orders:order_fulfilment"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def build_project(folder: Path, count: int, in_flight: int) -> tuple[Path, Path]:
    """The project (version 1 committed, version 2 in the working tree) and ``count`` histories."""
    from replaytest.history import load_history, save_history
    from replaytest.journal import Journal, Worker
    from replaytest.replay.runner import import_object

    root = folder / "shop-service"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    module = root / "shop" / "orders.py"
    module.write_text(ORDERS_V1)
    (root / "pyproject.toml").write_text('[project]\nname = "shop-service"\nversion = "1"\n\n[tool.replaytest.replay]\n'
                                         f'paths = ["histories"]\nworkflows = ["{SPEC}"]\n')
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "dev@example.com"],
                 ["config", "user.name", "Dev"], ["add", "-A"], ["commit", "-q", "-m", "orders v1"]):
        _git(root, *args)
    workflow = import_object(SPEC, root)
    templates = {}
    with Journal(folder / "journal.sqlite3", clock=lambda: 1_780_000_000.0) as journal:
        worker = Worker(journal, [workflow], heartbeat=False)
        for name, (order, _payment) in TEMPLATES.items():
            journal.start(workflow, order, run_id=f"run-{name}", workflow_id=f"order-{name}")
        worker.run_until_idle()
        for name, (_order, payment) in TEMPLATES.items():
            if payment is not None:
                journal.signal(f"run-{name}", "payment", payment)
        worker.run_until_idle()
        for name in TEMPLATES:
            path = folder / f"template-{name}.json"
            save_history(journal.export(f"run-{name}"), path)
            templates[name] = load_history(path)
    histories = root / "histories"
    histories.mkdir()
    finished = [name for name in templates if name != "parked"]
    for number in range(count):
        template = templates["parked" if number < in_flight else finished[number % len(finished)]]
        info = dataclasses.replace(template.workflow, id=f"order-{number}", run_id=f"run-{number}")
        save_history(dataclasses.replace(template, workflow=info), histories / f"order-{number:05d}.json")
    # The replay must import version 2, not the version 1 module the recording imported.
    for name in [name for name in sys.modules if name == "shop" or name.startswith("shop.")]:
        del sys.modules[name]
    text = ORDERS_V1
    for old, new in CHANGES:
        text = text.replace(old, new)
    module.write_text(text)
    return root, histories


def plain_check(root: Path, histories: Path) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=str(root))
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "replaytest", "check", "--no-cache", "--quiet"],
                         cwd=root, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, run.returncode


def impact(root: Path, histories: Path) -> tuple[float, dict[str, float], list[Any]]:
    from replaytest.impact.guards import attach_guards
    from replaytest.plugins import load_plugins
    from replaytest.replay.adapter import ReplayOptions
    from replaytest.replay.batch import replay_many
    from replaytest.replay.runner import iter_history_files, load_workflows

    from replaytest.replay import batch

    phases: dict[str, float] = {}
    started = time.perf_counter()
    replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
    rehearse_in_flight = batch._rehearse_in_flight
    rehearsing = [0.0]

    def timed(*args: Any) -> None:
        mark = time.perf_counter()
        rehearse_in_flight(*args)
        rehearsing[0] += time.perf_counter() - mark

    batch._rehearse_in_flight = timed  # type: ignore[assignment]
    try:
        results = replay_many(list(iter_history_files([histories])), replayers, load_workflows([SPEC], root),
                              ReplayOptions(rehearse=True))
    finally:
        batch._rehearse_in_flight = rehearse_in_flight  # type: ignore[assignment]
    phases["replay"] = time.perf_counter() - started - rehearsing[0]
    phases["rehearsal (in-flight runs again, resumed)"] = rehearsing[0]
    mark = time.perf_counter()
    impacts = group(results)
    phases["grouping"] = time.perf_counter() - mark
    mark = time.perf_counter()
    attach_guards(impacts, results, root=root, base_rev=None, workflow_specs=[SPEC], workflows_base=root)
    phases["guards + verification"] = time.perf_counter() - mark
    return time.perf_counter() - started, phases, impacts


def group(results: list[Any]) -> list[Any]:
    from replaytest.impact import grouping

    return grouping.group_results(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--histories", type=int, default=1_000)
    parser.add_argument("--in-flight", type=int, default=100, help="how many of them are parked at the payment wait")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root, histories = build_project(Path(scratch), args.histories, args.in_flight)
        os.chdir(root)
        # The machine's load changes while this runs: one plain check before impact and one after.
        before_s, plain_exit = plain_check(root, histories)
        impact_s, phases, impacts = impact(root, histories)
        after_s, _ = plain_check(root, histories)
        plain_s = (before_s + after_s) / 2
        print(f"{args.histories:,} histories of order_fulfilment ({args.in_flight} in flight), "
              f"{sum(len(i.groups) for i in impacts)} divergence groups; load {os.getloadavg()[0]:.1f}")
        print(f"plain replaytest check: {before_s:.2f} s before, {after_s:.2f} s after (exit {plain_exit})")
        print(f"impact: {impact_s:.2f} s (" + ", ".join(f"{name} {value:.2f} s" for name, value in phases.items()) + ")")
        for each in impacts:
            for item in each.groups:
                guard = item.guard
                verified = guard.verification if guard is not None else None
                print(f"  group at event #{item.position} ({item.issued.name if item.issued else '-'}): "
                      f"{len(item.in_flight)} in flight, {len(item.finished)} finished; guard "
                      f"{guard.patch_id if guard else item.guard_note} "
                      f"{f'{verified.passed}/{verified.histories} verified' if verified else 'not verified'}")
        print(f"ratio impact / plain check (mean of both): {impact_s / plain_s:.2f}x (target at most 3x)")


if __name__ == "__main__":
    main()
