"""Prompt versions of LangGraph threads, recorded for real on a SqliteSaver: the support agent
(``lg_apps/prompt_agent.py``) calls the model under the triage prompt, asks a reviewer (``interrupt``),
then writes the reply under the reply prompt. Threads ``done`` and ``parked`` were started with
``with_prompts`` (the manifest in the checkpoint metadata), ``plain`` without it; every thread records the
version each task call used (``langgraph.recording``). The histories are
imported and replayed against a copy of the agent whose prompts are as recorded or edited; no task body
may run during replay."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.checkpoint.sqlite import SqliteSaver
from lg_apps.prompt_runs import REPLY_TEXT, TRIAGE_TEXT, record_support_threads, replay, sha

from replaytest.cli import cli
from replaytest.plugins.langgraph.replayer import NO_CALL_PROMPTS_NOTE
from replaytest.replay.engine import NO_MANIFEST_NOTE, NO_PROMPTS_NOTE


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("langgraph-prompts")
    effects = root / "effects.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROMPT_AGENT_EFFECTS", str(effects))
        conn = sqlite3.connect(root / "checkpoints.sqlite", check_same_thread=False)
        try:
            record_support_threads(SqliteSaver(conn))
        finally:
            conn.close()
    assert len(effects.read_text().splitlines()) == 5  # the task bodies did run while recording
    result = CliRunner().invoke(cli, [
        "import", "langgraph", "--checkpointer", f"sqlite:///{root / 'checkpoints.sqlite'}", "--out",
        str(root / "histories"), "--workflows", "lg_apps.prompt_agent:support_agent",
    ])
    assert result.exit_code == 0, result.output
    yield root / "histories"


def test_the_manifest_is_in_the_input_checkpoint_and_the_history(histories: Path) -> None:
    expected = {"triage": sha(TRIAGE_TEXT), "reply": sha(REPLY_TEXT)}
    for thread_id in ("done", "parked"):
        document = json.loads((histories / f"support_agent-{thread_id}.json").read_text())
        assert document["prompt_manifest"] == expected
    assert "prompt_manifest" not in json.loads((histories / "support_agent-plain.json").read_text())


def test_unchanged_prompts_pass(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = replay(tmp_path, histories, monkeypatch)
    assert {k: (r["status"], r["run_status"]) for k, r in results.items()} == {
        "done": ("passed", "completed"), "parked": ("passed", "parked"), "plain": ("passed", "completed"),
    }
    for thread_id in ("done", "parked", "plain"):
        assert results[thread_id]["warnings"] == [] and results[thread_id]["prompt_changes"] == []
        # Every thread recorded per call (``plain`` too: the recorder does not need with_prompts).
        assert NO_PROMPTS_NOTE not in results[thread_id]["notes"] and NO_CALL_PROMPTS_NOTE not in results[thread_id]["notes"]
    assert NO_MANIFEST_NOTE not in results["parked"]["notes"]


def test_a_changed_prompt_not_reached_yet_fails_the_parked_thread_and_warns_the_completed_one(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_text = "Write a short reply to the customer, given: {summary}"
    results = replay(tmp_path, histories, monkeypatch, (REPLY_TEXT, new_text))
    parked = results["parked"]
    assert parked["status"] == "diverged"
    assert parked["divergence"]["kind"] == "prompt-drift"
    assert parked["divergence"]["message"] == (
        f"the parked thread has not reached these prompts yet: will use reply {sha(new_text)[:19]}, started under "
        f"{sha(REPLY_TEXT)[:19]} (fails by prompts-pending)"
    )
    assert parked["prompt_changes"] == [
        {"prompt": "reply", "started": sha(REPLY_TEXT), "current": sha(new_text), "called": False, "compared": "manifest"}
    ]
    done = results["done"]
    assert done["status"] == "passed"
    [warning] = done["warnings"]
    # Compared with the version the call recorded (a completed thread: a warning by the prompts policy).
    assert warning["message"] == (
        f"task 'write_reply' now uses prompt version {sha(new_text)[:19]} but the history recorded "
        f"{sha(REPLY_TEXT)[:19]} (prompt reply)"
    )
    assert results["plain"]["status"] == "passed"
    assert [w["message"] for w in results["plain"]["warnings"]] == [warning["message"]]


def test_a_changed_prompt_already_used_fails_the_parked_thread_with_both_versions(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_text = "Classify this ticket into billing, shipping or other: {ticket}"
    results = replay(tmp_path, histories, monkeypatch, (TRIAGE_TEXT, new_text))
    parked = results["parked"]
    # The version the call recorded, compared as on the journal: a parked thread fails (prompts policy).
    assert parked["status"] == "diverged" and parked["warnings"] == []
    assert parked["divergence"]["kind"] == "prompt-drift"
    assert parked["divergence"]["message"] == (
        f"task 'call_model' now uses prompt version {sha(new_text)[:19]} but the history recorded "
        f"{sha(TRIAGE_TEXT)[:19]} (prompt triage) (this parked thread keeps the result of task 'call_model' recorded "
        f"under {sha(TRIAGE_TEXT)[:19]}; the next prompt it uses is reply {sha(REPLY_TEXT)[:19]}, the only prompt of "
        f"the tasks it has not run yet)"
    )
    assert parked["prompt_changes"] == [
        {"prompt": "triage", "started": sha(TRIAGE_TEXT), "current": sha(new_text), "called": True, "compared": "call"}
    ]


def test_a_malformed_manifest_refuses_the_thread_naming_the_checkpoint_and_json_path(tmp_path: Path, histories: Path) -> None:
    db = histories.parent / "checkpoints.sqlite"
    copy = tmp_path / "checkpoints.sqlite"
    shutil.copy(db, copy)
    with sqlite3.connect(copy) as conn:
        [(checkpoint_id, metadata)] = conn.execute(
            "SELECT checkpoint_id, metadata FROM checkpoints WHERE thread_id = 'parked'"
        ).fetchall()
        meta = json.loads(metadata)
        meta["replaytest_prompts"] = '{"triage": 7}'
        conn.execute("UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = ?", (json.dumps(meta).encode(), checkpoint_id))
    result = CliRunner().invoke(cli, [
        "import", "langgraph", "--checkpointer", f"sqlite:///{copy}", "--out", str(tmp_path / "h"),
        "--workflows", "lg_apps.prompt_agent:support_agent",
    ])
    assert (
        f"thread 'parked': checkpoint {checkpoint_id}: metadata $.replaytest_prompts['triage'] is 7, not a prompt version"
        in result.output
    )
    assert not (tmp_path / "h" / "support_agent-parked.json").exists()


def test_impact_lists_the_parked_thread_under_the_prompt_it_already_called(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_text = "Classify this ticket into billing, shipping or other: {ticket}"
    replay(tmp_path, histories, monkeypatch, (TRIAGE_TEXT, new_text))  # puts the edited copy on the path
    [package] = [p.name for p in tmp_path.iterdir() if p.name.startswith("prompt_agent_copy_")]
    result = CliRunner().invoke(cli, [
        "impact", "-q", str(histories), "--workflows", f"{package}.agent:support_agent", "--format", "text",
    ])
    assert (
        f"  prompt triage: {sha(TRIAGE_TEXT)[:19]} -> {sha(new_text)[:19]} (compared with the version its recorded "
        f"calls used, used at {tmp_path / package / 'agent.py'}:{_line_using('use_prompt(TRIAGE)', tmp_path / package)}), "
        "1 in-flight run\n"
        "    already called it, keep that result; any later call of it uses the new version (1): parked\n"
    ) in result.output, result.output


def _line_using(code: str, package: Path) -> int:
    """The line of the copied agent holding ``code``: the first line loading a prompt is where the impact
    report says the prompt is used."""
    lines = (package / "agent.py").read_text().splitlines()
    return next(number for number, text in enumerate(lines, 1) if code in text)
