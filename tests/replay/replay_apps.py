"""Workflow versions for the replay tests: ``recorded`` is what ran in production; every other function
is a later edit of it (same workflow type) that diverges in one way. Lines that should be named in a
report end with ``# [tag]``.

Step functions append to ``CALLS`` so tests can prove replay never runs them.
"""

from __future__ import annotations

import datetime as dt_module
import random
import time
import urllib.request
import uuid
from datetime import datetime
from typing import Any

from replaytest.journal import NO_RETRY, Prompt, StepFailed, workflow

PLANNER = Prompt("planner", "Plan the work for: {text}")
PLANNER_REWORDED = Prompt("planner", "Think step by step, then plan the work for: {text}")
CALLS: list[str] = []


def plan(text: str) -> str:
    CALLS.append("plan")
    return f"plan for {text}"


def lookup(key: int) -> dict[str, Any]:
    CALLS.append("lookup")
    return {"key": key, "value": key * 10}


def notify(message: str) -> bool:
    CALLS.append("notify")
    return True


@workflow("orders")
def recorded(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def renamed_step(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("search", lookup, 1)  # [command-mismatch]
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def changed_args(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("lookup", lookup, 2)  # [args-mismatch]
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def added_step(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']}")
    ctx.step("audit", notify, "done")  # [extra-command]
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def dropped_step(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("lookup", lookup, 1)  # [missing-command]
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def other_result(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']}")  # [result-mismatch]
    return {"plan": p, "value": found["value"] + 1}


@workflow("orders")
def reworded_prompt(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER_REWORDED)  # [prompt-drift]
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def reads_clock(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    if time.time() > 0:  # [nondeterministic-call]
        found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def reads_datetime(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    stamp = datetime.now()  # [datetime.now]
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']} at {stamp}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def reads_module_datetime(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    day = dt_module.date.today()  # [date.today]
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']} on {day}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def makes_uuid(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    token = uuid.uuid4()  # [uuid.uuid4]
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']} {token}")
    return {"plan": p, "value": found["value"]}


@workflow("orders")
def rolls_dice(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    found = ctx.step("lookup", lookup, random.randint(1, 1))  # [random.randint]
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


@workflow("stamped")
def stamped(ctx: Any, data: dict[str, Any]) -> str:
    """The journal's recorded replacements for clock, uuid and random replay fine."""
    return f"{ctx.now().isoformat()} {ctx.uuid()} {ctx.random():.3f}"


@workflow("orders")
def swallows_guard(ctx: Any, data: dict[str, Any]) -> dict[str, Any]:
    """Catching everything does not hide a guarded call."""
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    try:
        time.monotonic()  # [swallowed]
    except BaseException:
        pass
    found = ctx.step("lookup", lookup, 1)
    ctx.step("notify", notify, f"{p}: {found['value']}")
    return {"plan": p, "value": found["value"]}


# -- patches ------------------------------------------------------------------------------------


@workflow("billing")
def billing_v1(ctx: Any, amount: int) -> int:
    ctx.step("charge", lookup, amount)
    return amount


@workflow("billing")
def billing_v2(ctx: Any, amount: int) -> int:
    if ctx.patched("tax"):
        ctx.step("add tax", lookup, amount)
    ctx.step("charge", lookup, amount)
    return amount


@workflow("billing")
def billing_v3_patch_removed(ctx: Any, amount: int) -> int:
    ctx.step("add tax", lookup, amount)  # [patch-mismatch]
    ctx.step("charge", lookup, amount)
    return amount


@workflow("billing")
def billing_other_patch(ctx: Any, amount: int) -> int:
    if ctx.patched("vat"):
        ctx.step("add tax", lookup, amount)
    ctx.step("charge", lookup, amount)  # [other-patch]
    return amount


@workflow("billing")
def billing_two_patches(ctx: Any, amount: int) -> int:
    if ctx.patched("vat"):
        ctx.step("add vat", lookup, amount)
    if ctx.patched("tax"):
        ctx.step("add tax", lookup, amount)
    ctx.step("charge", lookup, amount)
    return amount


# -- waiting runs ---------------------------------------------------------------------------------


@workflow("approval")
def approval_v1(ctx: Any, data: dict[str, Any]) -> str:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    decision = ctx.wait_signal("approved")
    ctx.step("notify", notify, f"{p}: {decision}")
    return "done"


@workflow("approval")
def approval_v2_reworded(ctx: Any, data: dict[str, Any]) -> str:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER_REWORDED)  # [running-drift]
    decision = ctx.wait_signal("approved")
    ctx.step("notify", notify, f"{p}: {decision}")
    ctx.step("archive", notify, "archived")
    return "done"


@workflow("approval")
def approval_v2_extra_step(ctx: Any, data: dict[str, Any]) -> str:
    p = ctx.model("plan", plan, data["text"], prompt=PLANNER)
    decision = ctx.wait_signal("approved")
    ctx.step("notify", notify, f"{p}: {decision}")
    ctx.step("archive", notify, "archived")
    return "done"


# -- effects against a real server --------------------------------------------------------------


def http_get(url: str) -> str:
    CALLS.append("http_get")
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


@workflow("fetcher")
def fetcher_v1(ctx: Any, base_url: str) -> str:
    first = ctx.step("fetch a", http_get, base_url + "/a")
    second = ctx.step("fetch b", http_get, base_url + "/b")
    return first + second


@workflow("fetcher")
def fetcher_v2_reordered(ctx: Any, base_url: str) -> str:
    second = ctx.step("fetch b", http_get, base_url + "/b")
    first = ctx.step("fetch a", http_get, base_url + "/a")
    ctx.step("fetch c", http_get, base_url + "/c")
    return first + second


@workflow("fetcher")
def fetcher_calls_network_directly(ctx: Any, base_url: str) -> str:
    first = ctx.step("fetch a", http_get, base_url + "/a")
    with urllib.request.urlopen(base_url + "/b", timeout=5) as response:  # [network]
        second = response.read().decode()
    return first + second


# -- failures, timers, async, continue-as-new -----------------------------------------------------


def declined(amount: int) -> str:
    CALLS.append("declined")
    raise ValueError("card declined")


@workflow("payment")
def payment_v1(ctx: Any, amount: int) -> str:
    try:
        ctx.step("charge", declined, amount, retry=NO_RETRY)
    except StepFailed as failure:
        ctx.sleep(60, "back off")
        return f"failed: {failure.error_type}"
    return "paid"


@workflow("payment")
def payment_longer_back_off(ctx: Any, amount: int) -> str:
    try:
        ctx.step("charge", declined, amount, retry=NO_RETRY)
    except StepFailed as failure:
        ctx.sleep(120, "back off")  # [timer-args]
        return f"failed: {failure.error_type}"
    return "paid"


@workflow("payment")
async def payment_async(ctx: Any, amount: int) -> str:
    try:
        await ctx.step("charge", declined, amount, retry=NO_RETRY)
    except StepFailed as failure:
        await ctx.sleep(60, "back off")
        return f"failed: {failure.error_type}"
    return "paid"


@workflow("payment")
async def payment_async_clock(ctx: Any, amount: int) -> str:
    try:
        await ctx.step("charge", declined, amount, retry=NO_RETRY)
    except StepFailed as failure:
        if time.perf_counter() > 0:  # [async-clock]
            await ctx.sleep(60, "back off")
        return f"failed: {failure.error_type}"
    return "paid"


@workflow("counter")
def counter_v1(ctx: Any, n: int) -> int:
    ctx.step("tick", lookup, n)
    if n < 2:
        ctx.continue_as_new(n + 1)
    return n


@workflow("counter")
def counter_never_continues(ctx: Any, n: int) -> int:
    ctx.step("tick", lookup, n)  # [no-continue]
    return n


def big_report(size: int) -> dict[str, Any]:
    CALLS.append("big_report")
    return {"rows": [f"row {i}" for i in range(size)]}


@workflow("reporting")
def reporting(ctx: Any, size: int) -> int:
    report = ctx.step("build report", big_report, size)
    return len(report["rows"])


@workflow("strict")
def strict_v1(ctx: Any, data: dict[str, Any]) -> str:
    found = ctx.step("lookup", lookup, 1)
    if found["value"] > 5:
        raise ValueError("value too large")
    return "ok"


@workflow("strict")
def strict_relaxed(ctx: Any, data: dict[str, Any]) -> str:
    found = ctx.step("lookup", lookup, 1)  # [now-completes]
    if found["value"] > 50:
        raise ValueError("value too large")
    return "ok"


@workflow("strict")
def strict_other_error(ctx: Any, data: dict[str, Any]) -> str:
    found = ctx.step("lookup", lookup, 1)  # [other-error]
    if found["value"] > 5:
        raise KeyError("value")
    return "ok"


@workflow("closing")
def closing_v2(ctx: Any, amount: int) -> int:
    ctx.step("charge", lookup, amount)
    if ctx.patched("receipt"):
        ctx.step("send receipt", notify, "receipt")
    return amount


@workflow("closing")
def closing_patch_dropped(ctx: Any, amount: int) -> int:
    ctx.step("charge", lookup, amount)  # [dropped-at-end]
    return amount
