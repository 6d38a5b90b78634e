"""A ``@task`` with a ``RetryPolicy`` whose first attempt fails: LangGraph retries it inside the same task
run and checkpoints the result of the attempt that succeeded."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import RetryPolicy

from lg_apps.tasks import _effect, draft

ATTEMPTS: dict[str, int] = {}


@task(retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=ConnectionError))
def flaky_quote(item: str) -> float:
    ATTEMPTS[item] = ATTEMPTS.get(item, 0) + 1
    _effect(f"flaky_quote {item} attempt {ATTEMPTS[item]}")
    if ATTEMPTS[item] == 1:
        raise ConnectionError("the quote service dropped the connection")
    return 12.5


@entrypoint()
def quoting_agent(item: str) -> dict:
    price = flaky_quote(item).result()
    intro = draft("intro", item).result()
    return {"price": price, "intro": intro}
