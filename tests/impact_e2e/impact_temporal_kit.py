"""The Temporal scenario: an invoice-dispute agent recorded on a real dev server, five runs imported
with ``replaytest import temporal`` — three disputes a reviewer decided (completed) and two still
waiting for the reviewer's signal (in flight) — and three changed versions of its code.

v1 classifies the dispute with a model activity, looks the invoice up, waits for the ``review``
signal, then credits the customer when approved and notifies them. The changes:

- ``audit_after_review``: an audit activity inserted right after the wait;
- ``lookup_first``: the invoice lookup moved before the classification (both before the wait);
- ``escalate_large``: approved disputes over 500 are escalated to finance instead of credited.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import json
import sys
import uuid
from pathlib import Path

from impact_kit import ScenarioKit, commit_everything, edit_once, run_replaytest

MODULE = "dispute_agent"
WORKFLOW_TYPE = "InvoiceDispute"

V1 = '''"""Invoice disputes: a model classifies the customer's complaint, a reviewer decides, the customer
is credited when the reviewer approves, and told the outcome."""

from datetime import timedelta

from temporalio import activity, workflow

TIMEOUT = timedelta(seconds=10)


@activity.defn
async def classify_dispute(text: str) -> str:
    return "billing-error" if "charged twice" in text else "service-complaint"


@activity.defn
async def lookup_invoice(invoice_id: str) -> dict:
    return {"invoice_id": invoice_id, "customer": f"customer-of-{invoice_id}"}


@activity.defn
async def issue_credit(invoice_id: str, amount: float) -> str:
    return f"credit-{invoice_id}-{amount:.2f}"


@activity.defn
async def notify_customer(customer: str, outcome: str) -> bool:
    return True


@activity.defn
async def record_audit(invoice_id: str, decision: str) -> str:
    return f"audit {invoice_id} {decision}"


@activity.defn
async def escalate_to_finance(invoice_id: str, amount: float) -> str:
    return f"escalated {invoice_id}"


@workflow.defn(name="InvoiceDispute")
class InvoiceDispute:
    def __init__(self) -> None:
        self.decision: str | None = None

    @workflow.signal
    def review(self, decision: str) -> None:
        self.decision = decision

    @workflow.run
    async def run(self, dispute: dict) -> dict:
        category = await workflow.execute_activity(classify_dispute, dispute["text"], start_to_close_timeout=TIMEOUT)
        invoice = await workflow.execute_activity(lookup_invoice, dispute["invoice_id"], start_to_close_timeout=TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None)
        credit = None
        if self.decision == "approve":
            credit = await workflow.execute_activity(
                issue_credit, args=[dispute["invoice_id"], dispute["amount"]], start_to_close_timeout=TIMEOUT
            )
        await workflow.execute_activity(
            notify_customer, args=[invoice["customer"], self.decision], start_to_close_timeout=TIMEOUT
        )
        return {"category": category, "decision": self.decision, "credit": credit}


WORKFLOWS = [InvoiceDispute]
ACTIVITIES = [classify_dispute, lookup_invoice, issue_credit, notify_customer, record_audit, escalate_to_finance]
'''

CLASSIFY = '        category = await workflow.execute_activity(classify_dispute, dispute["text"], start_to_close_timeout=TIMEOUT)\n'
LOOKUP = '        invoice = await workflow.execute_activity(lookup_invoice, dispute["invoice_id"], start_to_close_timeout=TIMEOUT)\n'
WAIT = "        await workflow.wait_condition(lambda: self.decision is not None)\n"
AUDIT = (
    "        await workflow.execute_activity(\n"
    "            record_audit, args=[dispute[\"invoice_id\"], self.decision], start_to_close_timeout=TIMEOUT\n"
    "        )\n"
)
APPROVED = '        if self.decision == "approve":\n'
CREDIT = (
    "            credit = await workflow.execute_activity(\n"
    '                issue_credit, args=[dispute["invoice_id"], dispute["amount"]], start_to_close_timeout=TIMEOUT\n'
    "            )\n"
)
ESCALATE = (
    '        if self.decision == "approve" and dispute["amount"] > 500:\n'
    "            credit = await workflow.execute_activity(\n"
    '                escalate_to_finance, args=[dispute["invoice_id"], dispute["amount"]], start_to_close_timeout=TIMEOUT\n'
    "            )\n"
    '        elif self.decision == "approve":\n'
)


CHANGES = {
    "audit_after_review": edit_once(V1, WAIT, WAIT + AUDIT),
    "lookup_first": edit_once(V1, CLASSIFY + LOOKUP, LOOKUP + CLASSIFY),
    "escalate_large": edit_once(V1, APPROVED, ESCALATE),
}

# (workflow id, dispute, the reviewer's decision or None for a run left waiting for it)
RUNS = [
    ("dispute-1", {"invoice_id": "INV-101", "text": "I was charged twice this month", "amount": 120.0}, "approve"),
    ("dispute-2", {"invoice_id": "INV-102", "text": "charged twice for the annual plan", "amount": 900.0}, "approve"),
    ("dispute-3", {"invoice_id": "INV-103", "text": "the support line never answered", "amount": 60.0}, "reject"),
    ("dispute-4", {"invoice_id": "INV-104", "text": "charged twice after cancelling", "amount": 300.0}, None),
    ("dispute-5", {"invoice_id": "INV-105", "text": "the service was down for a week", "amount": 1500.0}, None),
]
IN_FLIGHT = ("dispute-4", "dispute-5")
FINISHED = ("dispute-1", "dispute-2", "dispute-3")

PYPROJECT = f"""[project]
name = "dispute-desk"
version = "1.0"

[tool.replaytest.replay]
paths = ["histories"]
workflows = ["{MODULE}:WORKFLOWS"]
"""


async def until_waiting(handle: object, timeout_s: float = 30.0) -> None:
    """Until the run's history shows it parked at the wait: both activities done and the workflow
    task after the second one completed (three completed workflow tasks)."""
    from temporalio.api.enums.v1 import EventType

    for _ in range(int(timeout_s / 0.1)):
        history = await handle.fetch_history()  # type: ignore[attr-defined]
        completed = [event for event in history.events if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
        if len(completed) >= 3:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the run did not reach the review wait in {timeout_s} s")


async def _run_disputes(address: str, module: object) -> dict[str, object]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"disputes-{uuid.uuid4()}"
    outcomes: dict[str, object] = {}
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=module.ACTIVITIES):  # type: ignore[attr-defined]
        handles = {
            run_id: await client.start_workflow(WORKFLOW_TYPE, dispute, id=run_id, task_queue=queue)
            for run_id, dispute, _ in RUNS
        }
        for run_id, _, decision in RUNS:
            await until_waiting(handles[run_id])
            if decision is not None:
                await handles[run_id].signal("review", decision)
                outcomes[run_id] = await handles[run_id].result()
    # Visibility (what the importer's list query reads) is updated asynchronously.
    for _ in range(100):
        if (await client.count_workflows(f"WorkflowType='{WORKFLOW_TYPE}'")).count >= len(RUNS):
            break
        await asyncio.sleep(0.1)
    return outcomes


def record(root: Path, address: str) -> ScenarioKit:
    """Write v1 into ``root``, run the disputes on the dev server at ``address``, import their histories
    and commit v1 with them."""
    root.mkdir(parents=True)
    (root / f"{MODULE}.py").write_text(V1, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    # The sandbox re-imports the workflow's module by its own name while the worker runs.
    sys.path.insert(0, str(root))
    try:
        sys.modules.pop(MODULE, None)
        outcomes = asyncio.run(_run_disputes(address, importlib.import_module(MODULE)))
    finally:
        sys.path.remove(str(root))
        sys.modules.pop(MODULE, None)
    assert outcomes == {
        "dispute-1": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-101-120.00"},
        "dispute-2": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-102-900.00"},
        "dispute-3": {"category": "service-complaint", "decision": "reject", "credit": None},
    }
    imported = run_replaytest(
        root, "import", "temporal", "--address", address, "--namespace", "default",
        "--query", f"WorkflowType='{WORKFLOW_TYPE}'", "--out", "histories", "--limit", "20",
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    files = {path.name.split("_")[0]: path for path in sorted((root / "histories").glob("*.json"))}
    assert sorted(files) == [run_id for run_id, _, _ in RUNS], files
    base = commit_everything(root, "Invoice disputes v1")
    return ScenarioKit(
        engine="temporal", workflow_type=WORKFLOW_TYPE, root=root, code_file=f"{MODULE}.py", base=base, v1=V1,
        changes=CHANGES, in_flight=IN_FLIGHT, finished=FINISHED, history_files=files,
        extra={"address": address},
    )


async def _fresh_dispute(address: str, module: object, run_id: str, dispute: dict, decision: str) -> tuple[object, str]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"disputes-fresh-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=module.WORKFLOWS, activities=module.ACTIVITIES):  # type: ignore[attr-defined]
        handle = await client.start_workflow(WORKFLOW_TYPE, dispute, id=run_id, task_queue=queue)
        await until_waiting(handle)
        await handle.signal("review", decision)
        result = await handle.result()
        history = await handle.fetch_history()
    return result, history.to_json()


def fresh_run(kit: ScenarioKit, run_id: str, decision: str, amount: float = 75.0) -> tuple[object, dict]:
    """A new run of the code now in ``kit``'s working tree on the scenario's dev server (a dispute of
    ``amount`` on INV-200), decided at once: its result and its history (as ``temporal workflow show``
    writes it). ``run_id`` must be new on the server."""
    dispute = {"invoice_id": "INV-200", "text": "charged twice", "amount": amount}
    sys.path.insert(0, str(kit.root))
    try:
        sys.modules.pop(MODULE, None)
        module = importlib.import_module(MODULE)
        result, history = asyncio.run(_fresh_dispute(str(kit.extra["address"]), module, run_id, dispute, decision))
    finally:
        sys.path.remove(str(kit.root))
        sys.modules.pop(MODULE, None)
    return result, json.loads(history)


def patch_markers(history: dict) -> list[str]:
    """The patch ids of the history's patch markers (``MarkerRecorded`` events named ``core_patch``)."""
    ids = []
    for event in history["events"]:
        attributes = event.get("markerRecordedEventAttributes")
        if event["eventType"] in ("EVENT_TYPE_MARKER_RECORDED", "MarkerRecorded") and attributes["markerName"] == "core_patch":
            [payload] = attributes["details"]["patch-data"]["payloads"]
            ids.append(json.loads(base64.b64decode(payload["data"]))["id"])
    return ids


def scheduled_activities(history: dict) -> list[str]:
    return [event["activityTaskScheduledEventAttributes"]["activityType"]["name"]
            for event in history["events"] if "activityTaskScheduledEventAttributes" in event]
