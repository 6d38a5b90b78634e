"""Every prompt a LangGraph task call rendered is compared, on the real engine (SqliteSaver): the tone agent
(``lg_apps/tone_agent.py``) renders TONE in both of its tasks, with no ``use_prompt`` around it, and reads
its prompts as module attributes (``texts.TONE``). Threads, recorded with per-call records under v1:

* ``done``: completed (triage, the reviewer's answer, write_reply);
* ``parked``: parked at the reviewer's interrupt after ``triage``.

The histories are imported and replayed against copies of the agent with one prompt edited (TONE's or
REPLY's temperature, TRIAGE's model) or a prompt added to ``write_reply``; no task body may run during replay."""

from __future__ import annotations

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
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from lg_apps import tone_agent

from replaytest.cli import cli
from replaytest.plugins.langgraph.prompts import with_prompts

APPS = Path(__file__).resolve().parent / "lg_apps"
TONE_LINE = 'TONE = Prompt("tone", "Be warm and concise.", model="gpt-4o-mini", params={"temperature": 0.2})'
TONE_HOT = (TONE_LINE, TONE_LINE.replace("0.2", "0.9"))
REPLY_LINE = 'REPLY = Prompt("reply", "Reply about {queue}; the reviewer said {review}", model="gpt-4o-mini", params={"temperature": 0.2})'
REPLY_HOT = (REPLY_LINE, REPLY_LINE.replace("0.2", "0.9"))
TRIAGE_LINE = 'TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini"'
TRIAGE_SWITCHED = (TRIAGE_LINE, TRIAGE_LINE.replace("gpt-4o-mini", "gpt-4.1"))
# A prompt added since the threads ran, rendered by write_reply.
POLICY = ('TONE = Prompt(', 'POLICY = Prompt("policy", "Never promise a refund.")\nTONE = Prompt(')
POLICY_RENDERED = ('texts.TONE.render()\n    _effect(f"reply', 'texts.TONE.render() + texts.POLICY.render()\n    _effect(f"reply')


def thread(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("langgraph-task-prompts")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TONE_AGENT_EFFECTS", str(root / "effects.log"))
        conn = sqlite3.connect(root / "threads.sqlite", check_same_thread=False)
        try:
            graph = tone_agent.tone_agent.copy(update={"checkpointer": SqliteSaver(conn)})
            ticket = "my invoice was charged twice"
            assert "__interrupt__" in graph.invoke(ticket, with_prompts(thread("done"), graph))
            assert graph.invoke(Command(resume="refund approved"), thread("done"))["queue"] == "billing"
            assert "__interrupt__" in graph.invoke("the parcel never arrived", with_prompts(thread("parked"), graph))
        finally:
            conn.close()
    assert len((root / "effects.log").read_text().splitlines()) == 3
    result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{root / 'threads.sqlite'}",
                                      "--out", str(root / "histories"), "--workflows", "lg_apps.tone_agent:tone_agent"])
    assert result.exit_code == 0, result.output
    yield root / "histories"


_copies = itertools.count()


def copy_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str]) -> str:
    """A fresh copy of the agent (package ``tone_agent_copy_N``) with ``edits`` made to its two files; the
    spec of its entrypoint."""
    package = f"tone_agent_copy_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    for name in ("tone_agent.py", "tone_texts.py"):
        shutil.copy(APPS / name, target / name)
    for old, new in edits:
        for name in ("tone_agent.py", "tone_texts.py"):
            text = (target / name).read_text()
            if old in text:
                assert text.count(old) == 1
                (target / name).write_text(text.replace(old, new))
                break
        else:
            raise AssertionError(f"no file of the agent holds {old!r}")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TONE_AGENT_EFFECTS", str(tmp_path / "replay-effects.log"))
    return f"{package}.tone_agent:tone_agent"


def run(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str],
        args: tuple[str, ...] = (), command: str = "replay", form: str = "json") -> Any:
    spec = copy_agent(tmp_path, monkeypatch, *edits)
    result = CliRunner().invoke(cli, [command, str(histories), "--workflows", spec, "--format", form, *args])
    assert not (tmp_path / "replay-effects.log").exists(), "replay ran a task body"
    sys.modules.pop(spec.split(":")[0], None)
    if form != "json":
        return result.output
    return {Path(r["history"]).stem.removeprefix("tone_agent-"): r for r in json.loads(result.output)["results"]}


def messages(result: dict[str, Any]) -> list[str]:
    found = [w["message"] for w in result["warnings"]]
    if result.get("divergence"):
        found.append(result["divergence"]["message"])
    return found


def test_a_prompt_rendered_in_a_task_is_compared_at_every_call_that_used_it(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = run(tmp_path, histories, monkeypatch, TONE_HOT)
    done = results["done"]
    assert done["status"] == "passed"  # completed: warnings by the default prompts policy
    assert [(w["position"], w["message"].split(" now uses")[0], w["message"].rsplit(" (", 1)[1]) for w in done["warnings"]] == [
        (1, "task 'triage'", "prompt tone: temperature 0.2 → 0.9)"),
        (2, "task 'write_reply'", "prompt tone: temperature 0.2 → 0.9)"),
    ]
    # The parked thread already rendered TONE in triage: it fails by the default prompts policy.
    parked = results["parked"]
    assert parked["status"] == "diverged" and parked["divergence"]["kind"] == "prompt-drift"
    message = parked["divergence"]["message"]
    assert message.startswith("task 'triage' now uses prompt version")
    assert "(prompt tone: temperature 0.2 → 0.9)" in message
    assert "this parked thread keeps the result of task 'triage'" in message
    # The first change of a call is the divergence; none is silent under fail either.
    failing = run(tmp_path, histories, monkeypatch, TONE_HOT, REPLY_HOT, args=("--prompts", "fail"))["done"]
    assert failing["status"] == "diverged"
    assert failing["divergence"]["message"].endswith("(prompt tone: temperature 0.2 → 0.9)")
    assert failing["divergence"]["position"] == 1
    assert messages(failing)[:-1] == []  # the replay stops at the first call that changed


def test_every_changed_prompt_of_one_call_is_reported(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = run(tmp_path, histories, monkeypatch, TONE_HOT, REPLY_HOT, POLICY, POLICY_RENDERED)["done"]
    # One message per call: the first changed prompt it recorded is compared, every other change of the
    # call is named in the same message (Issued.prompt_also), in the recorded order, then the added prompt.
    at_reply = [w["message"] for w in done["warnings"] if w["position"] == 2]
    assert len(at_reply) == 1
    compared, *others = at_reply[0].split("; ")
    assert compared.startswith("task 'write_reply' now uses prompt version")
    assert compared.endswith("(prompt reply: temperature 0.2 → 0.9)")
    assert len(others) == 2
    assert others[0].startswith("also prompt tone: now sha256:") and others[0].endswith("(temperature 0.2 → 0.9)")
    assert others[1].startswith("now also uses prompt policy sha256:")
    assert others[1].endswith(", which the recorded call did not use")
    # Under fail the first is the divergence, the others of that call in its message; none is silent.
    failing = run(tmp_path, histories, monkeypatch, REPLY_HOT, POLICY, POLICY_RENDERED, args=("--prompts", "fail"))["done"]
    assert failing["status"] == "diverged" and failing["divergence"]["position"] == 2
    compared, *others = failing["divergence"]["message"].split("; ")
    assert compared.endswith("(prompt reply: temperature 0.2 → 0.9)")
    assert [other.split(" sha256:")[0] for other in others] == ["now also uses prompt policy"]
    assert failing["warnings"] == []
    # A prompt added since, the call's only change: reported too.
    added = run(tmp_path, histories, monkeypatch, POLICY, POLICY_RENDERED, args=("--prompts", "fail"))["done"]
    assert added["status"] == "diverged" and added["divergence"]["position"] == 2
    assert added["divergence"]["message"].startswith("task 'write_reply' now also uses prompt policy sha256:")
    assert added["divergence"]["message"].endswith(", which the recorded call did not use")


def test_a_prompt_a_later_task_uses_is_pending_even_when_an_earlier_task_used_it(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parked = run(tmp_path, histories, monkeypatch, TONE_HOT, args=("--prompts", "warn"))["parked"]
    # The call that already used TONE: a warning; write_reply, not run yet, will use the new TONE: pending drift.
    assert [w["message"].split(" now uses")[0] for w in parked["warnings"]] == ["task 'triage'"]
    assert parked["status"] == "diverged"
    message = parked["divergence"]["message"]
    assert message.startswith("the parked thread has not reached these prompts yet: will use tone")
    assert "(temperature 0.2 → 0.9)" in message and message.endswith("(fails by prompts-pending)")
    assert " again, used under sha256:" in message and " by a recorded task " in message  # triage used it
    assert "reply" not in message and "triage" not in message
    # A prompt only the task already run uses stays out of the pending check.
    parked = run(tmp_path, histories, monkeypatch, TRIAGE_SWITCHED, args=("--prompts", "warn"))["parked"]
    assert parked["status"] == "passed"
    assert [w["message"].rsplit(" (", 1)[-1] for w in parked["warnings"]] == ["prompt triage: model gpt-4o-mini → gpt-4.1)"]


def test_a_parameter_change_of_a_prompt_read_as_a_module_attribute_is_named(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = run(tmp_path, histories, monkeypatch, REPLY_HOT)
    done = results["done"]
    assert [w["message"].rsplit(" (", 1)[-1] for w in done["warnings"]] == ["prompt reply: temperature 0.2 → 0.9)"]
    # For the parked thread REPLY is compared with the start manifest, which holds the parameters' digest
    # only: the message says what they are now, not a bare "parameters changed".
    message = results["parked"]["divergence"]["message"]
    assert "(parameters now temperature 0.9; the run recorded only their digest " in message, message
    assert "parameters changed" not in message


def test_a_renamed_prompt_a_task_already_used_is_no_change_in_replay_or_impact(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRIAGE under a new name, same text, model and parameters: a rename. The parked thread's triage call
    used it; the change list the impact report groups must not call it a prompt "added since" that the
    thread "already called"."""
    renamed = ('TRIAGE = Prompt("triage",', 'TRIAGE = Prompt("sorter",')
    parked = run(tmp_path / "replay", histories, monkeypatch, renamed)["parked"]
    assert (parked["status"], parked["warnings"], parked["prompt_changes"]) == ("passed", [], [])
    assert any(note.startswith("prompt triage is now named sorter at the same version ") for note in parked["notes"])
    report = run(tmp_path / "impact", histories, monkeypatch, renamed, command="impact", form="text")
    assert "prompt sorter" not in report and "added since" not in report, report


def test_reports_call_task_calls_tasks(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = run(tmp_path, histories, monkeypatch, TONE_HOT, args=("--details",), form="text")
    # (Rows name the prompt compared at the call: TONE, the one that changed.)
    assert "    recorded  task 'triage' prompt tone sha256:" in text
    assert "    issued    task 'triage' prompt tone sha256:" in text
    assert "  > #1 task 'triage' prompt tone sha256:" in text
    assert "step '" not in text, text
    # The history file's neutral kind is unchanged; JSON reports carry it, with the engine's word in detail.
    parked = run(tmp_path, histories, monkeypatch, TONE_HOT)["parked"]
    assert parked["divergence"]["recorded"]["kind"] == "step"
    assert parked["divergence"]["recorded"]["detail"] == {"kind_label": "task", "prompt": "tone"}
    document = json.loads((histories / "tone_agent-parked.json").read_text())
    assert {event["kind"] for event in document["events"]} == {"step", "signal"}
    # impact: the resume the engine rehearsed, in LangGraph's words.
    text = run(tmp_path, histories, monkeypatch, command="impact", form="text")
    assert "resume cleanly: the engine issues task 'write_reply' next: parked" in text, text
    text = run(tmp_path, histories, monkeypatch, TONE_HOT, command="impact", form="text")
    assert "    recorded  task 'triage' prompt tone sha256:" in text and "    code now  task 'triage' prompt tone sha256:" in text, text
