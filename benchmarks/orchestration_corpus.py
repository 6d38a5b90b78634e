"""Generated orchestration packages for the lint benchmark: realistic-size service packages, each with a
Temporal workflows module and a DBOS flows module (the orchestration code), their activities and steps,
and a sibling helpers module the workflows call into.

Every package ``svc_NN`` holds:

* ``workflows.py`` (~300 lines): two Temporal workflows with run, signal, query and update handlers,
  staged private methods and activity calls;
* ``billing_flows.py`` (~200 lines): DBOS workflows, steps and a transaction;
* ``activities.py`` (~150 lines): Temporal activities doing HTTP, files and clocks (allowed there);
* ``helpers.py`` (~170 lines): plain functions the workflows call, a few of which read the clock or
  the environment, so the analyzer must follow calls into a module that is otherwise screened out.

The code is deterministic for a given package number, so runs are comparable. A handful of real
findings per package (clock, environment, set iteration, sleep) keep the rules busy.
"""

from __future__ import annotations

from pathlib import Path

ORCHESTRATION_FILES = ("workflows.py", "billing_flows.py")

_HELPERS_HEAD = '''"""Pricing, routing and formatting helpers of service {k}; the workflows call these directly."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    unit_price: Decimal
    tags: tuple[str, ...] = ()


@dataclass
class Quote:
    lines: list[Line] = field(default_factory=list)
    currency: str = "EUR"
    discount: Decimal = Decimal("0")

    def subtotal(self) -> Decimal:
        return sum((line.unit_price * line.quantity for line in self.lines), Decimal("0"))

    def total(self) -> Decimal:
        gross = self.subtotal() * (Decimal("1") - self.discount)
        return gross.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def parse_lines(raw: list[dict]) -> list[Line]:
    lines = []
    for item in raw:
        lines.append(
            Line(
                sku=str(item["sku"]),
                quantity=int(item.get("quantity", 1)),
                unit_price=Decimal(str(item.get("price", "0"))),
                tags=tuple(sorted(item.get("tags", ()))),
            )
        )
    return lines


def stamp_label(prefix: str) -> str:
    # Reads the wall clock: fine for logs, not for workflow decisions.
    return f"{{prefix}}-{{int(time.time())}}"


def deployment_region() -> str:
    return os.environ.get("DEPLOY_REGION", "eu-central")


def route_for(quote: Quote) -> str:
    if quote.total() > Decimal("1000"):
        return "manual-review"
    if any("fragile" in line.tags for line in quote.lines):
        return "careful-shipping"
    return "standard"
'''

_HELPER_FUNCTION = '''

def rule_{k}_{i}(quote: Quote, threshold: int = {i}) -> Decimal:
    """Discount rule {i} of service {k}: volume tiers over sorted SKUs."""
    tiers = {{"small": Decimal("0.00"), "medium": Decimal("0.02"), "large": Decimal("0.05")}}
    volume = sum(line.quantity for line in quote.lines)
    skus = sorted({{line.sku for line in quote.lines}})
    if volume > threshold * 10 and len(skus) > 1:
        return tiers["large"]
    if volume > threshold:
        return tiers["medium"]
    return tiers["small"]
'''

_ACTIVITIES_HEAD = '''"""Activities of service {k}: everything with side effects, recorded by Temporal."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone

import httpx
from temporalio import activity

API = os.environ.get("SERVICE_{k}_API", "https://svc-{k}.internal")
'''

_ACTIVITY = '''

@activity.defn(name="svc{k}-{name}")
async def {name}(payload: dict) -> dict:
    info = activity.info()
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=API, timeout=10) as http:
        response = await http.post(
            "/{name}",
            json={{**payload, "at": datetime.now(timezone.utc).isoformat()}},
            headers={{"Idempotency-Key": f"{{info.workflow_id}}-{{info.activity_id}}"}},
        )
        response.raise_for_status()
    activity.logger.info("{name} took %.3fs", time.monotonic() - started)
    return json.loads(response.text or "{{}}")
'''

_ACTIVITY_NAMES = ("reserve_stock", "charge_card", "pack_order", "book_courier", "send_email", "release_stock",
                   "refund_card", "archive_order")

_WORKFLOWS_HEAD = '''"""Fulfilment and returns workflows of service {k}. Temporal replays this code, so everything
non-deterministic comes from `workflow.*` or runs in an activity."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Optional

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from svc_{k:02d} import activities
    from svc_{k:02d}.helpers import Quote, deployment_region, parse_lines, route_for, stamp_label

RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(seconds=2))
TIMEOUT = timedelta(seconds=30)


@dataclass
class FulfilmentState:
    order_id: str
    status: str = "new"
    approved_by: Optional[str] = None
    cancelled: bool = False
    address: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    history: list[tuple[str, str]] = field(default_factory=list)


@workflow.defn
class Fulfilment{k}:
    def __init__(self) -> None:
        self._state: Optional[FulfilmentState] = None
        self._pending_notes: list[str] = []

    @workflow.run
    async def run(self, order: dict) -> dict:
        self._state = FulfilmentState(order_id=order["id"], address=dict(order.get("address", {{}})))
        quote = Quote(lines=parse_lines(order["lines"]))
        route = route_for(quote)
        label = stamp_label(order["id"])
        region = deployment_region()
        tags = set(order.get("tags", []))
        for tag in tags:
            self._state.notes.append(f"tag:{{tag}}")
        self._record("quoted", str(quote.total()))
        await self._stage_reserve(order, quote, route)
        await workflow.wait_condition(lambda: self._state.approved_by is not None or self._state.cancelled,
                                      timeout=timedelta(days=2))
        if self._state.cancelled:
            await self._compensate(order)
            return self._summary(route, label, region)
{stage_calls}
        await asyncio.sleep(60)
        self._state.status = "done"
        return self._summary(route, label, region)

    @workflow.signal
    def approve(self, reviewer: str) -> None:
        assert self._state is not None
        self._state.approved_by = reviewer
        self._record("approved", reviewer)

    @workflow.signal
    def cancel(self, reason: str) -> None:
        assert self._state is not None
        self._state.cancelled = True
        self._record("cancelled", reason)

    @workflow.signal
    def add_note(self, note: str) -> None:
        self._pending_notes.append(note)

    @workflow.query
    def status(self) -> str:
        return self._state.status if self._state else "starting"

    @workflow.query
    def notes(self) -> list[str]:
        return list(self._state.notes) if self._state else []

    @workflow.update
    async def change_address(self, address: dict) -> dict:
        assert self._state is not None
        self._state.address.update(address)
        self._record("address", ",".join(sorted(address)))
        return dict(self._state.address)

    @change_address.validator
    def validate_address(self, address: dict) -> None:
        if not address.get("country"):
            raise ValueError("country is required")

    def _record(self, event: str, detail: str) -> None:
        assert self._state is not None
        self._state.history.append((event, detail))
        for note in self._pending_notes:
            self._state.notes.append(note)
        self._pending_notes.clear()

    def _summary(self, route: str, label: str, region: str) -> dict:
        assert self._state is not None
        return {{"order": self._state.order_id, "status": self._state.status, "route": route, "label": label,
                "region": region, "history": list(self._state.history), "notes": list(self._state.notes)}}
'''

_STAGE = '''
    async def _stage_{stage}(self, order: dict, quote: Quote, route: str) -> None:
        assert self._state is not None
        self._state.status = "{stage}"
        result = await workflow.execute_activity(
            activities.{activity}, {{"order": order["id"], "stage": "{stage}", "route": route,
                                     "amount": str(quote.total())}},
            start_to_close_timeout=TIMEOUT, retry_policy=RETRY,
        )
        self._record("{stage}", str(result.get("id", "")))
'''

_STAGES = (("reserve", "reserve_stock"), ("charge", "charge_card"), ("pack", "pack_order"),
           ("label", "book_courier"), ("ship", "book_courier"), ("notify", "send_email"),
           ("archive", "archive_order"))

_WORKFLOWS_TAIL = '''
    async def _compensate(self, order: dict) -> None:
        for activity_fn in (activities.release_stock, activities.refund_card):
            await workflow.execute_activity(activity_fn, {{"order": order["id"]}}, start_to_close_timeout=TIMEOUT)


@workflow.defn
class Returns{k}:
    def __init__(self) -> None:
        self._received = False
        self._inspected: list[str] = []

    @workflow.run
    async def run(self, request: dict) -> str:
        await workflow.wait_condition(lambda: self._received, timeout=timedelta(days=14))
        if not self._received:
            return "expired"
        for sku in sorted(request.get("skus", [])):
            self._inspected.append(sku)
        time.sleep(1)
        await workflow.execute_activity(activities.refund_card, request, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(activities.archive_order, request, start_to_close_timeout=TIMEOUT)
        return f"refunded {{len(self._inspected)}} items at {{workflow.now().isoformat()}}"

    @workflow.signal
    def parcel_received(self) -> None:
        self._received = True

    @workflow.query
    def inspected(self) -> list[str]:
        return list(self._inspected)
'''

_DBOS_HEAD = '''"""Invoicing of service {k} on DBOS: workflows decide, steps and transactions act."""

from __future__ import annotations

import random
from datetime import datetime
from decimal import Decimal

import httpx
from dbos import DBOS
from sqlalchemy import text

from svc_{k:02d}.helpers import Quote, parse_lines, rule_{k}_1, rule_{k}_2, stamp_label


@DBOS.transaction()
def insert_invoice(order_id: str, amount: str) -> int:
    row = DBOS.sql_session.execute(
        text("INSERT INTO invoices (order_id, amount) VALUES (:o, :a) RETURNING id"), {{"o": order_id, "a": amount}}
    ).fetchone()
    return int(row[0])


@DBOS.transaction()
def mark_paid(invoice_id: int) -> None:
    DBOS.sql_session.execute(text("UPDATE invoices SET paid = true WHERE id = :i"), {{"i": invoice_id}})
'''

_DBOS_STEP = '''

@DBOS.step(retries_allowed=True, max_attempts={n})
def notify_{name}(order_id: str, invoice_id: int) -> dict:
    response = httpx.post(
        "https://notify.internal/{name}",
        json={{"order": order_id, "invoice": invoice_id, "sent": datetime.now().isoformat(),
              "jitter": random.random()}},
        headers={{"Idempotency-Key": f"{name}-{{order_id}}-{{invoice_id}}"}},
        timeout=10,
    )
    return response.json()
'''

_DBOS_WORKFLOW = '''

@DBOS.workflow()
def invoice_{name}(order: dict) -> dict:
    quote = Quote(lines=parse_lines(order["lines"]))
    quote.discount = max(rule_{k}_1(quote), rule_{k}_2(quote))
    invoice_id = insert_invoice(order["id"], str(quote.total()))
    DBOS.sleep(5)
    receipt = notify_{name}(order["id"], invoice_id)
    mark_paid(invoice_id)
    reference = stamp_label("inv")
    by_sku = {{line.sku: line.quantity for line in quote.lines}}
    for sku in sorted(by_sku):
        DBOS.logger.info("invoiced %s x%s", sku, by_sku[sku])
    return {{"invoice": invoice_id, "receipt": receipt, "total": str(quote.total()), "reference": reference,
            "discount": str(quote.discount or Decimal("0"))}}
'''

_DBOS_NAMES = ("customer", "finance", "warehouse", "partner", "auditor", "carrier")


def write_package(root: Path, k: int, helper_rules: int = 9) -> list[Path]:
    """Write package ``svc_{k:02d}`` under ``root``; returns the files written."""
    package = root / f"svc_{k:02d}"
    package.mkdir(parents=True, exist_ok=True)
    files = {
        "__init__.py": f'"""Service {k}: fulfilment, returns and invoicing."""\n',
        "helpers.py": _HELPERS_HEAD.format(k=k)
        + "".join(_HELPER_FUNCTION.format(k=k, i=i) for i in range(1, helper_rules + 1)),
        "activities.py": _ACTIVITIES_HEAD.format(k=k)
        + "".join(_ACTIVITY.format(k=k, name=name) for name in _ACTIVITY_NAMES),
        "workflows.py": _WORKFLOWS_HEAD.format(
            k=k,
            stage_calls="\n".join(
                f"        await self._stage_{stage}(order, quote, route)" for stage, _ in _STAGES[1:]
            ),
        )
        + "".join(_STAGE.format(stage=stage, activity=activity) for stage, activity in _STAGES)
        + _WORKFLOWS_TAIL.format(k=k),
        "billing_flows.py": _DBOS_HEAD.format(k=k)
        + "".join(_DBOS_STEP.format(name=name, n=3 + i) for i, name in enumerate(_DBOS_NAMES))
        + "".join(_DBOS_WORKFLOW.format(k=k, name=name) for name in _DBOS_NAMES),
    }
    written = []
    for name, text in files.items():
        path = package / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
