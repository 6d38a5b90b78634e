"""Handlers for the AWS durable tests of ``context.parallel``, ``context.invoke`` (a chained invoke), a step
retried after a failed attempt, and a wait inside a parallel branch. Every step body appends its name to the
file named by ``ORDERS_MARKER``, so a test can prove a replay ran none."""

import os

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step
from aws_durable_execution_sdk_python.config import Duration, ParallelConfig, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

# Attempts of ``book_courier`` per order: its first attempt fails, so the SDK retries it.
ATTEMPTS: dict[str, int] = {}


def _mark(name: str) -> None:
    marker = os.environ.get("ORDERS_MARKER")
    if marker:
        with open(marker, "a", encoding="utf-8") as log:
            log.write(name + "\n")


@durable_step
def pick_items(step_context: StepContext, order_id: str) -> str:
    _mark("pick_items")
    return f"picked-{order_id}"


@durable_step
def wrap_gift(step_context: StepContext, order_id: str) -> str:
    _mark("wrap_gift")
    return f"wrapped-{order_id}"


@durable_step
def ship(step_context: StepContext, parts: list) -> str:
    _mark("ship")
    return "+".join(str(part) for part in parts)


@durable_step
def book_courier(step_context: StepContext, order_id: str) -> str:
    _mark("book_courier")
    ATTEMPTS[order_id] = ATTEMPTS.get(order_id, 0) + 1
    if ATTEMPTS[order_id] == 1:
        raise RuntimeError("the courier is busy")
    return f"booked-{order_id}"


def picking(ctx: DurableContext) -> str:
    return ctx.step(pick_items("p"))


def wrapping(ctx: DurableContext) -> str:
    return ctx.step(wrap_gift("w"))


@durable_execution
def parallel_handler(event: dict, context: DurableContext) -> dict:
    parts = context.parallel([picking, wrapping], name="prepare")
    shipped = context.step(ship(parts.get_results()))
    return {"shipped": shipped}


@durable_execution
def invoking_handler(event: dict, context: DurableContext) -> dict:
    prices = context.invoke("pricing", {"items": event["items"]}, name="prices")
    shipped = context.step(ship(prices))
    return {"prices": prices, "shipped": shipped}


@durable_execution
def pricing_handler(event: dict, context: DurableContext) -> list:
    return [10 * len(item) for item in event["items"]]  # a list: the invoked function's output as it returned it


RETRY = StepConfig(retry_strategy=create_retry_strategy(RetryStrategyConfig(max_attempts=3, initial_delay=Duration.from_seconds(1))))


@durable_execution
def retrying_handler(event: dict, context: DurableContext) -> dict:
    booked = context.step(book_courier(event["id"]), config=RETRY)
    shipped = context.step(ship([booked]))
    return {"booked": booked, "shipped": shipped}


@durable_step
def call_depot(step_context: StepContext, order_id: str) -> str:
    _mark("call_depot")
    raise RuntimeError("the depot is closed")


@durable_execution
def giving_up_handler(event: dict, context: DurableContext) -> dict:
    try:
        return {"depot": context.step(call_depot(event["id"]), config=RETRY)}
    except Exception as error:  # the step failed for good: every attempt failed
        return {"depot": "closed", "error": type(error).__name__}


def cooling(ctx: DurableContext) -> str:
    ctx.wait(Duration.from_seconds(5), name="cool")
    return ctx.step(wrap_gift("cooled"))


@durable_execution
def cooling_handler(event: dict, context: DurableContext) -> dict:
    parts = context.parallel([picking, cooling], name="prepare")
    return {"parts": parts.get_results()}


@durable_execution
def cooling_in_turn_handler(event: dict, context: DurableContext) -> dict:
    # One branch at a time: the picking branch has not started while the cooling one waits.
    parts = context.parallel([cooling, picking], name="prepare", config=ParallelConfig(max_concurrency=1))
    return {"parts": parts.get_results()}


def prepare_one(ctx: DurableContext, task: str, index: int, tasks: list) -> str:
    return cooling(ctx) if task == "cool" else picking(ctx)


@durable_execution
def cooling_map_handler(event: dict, context: DurableContext) -> dict:
    parts = context.map(["pick", "cool"], prepare_one, name="prepare")
    return {"parts": parts.get_results()}


# The Lambda function's name -> its handler.
FUNCTIONS = {"parallel": parallel_handler, "invoking": invoking_handler, "retrying": retrying_handler,
             "giving-up": giving_up_handler,
             "cooling": cooling_handler, "cooling-in-turn": cooling_in_turn_handler,
             "cooling-map": cooling_map_handler}
