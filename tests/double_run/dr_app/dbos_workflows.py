"""DBOS workflows for the double-run tests: hazards lint cannot see, and a deterministic control."""

import itertools

from dbos import DBOS

CHECKS = ["audit", "billing", "credit", "delivery", "email", "fraud", "geo", "history"]
_runs = itertools.count()  # mutated by every run: state left over between runs in one process


@DBOS.step()
def check(name: str) -> str:  # never runs under the double run
    raise AssertionError("a step body ran")


@DBOS.step()
def lookup(order: str) -> dict:
    raise AssertionError("a step body ran")


@DBOS.step()
def welcome(order: str) -> str:
    raise AssertionError("a step body ran")


def _check_step(name: str):
    @DBOS.step(name=f"{name}_step")
    def run(order: str) -> str:
        raise AssertionError("a step body ran")

    return run


STEPS = {name: _check_step(name) for name in CHECKS}  # one step per check: DBOS compares names only


class Check:
    def __init__(self, name):
        self.name = name  # hashed by id(): a set of these iterates in address order


@DBOS.workflow(name="dr_by_string_hash")
def by_string_hash(order: str) -> str:
    for name in sorted(STEPS, key=hash):
        STEPS[name](order)
    return "ok"


@DBOS.workflow(name="dr_by_identity")
def by_identity(order: str) -> str:
    for item in {Check(name) for name in CHECKS}:
        STEPS[item.name](order)
    return "ok"


@DBOS.workflow(name="dr_by_counter")
def by_counter(order: str) -> str:
    if next(_runs) == 0:
        welcome(order)
    lookup(order)
    return "ok"


@DBOS.workflow(name="dr_control")
def control(order: str) -> dict:
    tier = lookup(order)
    for name in sorted(STEPS):
        STEPS[name](order)
    DBOS.sleep(30)
    if DBOS.patch("notify-v2"):
        check(f"notify-{tier['level']}")
    return {"order": order, "tier": tier}
