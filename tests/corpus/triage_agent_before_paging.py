"""``triage_agent`` as it was before the ``page-on-call`` patch: an outage ticket only waits for the
acknowledgement. The corpus tests record older runs with it; they replay against ``triage_agent``."""

from __future__ import annotations

from typing import Any

from triage_agent import CLASSIFIER, DRAFTER, classify, draft, look_up_account, send_reply

from replaytest.journal import workflow


@workflow(name="triage_agent", version="2026-12-01.1")
def triage_agent(ctx: Any, ticket: dict[str, Any]) -> dict[str, Any]:
    category = ctx.model("classify", classify, CLASSIFIER.render(text=ticket["text"]), prompt=CLASSIFIER)
    account = ctx.step("look up account", look_up_account, ticket["customer"])
    queue = "priority" if account["plan"] == "enterprise" else "standard"
    if category == "outage":
        ctx.wait_signal("acknowledged", timeout=3600)
    reply = ctx.model("draft reply", draft, DRAFTER.render(category=category, queue=queue), prompt=DRAFTER)
    ctx.step("send reply", send_reply, ticket["customer"], reply, queue, idempotency_key=ctx.idempotency_key())
    return {"category": category, "queue": queue}
