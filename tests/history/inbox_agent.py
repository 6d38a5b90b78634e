"""A support-inbox agent for the load-memory test: for every ticket it asks a model for a category and
files the ticket in that queue. ``inbox_history`` writes the history a long run of it leaves, event by
event as the journal records them, so a history of tens of megabytes takes seconds, not a real run."""

from __future__ import annotations

from typing import Any

from replaytest.history import Event, History, PromptRef, WorkflowInfo, args_digest
from replaytest.journal import Prompt, workflow

CLASSIFY = Prompt("ticket_classifier", "Which queue does this ticket belong to: billing, shipping or other?\n{ticket}")
QUEUES = ("billing", "shipping", "other")


def classify(ticket: int) -> str:
    raise AssertionError("a replay never calls the model")


def file_ticket(ticket: int, queue: str) -> int:
    raise AssertionError("a replay never files a ticket")


@workflow("inbox_triage")
def inbox_triage(ctx: Any, tickets: int) -> dict[str, int]:
    filed = {queue: 0 for queue in QUEUES}
    for ticket in range(tickets):
        queue = ctx.model("classify", classify, ticket, prompt=CLASSIFY)
        ctx.step("file_ticket", file_ticket, ticket, queue)
        filed[queue] += 1
    return filed


def inbox_history(tickets: int) -> History:
    """The completed history of ``inbox_triage`` over ``tickets`` tickets (two events per ticket)."""
    prompt = PromptRef(CLASSIFY.name, CLASSIFY.version)
    events = []
    filed = {queue: 0 for queue in QUEUES}
    for ticket in range(tickets):
        queue = QUEUES[ticket * 7 % 3]
        filed[queue] += 1
        events.append(Event(seq=2 * ticket + 1, kind="model", name="classify", args_digest=args_digest((ticket,)),
                            prompt=prompt, result=queue))
        events.append(Event(seq=2 * ticket + 2, kind="step", name="file_ticket",
                            args_digest=args_digest((ticket, queue)), result=ticket + 10_000))
    return History(
        workflow=WorkflowInfo("inbox_triage", f"inbox-{tickets}", f"run-{tickets}"),
        status="completed",
        events=tuple(events),
        input=tickets,
        result=filed,
        prompt_versions={CLASSIFY.name: CLASSIFY.version},
    )
