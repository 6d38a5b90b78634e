"""A support agent on DBOS with two model calls: triage (its prompt rendered in workflow code, the step
called inside ``use_prompt``), a wait for a reviewer (``DBOS.recv``), then the reply (its prompt rendered
inside the step). Step bodies append what they ran, with the model, to the file named by
``MODEL_DESK_EFFECTS``."""

from __future__ import annotations

import os

from dbos import DBOS

from model_desk.prompts import REPLY, TRIAGE
from replaytest.plugins.dbos.prompts import use_prompt


def effect(what: str) -> None:
    with open(os.environ.get("MODEL_DESK_EFFECTS", "model-desk-effects.log"), "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def call_model(prompt_text: str) -> str:
    effect(f"triage {TRIAGE.model}")
    return "billing" if "invoice" in prompt_text else "other"


@DBOS.step()
def write_reply(summary: str) -> str:
    text = REPLY.render(summary=summary)
    effect(f"reply {REPLY.model}")
    return text


@DBOS.workflow()
def support_agent(ticket: str) -> dict:
    with use_prompt(TRIAGE):
        queue = call_model(TRIAGE.render(ticket=ticket))
    review = DBOS.recv("review", timeout_seconds=600)
    reply = write_reply(f"{queue}: {review}")
    return {"queue": queue, "reply": reply}
