"""A handler with a ``context.map`` (its branches run on the SDK's worker threads) and a step after it, for
the AWS durable tests: the map's ``BatchResult`` must come back from a replay as the SDK's own type."""

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step


@durable_step
def square(step_context: StepContext, n: int) -> int:
    return n * n


@durable_step
def add_up(step_context: StepContext, values: list) -> int:
    return sum(values)


def square_one(ctx: DurableContext, item: int, index: int, items: list) -> int:
    return ctx.step(square(item))


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    squares = context.map(event["items"], square_one, name="squares")
    total = context.step(add_up(squares.get_results()))
    return {"squares": squares.get_results(), "total": total}


FUNCTIONS = {"batch": handler}
