"""The journal runtime's workflow: a step, the effect named by the input, a step."""

from __future__ import annotations

from escape_app.moves import perform
from replaytest.journal import workflow


def stamp(text: str) -> str:
    return text


@workflow("escape")
def escape_flow(ctx, name: str) -> str:
    ctx.step("before", stamp, name)
    perform(name)
    return ctx.step("after", stamp, name)
