"""AWS durable handlers for the double-run tests: hazards lint cannot see (on the handler thread and in a
map's branches), and a deterministic control using every kind of operation."""

import itertools

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.waits import WaitForConditionConfig, WaitForConditionDecision

from dr_app import helpers

CHECKS = ["audit", "billing", "credit", "delivery", "email", "fraud", "geo", "history"]
_runs = itertools.count()  # mutated by every invocation: state left over between them in one process


@durable_step
def call_service(step_context: StepContext, order: str) -> dict:  # never runs under the double run
    raise AssertionError("a step body ran")


class Check:
    def __init__(self, name):
        self.name = name  # hashed by id(): a set of these iterates in address order


def submit(callback_id: str, ctx) -> None:
    raise AssertionError("a callback submitter ran")


def check_one(ctx: DurableContext, name: str, index: int, items: list) -> dict:
    return ctx.step(call_service(name), name=f"{name}_check")


def notify(ctx: DurableContext) -> dict:
    return ctx.step(call_service("notify"), name="notify")


@durable_execution
def by_string_hash(event: dict, context: DurableContext) -> str:
    for name in sorted(CHECKS, key=hash):
        context.step(call_service(event["order"]), name=f"{name}_check")
    return "ok"


@durable_execution
def by_identity(event: dict, context: DurableContext) -> str:
    for item in {Check(name) for name in CHECKS}:
        context.step(call_service(event["order"]), name=f"{item.name}_check")
    return "ok"


@durable_execution
def by_counter(event: dict, context: DurableContext) -> str:
    if next(_runs) == 0:
        context.step(call_service(event["order"]), name="welcome")
    context.step(call_service(event["order"]), name="lookup")
    return "ok"


@durable_execution
def by_library_clock(event: dict, context: DurableContext) -> str:
    if helpers.is_weekend_now():  # the clock read is in a helper module, not the handler's own code
        context.step(call_service(event["order"]), name="weekend_rate")
    context.step(call_service(event["order"]), name="charge")
    return "ok"


@durable_execution
def in_map_branches(event: dict, context: DurableContext) -> str:
    # Each branch's step is named by its item, and the items are ordered by hash(str): the branches' steps
    # part, not the handler's own operations.
    context.map(sorted(CHECKS, key=hash), check_one, name="checks")
    return "ok"


@durable_execution
def control(event: dict, context: DurableContext) -> dict:
    tier = context.step(call_service(event["order"]), name="lookup")
    checks = context.map(sorted(CHECKS), check_one, name="checks")
    context.wait(Duration.from_seconds(30), name="cool_off")
    approval = context.wait_for_callback(submit, name="approval")
    notified = context.run_in_child_context(notify, name="notify_all")
    both = context.parallel([notify, notify], name="fan_out")
    return {"tier": tier, "checks": checks.get_results(), "approval": approval, "notified": notified,
            "both": both.get_results()}


def check_condition(state: int, check_context) -> int:
    raise AssertionError("a wait-for-condition check ran")


def stop_polling(state: int, attempt: int) -> WaitForConditionDecision:
    return WaitForConditionDecision.stop_polling()


@durable_execution
def other_operations(event: dict, context: DurableContext) -> dict:
    invoked = context.invoke("pricing-fn", {"order": event["order"]}, name="pricing")
    callback = context.create_callback(name="manual_review")
    polled = context.wait_for_condition(
        check_condition, config=WaitForConditionConfig(initial_state=0, wait_strategy=stop_polling), name="poll")
    return {"invoked": invoked, "review": callback.result(), "polled": polled}


@durable_execution
def by_effect(event: dict, context: DurableContext) -> str:
    context.step(call_service(event["order"]), name="lookup")
    with open(event["path"], "w") as written:  # an effect in the handler itself, not in a step
        written.write("sent")
    return "ok"


HANDLERS = {name: handler for name, handler in globals().items()
            if name in ("by_string_hash", "by_identity", "by_counter", "by_library_clock", "in_map_branches", "control",
                        "other_operations", "by_effect")}
