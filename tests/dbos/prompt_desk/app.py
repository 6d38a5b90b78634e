"""A support agent on DBOS: a model call under the triage prompt, a wait for a reviewer (``DBOS.recv``),
then the reply written under the reply prompt. Step bodies append a line to the file named by
``PROMPT_DESK_EFFECTS`` whenever they really run."""

from __future__ import annotations

import os

from dbos import DBOS

from prompt_desk.prompts import REPLY, TRIAGE
from replaytest.dbos import use_prompt

REVIEW_WAIT_S = 600


def effect(what: str) -> None:
    with open(os.environ.get("PROMPT_DESK_EFFECTS", "prompt-desk-effects.log"), "a", encoding="utf-8") as journal:
        journal.write(what + "\n")


@DBOS.step()
def call_model(prompt_text: str) -> str:
    effect(f"model {prompt_text}")
    return "billing" if "invoice" in prompt_text else "other"


@DBOS.step()
def write_reply(summary: str) -> str:
    # The step renders its prompt itself: replay learns from its body that this call uses REPLY.
    effect(f"reply {summary}")
    return REPLY.render(summary=summary)


@DBOS.workflow()
def support_agent(ticket: str) -> dict:
    with use_prompt(TRIAGE):
        queue = call_model(TRIAGE.render(ticket=ticket))
    review = DBOS.recv("review", timeout_seconds=REVIEW_WAIT_S)
    reply = write_reply(f"{queue}: {review}")
    return {"queue": queue, "reply": reply}


@DBOS.step()
async def call_model_async(prompt_text: str) -> str:
    effect(f"async model {prompt_text}")
    return "billing" if "invoice" in prompt_text else "other"


@DBOS.workflow()
async def support_agent_async(ticket: str) -> dict:
    # DBOS checks an async step's recorded row from a worker thread (asyncio.to_thread, which copies the
    # context): the use_prompt block must still be seen there.
    with use_prompt(TRIAGE):
        queue = await call_model_async(TRIAGE.render(ticket=ticket))
    return {"queue": queue}
