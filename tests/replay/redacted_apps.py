"""Workflows for the redaction replay tests: ``routing`` branches on the domain of the customer's e-mail
(which default redaction replaces by a pseudonym that keeps the domain); ``routing_by_address`` is a later
edit that branches on the whole address, so a redacted history diverges."""

from __future__ import annotations

from typing import Any

from replaytest.journal import workflow


def priority_queue(order: int) -> str:
    return f"priority:{order}"


def normal_queue(order: int) -> str:
    return f"normal:{order}"


def lookup_account(order: int) -> dict[str, Any]:
    return {"order": order, "contact": "billing@acme.example", "api_key": "sk-live0123456789abcdefXYZ"}


@workflow("routing")
def routing(ctx: Any, data: dict[str, Any]) -> str:
    account = ctx.step("lookup", lookup_account, data["order"])
    if data["customer"]["email"].endswith("@vip.example"):
        return ctx.step("priority", priority_queue, account["order"])
    return ctx.step("normal", normal_queue, account["order"])


@workflow("routing")
def routing_by_address(ctx: Any, data: dict[str, Any]) -> str:
    account = ctx.step("lookup", lookup_account, data["order"])
    if data["customer"]["email"] == "ann@vip.example":
        return ctx.step("priority", priority_queue, account["order"])
    return ctx.step("normal", normal_queue, account["order"])
