"""A refund desk on Durable Functions, for the parts of the API the approvals app leaves out: an activity
that fails and the orchestrator catches, a durable timer whose fire time the code computes, and an
orchestrator that fails. Activities append their name to the file named by ``REFUND_DESK_MARKER`` when it
is set, so a test can tell whether any activity body ran."""

import datetime
import os

import azure.durable_functions as df

app = df.DFApp()
MARKER: dict[str, str | None] = {"path": os.environ.get("REFUND_DESK_MARKER")}


def _ran(name: str) -> None:
    path = MARKER["path"]
    if path:
        with open(path, "a", encoding="utf-8") as marker:
            marker.write(name + "\n")


@app.orchestration_trigger(context_name="context")
def settle_refund(context: df.DurableOrchestrationContext):
    refund = context.get_input()
    try:
        receipt = yield context.call_activity("charge_back", refund)
    except Exception:
        receipt = yield context.call_activity("send_voucher", refund["id"])
    cool_off = context.current_utc_datetime + datetime.timedelta(minutes=5)
    yield context.create_timer(cool_off)
    return {"refund": refund["id"], "receipt": receipt}


@app.orchestration_trigger(context_name="context")
def audit_refund(context: df.DurableOrchestrationContext):
    refund = context.get_input()
    ledger = yield context.call_activity("load_ledger", refund["id"])
    if ledger["balance"] != refund["amount"]:
        raise ValueError(f"ledger of {refund['id']} does not balance")
    return {"refund": refund["id"], "audited": True}


@app.activity_trigger(input_name="refund")
def charge_back(refund: dict) -> str:
    _ran("charge_back")
    if refund["amount"] > 100:
        raise RuntimeError("card issuer declined the charge-back")
    return f"cb-{refund['id']}"


@app.activity_trigger(input_name="refund_id")
def send_voucher(refund_id: str) -> str:
    _ran("send_voucher")
    return f"voucher-{refund_id}"


@app.activity_trigger(input_name="refund_id")
def load_ledger(refund_id: str) -> dict:
    _ran("load_ledger")
    return {"balance": 40}
