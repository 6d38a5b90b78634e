"""A support desk on the journal runtime whose histories hold what redaction rewrites (an e-mail, an API
key) and random ids (``ctx.uuid()``, a token made with ``uuid4`` in a step) that later commands carry."""

from __future__ import annotations

import uuid
from typing import Any

from replaytest.journal import workflow


def new_token() -> str:
    return uuid.uuid4().hex


def load_profile(customer: str) -> dict[str, Any]:
    return {"email": f"{customer}@example.com", "api_key": "sk-live-0123456789abcdefXYZ", "tier": "gold"}


def open_case(reference: str, token: str, email: str) -> dict[str, Any]:
    return {"case": f"C-{reference[:8]}", "contact": email, "token": token}


def close_case(case: str, token: str) -> str:
    return f"closed {case}"


@workflow(name="redaction_desk", version="1")
def desk(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    reference = str(ctx.uuid())
    token = ctx.step("new token", new_token)
    profile = ctx.step("load profile", load_profile, ticket["customer"])
    case = ctx.step("open case", open_case, reference, token, profile["email"])
    if ticket.get("needs_approval"):
        ctx.wait_signal("approved", timeout=86400)
    closed = ctx.step("close case", close_case, case["case"], token)
    return {"reference": reference, "case": case["case"], "closed": closed, "contact": profile["email"]}
