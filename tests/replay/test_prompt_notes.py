"""On the real journal runtime, a plain step (``ctx.step``) whose function calls a model records no prompt
version (only ``ctx.model(..., prompt=P)`` does): replay names it in a note with the line of the model call,
and says nothing of steps that call no model or of model calls that recorded their prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from replaykit import record, replay, tagged_line

from replaytest.journal import workflow
from replaytest.prompts import Prompt
from replaytest.replay.engine import UNRECORDED_MODEL_CALL_NOTE

MODEL = FakeListChatModel(responses=["billing"])
TRIAGE = Prompt("triage", "Sort this ticket: {ticket}", model="fake-chat")
REGISTRY = {"acme/follow-up": "Ask whether {ticket} is solved"}


def ask_model(text: str) -> str:
    return str(MODEL.invoke(text).content)  # [model call]


def follow_up(ticket: str) -> str:
    text = REGISTRY["acme/follow-up"].format(ticket=ticket)  # a prompt fetched at run time, as a plain string
    return ask_model(text)


def file_ticket(ticket: str) -> str:
    return f"filed {ticket}"


@workflow(name="fetch_agent")
def fetch_agent(ctx: Any, ticket: str) -> dict:
    queue = ctx.model("triage", ask_model, TRIAGE.render(ticket=ticket), prompt=TRIAGE)
    filed = ctx.step("file", file_ticket, ticket)
    return {"queue": queue, "filed": filed, "follow_up": ctx.step("follow up", follow_up, ticket)}


def test_a_plain_step_that_calls_a_model_is_named_in_a_note(tmp_path: Path) -> None:
    path = record(tmp_path, fetch_agent, "my invoice was charged twice")
    result = replay(path, fetch_agent)
    assert result.status == "passed", result
    site = f"MODEL.invoke at test_prompt_notes.py:{tagged_line(ask_model, 'model call')}"
    expected = UNRECORDED_MODEL_CALL_NOTE.format(what="step 'follow up' (event #3)", site=site)
    # Not the model call that recorded TRIAGE, not the step that calls no model.
    assert [note for note in result.notes if "recorded no prompt version:" in note] == [expected]
