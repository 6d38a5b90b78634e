"""The order handler the AWS durable functions tests record and replay: steps, a durable wait, a callback
(``wait_for_callback``) on big orders, a child context with a step and a wait. Every step body appends its name to the file named
by ``ORDERS_MARKER``, so a test can prove a replay ran none."""

import os

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step
from aws_durable_execution_sdk_python.config import Duration


def _mark(name: str) -> None:
    marker = os.environ.get("ORDERS_MARKER")
    if marker:
        with open(marker, "a", encoding="utf-8") as log:
            log.write(name + "\n")


@durable_step
def check_stock(step_context: StepContext, item: str) -> int:
    _mark("check_stock")
    return len(item)


@durable_step
def price_order(step_context: StepContext, counts: list) -> dict:
    _mark("price_order")
    return {"total": 10 * sum(counts), "lines": len(counts)}


@durable_step
def audit_order(step_context: StepContext, order_id: str) -> str:
    _mark("audit_order")
    return f"audited-{order_id}"


@durable_step
def print_label(step_context: StepContext, order_id: str) -> str:
    _mark("print_label")
    return f"label-{order_id}"


@durable_step
def book_courier(step_context: StepContext, order_id: str) -> str:
    _mark("book_courier")
    return f"track-{order_id}"


def ask_approver(callback_id: str, callback_context: object) -> None:
    _mark("ask_approver")


@durable_step
def weigh_box(step_context: StepContext, lines: int) -> float:
    _mark("weigh_box")
    return 0.5 * lines


def pack(child: DurableContext, lines: int) -> str:
    weight = child.step(weigh_box(lines))
    child.wait(Duration.from_seconds(1), name="seal")
    return f"{weight}kg"


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    stock = [context.step(check_stock(item)) for item in event["items"]]
    price = context.step(price_order(stock))
    if price["total"] > 100:
        approval = context.wait_for_callback(ask_approver, name="approval")
    else:
        context.wait(Duration.from_seconds(2), name="cool_off")
        approval = "auto"
    label = context.step(print_label(event["id"]))
    tracking = context.step(book_courier(event["id"]))
    box = context.run_in_child_context(lambda child: pack(child, price["lines"]), name="pack")
    return {"status": "shipped", "total": price["total"], "approval": approval, "label": label, "tracking": tracking, "box": box}


# The Lambda function's name -> its handler: how replay finds the code for a history (its workflow type).
FUNCTIONS = {"orders": handler}
