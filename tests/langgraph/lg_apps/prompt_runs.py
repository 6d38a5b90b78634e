"""Recording the prompt agent's threads into any saver and replaying their histories against a copy of the
agent with its prompts as recorded or edited (shared by the SQLite and the Postgres tests)."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.types import Command

from lg_apps import prompt_agent
from replaytest.cli import cli
from replaytest.plugins.langgraph.prompts import with_prompts

APPS = Path(__file__).resolve().parent
TRIAGE_TEXT = "Sort this ticket into billing, shipping or other: {ticket}"
REPLY_TEXT = "Write a friendly reply to the customer, given: {summary}"


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def record_support_threads(saver: object) -> None:
    """``done`` (reviewed, completed) and ``parked`` (waiting for its reviewer) with the helper, ``plain``
    (completed) without it; the resumes pass plain configs, as an application resuming a thread would."""
    graph = prompt_agent.support_agent.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke("my invoice was charged twice", with_prompts(thread("done"), graph))
    assert graph.invoke(Command(resume="refund approved"), thread("done"))["queue"] == "billing"
    assert "__interrupt__" in graph.invoke("the parcel never arrived", with_prompts(thread("parked"), graph))
    assert "__interrupt__" in graph.invoke("my invoice was charged twice", thread("plain"))
    assert graph.invoke(Command(resume="refund approved"), thread("plain"))["queue"] == "billing"


_copies = itertools.count()


def replay(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, prompts: tuple[str, str] | None = None) -> dict:
    """The histories replayed against a copy of the agent (a package of its own, so each copy is fresh
    code) whose prompt module has ``prompts`` ``(old, new)`` replaced."""
    package = f"prompt_agent_copy_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "prompt_agent.py", target / "agent.py")
    texts = (APPS / "prompt_texts.py").read_text()
    if prompts is not None:
        assert texts.count(prompts[0]) == 1
        texts = texts.replace(*prompts)
    (target / "prompt_texts.py").write_text(texts)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PROMPT_AGENT_EFFECTS", str(tmp_path / "replay-effects.log"))
    result = CliRunner().invoke(cli, ["replay", str(histories), "--workflows", f"{package}.agent:support_agent", "--format", "json"])
    assert not (tmp_path / "replay-effects.log").exists(), "replay ran a task body"
    sys.modules.pop(f"{package}.agent", None)
    return {r["workflow"]["id"]: r for r in json.loads(result.output)["results"]}
