"""Journal workflows for the double-run tests: hazards lint cannot see, and a deterministic control."""

import itertools

from replaytest.journal import workflow

from . import helpers

_runs = itertools.count()  # mutated by every run: state left over between runs in one process

CHECKS = ["audit", "billing", "credit", "delivery", "email", "fraud", "geo", "history"]


def call_service(*args):  # a step body; never runs under the double run
    raise AssertionError("a step body ran")


class Check:
    def __init__(self, name):
        self.name = name  # hashed by id(): a set of these iterates in address order


@workflow(name="by_identity")
def by_identity(ctx, order):
    pending = {Check(name) for name in CHECKS}
    for check in pending:
        ctx.step(check.name, call_service, order)
    return "ok"


@workflow(name="by_string_hash")
def by_string_hash(ctx, order):
    for name in sorted(CHECKS, key=hash):
        ctx.step(name, call_service, order)
    return "ok"


@workflow(name="by_counter")
def by_counter(ctx, order):
    if next(_runs) == 0:
        ctx.step("welcome", call_service, order)
    ctx.step("charge", call_service, order)
    return "ok"


@workflow(name="by_library_clock")
def by_library_clock(ctx, order):
    if helpers.is_weekend_now():  # the clock read is in a helper module, not the workflow's own code
        ctx.step("weekend_rate", call_service, order)
    ctx.step("charge", call_service, order)
    return "ok"


@workflow(name="control")
def control(ctx, order):
    tier = ctx.step("lookup", call_service, order)
    for name in sorted(CHECKS):
        ctx.step(name, call_service, order, tier["level"])
    if ctx.now().year > 2000:
        ctx.step("notify", call_service, order)
    return {"order": order, "tier": tier}


@workflow(name="by_effect")
def by_effect(ctx, order):
    ctx.step("charge", call_service, order)
    call_service(order)  # a step body called directly: an effect the runtime guards stop before it runs
    return "ok"
