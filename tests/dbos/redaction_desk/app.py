"""A support desk on DBOS whose runs hold what redaction rewrites (an e-mail, an API key) and a random id (a
``uuid4`` token from a step) that later steps take as an argument; a ticket that needs approval waits in
``DBOS.recv``. ``REDACTION_DESK_EFFECTS`` names a file every step body appends its name to."""

from __future__ import annotations

import os
import tempfile
import uuid

from dbos import DBOS

EFFECTS = os.environ.get("REDACTION_DESK_EFFECTS", os.path.join(tempfile.gettempdir(), "redaction-desk-effects.log"))


def _effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as log:
        log.write(what + "\n")


@DBOS.step()
def new_token() -> str:
    _effect("token")
    return uuid.uuid4().hex


@DBOS.step()
def load_profile(customer: str) -> dict:
    _effect("profile")
    return {"email": f"{customer}@example.com", "api_key": "sk-live-0123456789abcdefXYZ", "tier": "gold"}


@DBOS.step()
def open_case(token: str, email: str) -> dict:
    _effect("open")
    return {"case": f"C-{token[:8]}", "contact": email}


@DBOS.step()
def close_case(case: str, token: str) -> str:
    _effect("close")
    return f"closed {case} with {token[:4]}"


@DBOS.workflow()
def redaction_desk(customer: str, needs_approval: bool) -> dict:
    token = new_token()
    profile = load_profile(customer)
    case = open_case(token, profile["email"])
    if needs_approval:
        DBOS.recv("approval", timeout_seconds=600)
    closed = close_case(case["case"], token)
    return {"case": case["case"], "closed": closed, "contact": profile["email"]}
