"""A support desk whose threads hold what redaction rewrites (an e-mail, an API key) and a random id (a
``uuid4`` token from a task) that later tasks take as arguments; ``ticket`` threads wait for an approval."""

from __future__ import annotations

import uuid

from langgraph.func import entrypoint, task
from langgraph.types import interrupt


@task
def new_token() -> str:
    return uuid.uuid4().hex


@task
def load_profile(customer: str) -> dict:
    return {"email": f"{customer}@example.com", "api_key": "sk-live-0123456789abcdefXYZ", "tier": "gold"}


@task
def open_case(token: str, email: str) -> dict:
    return {"case": f"C-{token[:8]}", "contact": email}


@task
def close_case(case: str, token: str) -> str:
    return f"closed {case} with {token[:4]}"


@entrypoint()
def redaction_desk(ticket: dict) -> dict:
    token = new_token().result()
    profile = load_profile(ticket["customer"]).result()
    case = open_case(token, profile["email"]).result()
    if ticket.get("needs_approval"):
        interrupt({"case": case["case"]})
    closed = close_case(case["case"], token).result()
    return {"case": case["case"], "closed": closed, "contact": profile["email"]}
