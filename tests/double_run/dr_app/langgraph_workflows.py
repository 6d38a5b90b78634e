"""LangGraph entrypoints for the double-run tests: hazards lint cannot see, and a deterministic control."""

import itertools

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

CHECKS = ["audit", "billing", "credit", "delivery", "email", "fraud", "geo", "history"]
_runs = itertools.count()  # mutated by every run: state left over between runs in one process


@task
def check(name: str) -> str:  # never runs under the double run
    raise AssertionError("a task body ran")


@task
def lookup(order: str) -> dict:
    raise AssertionError("a task body ran")


@task
def welcome(order: str) -> str:
    raise AssertionError("a task body ran")


class Check:
    def __init__(self, name):
        self.name = name  # hashed by id(): a set of these iterates in address order


@entrypoint()
def by_string_hash(order: str) -> str:
    for name in sorted(CHECKS, key=hash):
        check(name).result()
    return "ok"


@entrypoint()
def by_identity(order: str) -> str:
    for item in {Check(name) for name in CHECKS}:
        check(item.name).result()
    return "ok"


@entrypoint()
def by_counter(order: str) -> str:
    if next(_runs) == 0:
        welcome(order).result()
    lookup(order).result()
    return "ok"


@entrypoint()
def control(order: str) -> dict:
    tier = lookup(order).result()
    futures = [check(name) for name in sorted(CHECKS)]
    results = [future.result() for future in futures]
    approved = interrupt({"order": order, "tier": tier["level"]})
    return {"order": order, "results": results, "approved": approved}
