"""A journal workflow whose first command depends on a module counter, with real step bodies: recorded on the
real journal runtime and resumed in the same process, the runtime itself finds the change."""

import itertools

from replaytest.journal import workflow

_executions = itertools.count()  # every execution of the function, recorded or resumed, moves it on


def noop(order):
    return order


@workflow(name="resume_counter")
def resume_counter(ctx, order):
    if next(_executions) == 0:
        ctx.step("welcome", noop, order)
    ctx.step("charge", noop, order)
    ctx.wait_signal("go")
    return "ok"
