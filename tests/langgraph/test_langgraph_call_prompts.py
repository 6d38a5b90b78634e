"""Per-call prompt versions on LangGraph's functional API, recorded on the real engine (SqliteSaver and
InMemorySaver): the model agent (``lg_apps/model_agent.py``) classifies under ``use_prompt(TRIAGE)``, parks
at a reviewer's ``interrupt()``, then renders ``REPLY`` in ``write_reply``. Threads:

* ``deployed``: started with REPLY on gpt-4o-mini (v1), parked, resumed on the real engine after the deploy
  (REPLY on gpt-4.1, v2), so its ``write_reply`` used v2;
* ``before``: completed under v1; ``parked``: parked under v1 after ``classify``;
* ``triage-edited``: parked under v1, resumed with TRIAGE's text edited (the entrypoint calls ``classify``
  again on resume, answered from its stored result: the call's version stays the one it ran with);
* ``unrecorded`` (another database): like ``deployed`` but with the recorder off, as a thread recorded
  before per-call records.

The histories are imported and replayed against copies of the agent at v1, at v2, and with TRIAGE's model
switched; no task body may run during replay."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command, Interrupt
from lg_apps import model_agent

import replaytest.prompts as prompts_module
from replaytest.cli import cli
from replaytest.plugins.langgraph.prompts import with_prompts
from replaytest.plugins.langgraph.recording import RECORD_CHANNEL
from replaytest.plugins.langgraph.replayer import NO_CALL_PROMPTS_NOTE
from replaytest.prompts import Prompt, compose_version

APPS = Path(__file__).resolve().parent / "lg_apps"
SPEC = "lg_apps.model_agent:model_agent"
TRIAGE_TEXT = "Sort this ticket into billing, shipping or other: {ticket}"
REPLY_TEXT = "Write a friendly reply to the customer, given: {summary}"
PARAMS = {"temperature": 0.2}
V1_REPLY_LINE = 'REPLY = Prompt("reply", "Write a friendly reply to the customer, given: {summary}", model="gpt-4o-mini"'
V2_REPLY_LINE = 'REPLY = Prompt("reply", "Write a friendly reply to the customer, given: {summary}", model="gpt-4.1"'
V1_TRIAGE_LINE = 'TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini"'
REPLY_V2 = Prompt("reply", REPLY_TEXT, model="gpt-4.1", params=PARAMS)
TRIAGE_EDITED = Prompt("triage", "Classify this ticket: {ticket}", model="gpt-4o-mini", params=PARAMS)


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def full(text: str, model: str) -> str:
    return compose_version(sha(text), model, PARAMS)


def thread(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def record(saver: Any, patch: pytest.MonkeyPatch, *, deployed_only: bool = False) -> dict[str, Any]:
    """Run the threads for real; returns what the resumed ``deployed`` thread returned."""
    graph = model_agent.model_agent.copy(update={"checkpointer": saver})
    ticket = "my invoice was charged twice"
    if not deployed_only:
        assert "__interrupt__" in graph.invoke(ticket, with_prompts(thread("before"), graph))
        assert graph.invoke(Command(resume="refund approved"), thread("before"))["queue"] == "billing"
        assert "__interrupt__" in graph.invoke("the parcel never arrived", with_prompts(thread("parked"), graph))
        assert "__interrupt__" in graph.invoke(ticket, with_prompts(thread("triage-edited"), graph))
    assert "__interrupt__" in graph.invoke(ticket, with_prompts(thread("deployed"), graph))
    with pytest.MonkeyPatch.context() as deploy:  # the deploy: REPLY moves to gpt-4.1
        deploy.setattr(model_agent, "REPLY", REPLY_V2)
        done = graph.invoke(Command(resume="refund approved"), thread("deployed"))
        if not deployed_only:
            deploy.setattr(model_agent, "TRIAGE", TRIAGE_EDITED)
            graph.invoke(Command(resume="refund approved"), thread("triage-edited"))
    return dict(done)


def recorder_off(patch: pytest.MonkeyPatch) -> None:
    """As before per-call records: no render or use_prompt hook."""
    patch.setattr(prompts_module, "_RENDER_HOOKS", [])
    patch.setattr(prompts_module, "_USE_HOOKS", [])


def import_db(db: Path, out: Path) -> None:
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out", str(out),
                                      "--workflows", SPEC])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("langgraph-call-prompts")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MODEL_AGENT_EFFECTS", str(root / "effects.log"))
        for name, off in (("recorded", False), ("unrecorded", True)):
            conn = sqlite3.connect(root / f"{name}.sqlite", check_same_thread=False)
            try:
                with pytest.MonkeyPatch.context() as inner:
                    if off:
                        recorder_off(inner)
                    record(SqliteSaver(conn), inner, deployed_only=off)
            finally:
                conn.close()
    effects = (root / "effects.log").read_text().splitlines()
    assert "reply gpt-4.1 Write a friendly reply to the customer, given: billing: refund approved" in effects
    import_db(root / "recorded.sqlite", root / "histories")
    import_db(root / "unrecorded.sqlite", root / "unrecorded")
    (root / "unrecorded" / "model_agent-deployed.json").rename(root / "histories" / "model_agent-unrecorded.json")
    yield root / "histories"


_copies = itertools.count()


def replay(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str], args: tuple[str, ...] = ()) -> dict[str, Any]:
    """The histories replayed against a fresh copy of the agent with ``edits`` made to its prompt module."""
    package = f"model_agent_copy_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "model_agent.py", target / "agent.py")
    texts = (APPS / "model_texts.py").read_text()
    for old, new in edits:
        assert texts.count(old) == 1
        texts = texts.replace(old, new)
    (target / "model_texts.py").write_text(texts)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MODEL_AGENT_EFFECTS", str(tmp_path / "replay-effects.log"))
    result = CliRunner().invoke(cli, ["replay", str(histories), "--workflows", f"{package}.agent:model_agent",
                                      "--format", "json", *args])
    assert not (tmp_path / "replay-effects.log").exists(), "replay ran a task body"
    sys.modules.pop(f"{package}.agent", None)
    # Keyed by file: the unrecorded thread's history keeps its thread id (``deployed``).
    return {Path(r["history"]).stem.removeprefix("model_agent-"): r for r in json.loads(result.output)["results"]}


def messages(result: dict[str, Any]) -> list[str]:
    found = [w["message"] for w in result["warnings"]]
    if result.get("divergence"):
        found.append(result["divergence"]["message"])
    return found


def test_each_task_call_carries_the_version_it_actually_used(histories: Path) -> None:
    def prompts(thread_id: str) -> list[tuple[str, Any]]:
        document = json.loads((histories / f"model_agent-{thread_id}.json").read_text())
        return [(e["name"], e.get("prompt")) for e in document["events"] if e["kind"] == "step"]

    triage_v1 = {"name": "triage", "version": full(TRIAGE_TEXT, "gpt-4o-mini"), "params": PARAMS}
    assert prompts("deployed") == [
        ("classify", triage_v1),
        ("write_reply", {"name": "reply", "version": full(REPLY_TEXT, "gpt-4.1"), "params": PARAMS}),
    ]
    assert prompts("before")[1] == ("write_reply", {"name": "reply", "version": full(REPLY_TEXT, "gpt-4o-mini"), "params": PARAMS})
    # classify ran before the edit; the resumed entrypoint called it again under the edited TRIAGE (answered
    # from its stored result): the call keeps the version it ran with.
    assert prompts("triage-edited")[0] == ("classify", triage_v1)
    assert prompts("parked") == [("classify", triage_v1)]
    assert all(prompt is None for _, prompt in prompts("unrecorded"))


def test_replayed_against_the_deployed_code_nothing_is_reported(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = replay(tmp_path, histories, monkeypatch, (V1_REPLY_LINE, V2_REPLY_LINE))
    deployed = results["deployed"]
    # Not the false "already called ... started under v1" the start manifest used to give.
    assert (deployed["status"], deployed["warnings"], deployed["prompt_changes"]) == ("passed", [], [])
    assert NO_CALL_PROMPTS_NOTE not in deployed["notes"]
    # A thread that used v1 for its reply: the model switch, in words.
    [warning] = results["before"]["warnings"]
    assert warning["message"] == (
        f"task 'write_reply' now uses prompt version {sha(REPLY_TEXT)[:19]} (gpt-4.1, params "
        f"{full(REPLY_TEXT, 'gpt-4.1').rsplit('=', 1)[1][:8]}) but the history recorded {sha(REPLY_TEXT)[:19]} "
        f"(gpt-4o-mini, params {full(REPLY_TEXT, 'gpt-4o-mini').rsplit('=', 1)[1][:8]}) (prompt reply: model "
        "gpt-4o-mini → gpt-4.1)"
    )
    # The parked thread has not reached REPLY: it will use gpt-4.1 (prompts-pending).
    parked = results["parked"]
    assert parked["status"] == "diverged" and "model gpt-4o-mini → gpt-4.1" in parked["divergence"]["message"]
    assert "will use reply" in parked["divergence"]["message"]


def test_a_rollback_reports_the_task_that_used_the_newer_version(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = replay(tmp_path, histories, monkeypatch)  # the code back at v1
    deployed = results["deployed"]
    assert deployed["status"] == "passed"  # completed: a warning by the default prompts policy
    [warning] = deployed["warnings"]
    assert warning["kind"] == "prompt-drift"
    assert warning["message"].startswith("task 'write_reply' now uses prompt version")
    assert warning["message"].endswith("(prompt reply: model gpt-4.1 → gpt-4o-mini)")
    assert deployed["prompt_changes"] == [{
        "prompt": "reply", "started": full(REPLY_TEXT, "gpt-4.1"), "current": full(REPLY_TEXT, "gpt-4o-mini"),
        "called": True, "compared": "call",
    }]
    for thread_id in ("before", "parked"):
        assert messages(results[thread_id]) == [], thread_id
    # Resumed after the deploy too: its reply used gpt-4.1; its classify ran under v1 (nothing said of it).
    assert messages(results["triage-edited"]) == [warning["message"]]
    failing = replay(tmp_path, histories, monkeypatch, args=("--prompts", "fail"))["deployed"]
    assert failing["status"] == "diverged" and failing["divergence"]["message"] == warning["message"]


def test_a_parked_thread_that_already_used_a_changed_prompt_fails(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    switched = (V1_TRIAGE_LINE, V1_TRIAGE_LINE.replace("gpt-4o-mini", "gpt-4.1"))
    for args in ((), ("--prompts", "fail")):
        parked = replay(tmp_path, histories, monkeypatch, switched, args=args)["parked"]
        assert parked["status"] == "diverged", args
        assert parked["divergence"]["kind"] == "prompt-drift"
        message = parked["divergence"]["message"]
        assert message.startswith("task 'classify' now uses prompt version")
        assert "(prompt triage: model gpt-4o-mini → gpt-4.1)" in message
        assert "this parked thread keeps the result of task 'classify'" in message
        assert f"the next prompt it uses is reply {sha(REPLY_TEXT)[:19]}" in message
    warned = replay(tmp_path, histories, monkeypatch, switched, args=("--prompts", "warn"))["parked"]
    assert warned["status"] == "passed"
    assert [w["message"].split(" (this")[0] for w in warned["warnings"]] == [message.split(" (this")[0]]


def test_a_thread_recorded_before_per_call_records_falls_back_to_the_manifest_with_a_note(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for edits in ((), ((V1_REPLY_LINE, V2_REPLY_LINE),)):  # a rollback, and the deployed code
        unrecorded = replay(tmp_path, histories, monkeypatch, *edits)["unrecorded"]
        assert unrecorded["status"] == "passed"
        assert unrecorded["notes"].count(NO_CALL_PROMPTS_NOTE) == 1, edits


def _plain(value: Any) -> Any:
    """A stored value with LangGraph's interrupt ids (derived from the run's checkpoint ids) left out."""
    if isinstance(value, Interrupt):
        return ("interrupt", _plain(value.value))
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _run_writes(saver: Any, thread_id: str) -> tuple[list[tuple[str, Any]], list[Any]]:
    """The thread's writes (prompt records apart), and the records."""
    writes: list[tuple[str, Any]] = []
    records: list[Any] = []
    for item in saver.list(thread(thread_id)):
        for _, channel, value in item.pending_writes or ():
            if channel == RECORD_CHANNEL:
                records.append(value)
            else:
                writes.append((channel, _plain(value)))
    return sorted(writes, key=repr), records


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_records_do_not_change_the_run(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL_AGENT_EFFECTS", str(tmp_path / "effects.log"))
    outcomes = {}
    for mode in ("recorded", "off"):
        saver: Any = (InMemorySaver() if kind == "memory"
                      else SqliteSaver(sqlite3.connect(tmp_path / f"{mode}.sqlite", check_same_thread=False)))
        with pytest.MonkeyPatch.context() as patch:
            if mode == "off":
                recorder_off(patch)
            done = record(saver, patch, deployed_only=True)
            graph = model_agent.model_agent.copy(update={"checkpointer": saver})
            state = graph.get_state(thread("deployed"))
            writes, records = _run_writes(saver, "deployed")
        outcomes[mode] = (_plain(done), _plain(state.values), state.next, [_plain(t.result) for t in state.tasks], writes)
        assert bool(records) == (mode == "recorded")
    assert outcomes["recorded"] == outcomes["off"]
    assert outcomes["recorded"][0] == {"queue": "billing", "reply": "[gpt-4.1] billing: refund approved"}
