"""A refund desk on Durable Functions, for the parts of the API the approvals app leaves out: an activity
that fails and the orchestrator catches, a durable timer whose fire time the code computes, and an
orchestrator that fails, an activity called with retry options, ``task_any``, ``new_uuid``, ``call_http`` and ``continue_as_new``. Activities append their name to the file named by ``REFUND_DESK_MARKER`` when it
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


@app.orchestration_trigger(context_name="context")
def rebook_refund(context: df.DurableOrchestrationContext):
    refund = context.get_input()
    ticket = context.new_uuid()
    quotes = [context.call_activity("quote_carrier", {"carrier": carrier, "ticket": ticket}) for carrier in ("post", "courier")]
    first = yield context.task_any(quotes)
    retry = df.RetryOptions(first_retry_interval_in_milliseconds=1000, max_number_of_attempts=3)
    booking = yield context.call_activity_with_retry("book_carrier", retry, first.result)
    return {"refund": refund["id"], "ticket": ticket, "booking": booking}


@app.orchestration_trigger(context_name="context")
def notify_bank(context: df.DurableOrchestrationContext):
    refund = context.get_input()
    answer = yield context.call_http("POST", refund["bank_url"], {"refund": refund["id"]})
    receipt = yield context.call_activity("file_receipt", refund["id"])
    return {"bank": answer["statusCode"], "receipt": receipt}


@app.orchestration_trigger(context_name="context")
def sweep_refunds(context: df.DurableOrchestrationContext):
    sweep = context.get_input()
    yield context.call_activity("file_receipt", f"sweep-{sweep['round']}")
    if sweep["round"] < 2:
        context.continue_as_new({"round": sweep["round"] + 1})
        return None
    return {"swept": sweep["round"]}


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


@app.activity_trigger(input_name="quote")
def quote_carrier(quote: dict) -> dict:
    _ran("quote_carrier")
    return {"carrier": quote["carrier"], "ticket": quote["ticket"], "price": 7 if quote["carrier"] == "post" else 12}


@app.activity_trigger(input_name="quote")
def book_carrier(quote: dict) -> str:
    _ran("book_carrier")
    return f"booked {quote['carrier']} for {quote['price']}"


@app.activity_trigger(input_name="refund_id")
def file_receipt(refund_id: str) -> str:
    _ran("file_receipt")
    return f"filed {refund_id}"
