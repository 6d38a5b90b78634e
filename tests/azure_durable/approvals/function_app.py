"""An order-approval Durable Functions app: fan-out/fan-in over activities, a durable timer, an external
event and a sub-orchestration. Activities append their name to the file named by ``APPROVALS_MARKER``
when it is set, so a test can tell whether any activity body ran."""

import datetime
import logging
import os

import azure.durable_functions as df

app = df.DFApp()
MARKER: dict[str, str | None] = {"path": os.environ.get("APPROVALS_MARKER")}


def _ran(name: str) -> None:
    path = MARKER["path"]
    if path:
        with open(path, "a", encoding="utf-8") as marker:
            marker.write(name + "\n")


@app.orchestration_trigger(context_name="context")
def order_approval(context: df.DurableOrchestrationContext):
    order = context.get_input()
    checks = [context.call_activity("check_stock", item) for item in order["items"]]
    stock = yield context.task_all(checks)
    price = yield context.call_activity("price_order", {"items": order["items"], "stock": stock})
    if price["total"] > 100:
        deadline = context.current_utc_datetime + datetime.timedelta(minutes=30)
        yield context.create_timer(deadline)
        approval = yield context.wait_for_external_event("approval")
        if not approval.get("approved"):
            return {"status": "rejected", "total": price["total"]}
    else:
        yield context.call_activity("auto_approve", order["id"])
    shipment = yield context.call_sub_orchestrator("ship_order", {"id": order["id"], "total": price["total"]})
    if not context.is_replaying:
        logging.getLogger(__name__).info("order %s shipped", order["id"])
    return {"status": "shipped", "total": price["total"], "tracking": shipment["tracking"]}


@app.orchestration_trigger(context_name="context")
def ship_order(context: df.DurableOrchestrationContext):
    order = context.get_input()
    label = yield context.call_activity("print_label", order["id"])
    tracking = yield context.call_activity("book_courier", label)
    return {"tracking": tracking}


@app.activity_trigger(input_name="item")
def check_stock(item: str) -> int:
    _ran("check_stock")
    return len(item)


@app.activity_trigger(input_name="request")
def price_order(request: dict) -> dict:
    _ran("price_order")
    return {"total": sum(10 * count for count in request["stock"])}


@app.activity_trigger(input_name="order_id")
def auto_approve(order_id: str) -> bool:
    _ran("auto_approve")
    return True


@app.activity_trigger(input_name="order_id")
def print_label(order_id: str) -> str:
    _ran("print_label")
    return f"label-{order_id}"


@app.activity_trigger(input_name="label")
def book_courier(label: str) -> str:
    _ran("book_courier")
    return f"track-{label}"
