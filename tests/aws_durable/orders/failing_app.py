"""A handler whose execution fails (its input names no item), for the AWS durable tests of failed runs."""

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step


@durable_step
def reserve(step_context: StepContext, items: list) -> int:
    return len(items)


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    count = context.step(reserve(event["items"]))
    if count == 0:
        raise ValueError("an order needs at least one item")
    return {"reserved": count}


FUNCTIONS = {"failing": handler}
