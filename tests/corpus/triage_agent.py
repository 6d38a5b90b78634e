"""A ticket-triage agent on the journal runtime, as the corpus tests replay it (the current code).

It classifies a ticket with a model, looks the customer's account up, routes it to a queue (a branch of
plain code: no command tells the two queues apart), and for an outage pages the on-call engineer (behind
the ``page-on-call`` patch: runs recorded before it took the old path) and waits for the engineer to
acknowledge before it drafts and sends the reply. ``triage_agent_before_paging`` is the same workflow as
it was before the patch; the tests record the older runs with it.
"""

from __future__ import annotations

from typing import Any

from replaytest.journal import Prompt, workflow

CLASSIFIER = Prompt("classifier", "Classify this support ticket as question or outage:\n{text}")
DRAFTER = Prompt("drafter", "Draft a reply for a {category} ticket routed to the {queue} queue.")

ACCOUNTS: dict[str, dict[str, str]] = {
    "ada@example.com": {"plan": "standard"},
    "cy@example.com": {"plan": "standard"},
    "dan@example.com": {"plan": "standard"},
    "eve@example.com": {"plan": "enterprise"},
    "ops@example.com": {"plan": "standard"},
}
PAGES: list[str] = []
SENT: list[dict[str, Any]] = []


def classify(prompt_text: str) -> str:
    """Stands in for an LLM call: deterministic, so the tests need no network or key."""
    ticket_text = prompt_text.split("\n", 1)[-1]  # the ticket, after the instruction line
    return "outage" if "down" in ticket_text or "outage" in ticket_text else "question"


def draft(prompt_text: str) -> str:
    return "We are on it." if "outage" in prompt_text else "Thanks, here is how to do that."


def look_up_account(customer: str) -> dict[str, str]:
    return ACCOUNTS.get(customer, {"plan": "standard"})


def page_on_call(customer: str) -> bool:
    PAGES.append(customer)
    return True


def send_reply(customer: str, body: str, queue: str, idempotency_key: str) -> dict[str, Any]:
    SENT.append({"to": customer, "body": body, "queue": queue, "key": idempotency_key})
    return {"sent": True}


@workflow(name="triage_agent", version="2026-12-01.2")
def triage_agent(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    category = ctx.model("classify", classify, CLASSIFIER.render(text=ticket["text"]), prompt=CLASSIFIER)
    account = ctx.step("look up account", look_up_account, ticket["customer"])
    if account["plan"] == "enterprise":
        queue = "priority"
    else:
        queue = "standard"
    if category == "outage":
        if ctx.patched("page-on-call"):
            ctx.step("page on-call", page_on_call, ticket["customer"])
        ctx.wait_signal("acknowledged", timeout=3600)
    reply = ctx.model("draft reply", draft, DRAFTER.render(category=category, queue=queue), prompt=DRAFTER)
    ctx.step("send reply", send_reply, ticket["customer"], reply, queue, idempotency_key=ctx.idempotency_key())
    return {"category": category, "queue": queue}
