"""Prompt versions of DBOS runs, recorded for real: the prompt desk's support agent (``prompt_desk``) calls
the model under the triage prompt, waits for a reviewer in ``DBOS.recv``, then writes the reply under the
reply prompt. ``desk-done`` and ``desk-parked`` were started inside ``with_prompts`` (the manifest in the
workflow attributes), ``desk-plain`` without it; every step records the prompt version it used in the side
table (the application imports ``dbos.prompts``). The histories are imported and replayed in a fresh
process against the prompts as recorded and edited; no step body may run during replay. The per-call
recording itself, across a deploy and a rollback, is ``test_dbos_prompt_calls.py``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.replay.engine import NO_MANIFEST_NOTE, NO_PROMPTS_NOTE

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_prompt_desk.py"
PROMPTS = (HERE / "prompt_desk/prompts.py").read_text()
TRIAGE_TEXT = "Sort this ticket into billing, shipping or other: {ticket}"
REPLY_TEXT = "Write a friendly reply to the customer, given: {summary}"
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("prompt_desk.app",))
'''


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Recording:
    system_db: Path
    histories: Path


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    directory = tmp_path_factory.mktemp("prompt-desk")
    system_db = directory / "system.sqlite3"
    environment = {**os.environ, "PROMPT_DESK_EFFECTS": str(directory / "effects.log")}
    run = subprocess.run(
        [sys.executable, str(RECORDER), str(system_db)], capture_output=True, text=True, timeout=180, cwd=directory,
        env=environment,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    histories = directory / "histories"
    result = CliRunner().invoke(
        cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out", str(histories)]
    )
    assert result.exit_code == 0, result.output
    return Recording(system_db, histories)


def replay(root: Path, recording: Recording, prompts: str = PROMPTS) -> dict[str, dict]:
    """``replaytest replay`` of every history in a fresh process, against ``prompts`` as the prompts module."""
    shutil.copytree(HERE / "prompt_desk", root / "prompt_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "prompt_desk/prompts.py").write_text(prompts)
    (root / "prompt_desk/replay.py").write_text(REPLAY_CONFIG)
    shutil.copytree(recording.histories, root / "histories")
    environment = {**os.environ, "PROMPT_DESK_EFFECTS": str(root / "replay-effects.log")}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "--format", "json", "-w", "prompt_desk.replay:CONFIG", "histories"],
        capture_output=True, text=True, timeout=180, cwd=root, env=environment,
    )
    assert not (root / "replay-effects.log").exists(), "replay ran a step body"
    assert run.stdout, run.stderr
    return {result["workflow"]["id"]: result for result in json.loads(run.stdout)["results"]}


def test_the_manifest_is_in_the_workflow_attributes_and_the_history(recording: Recording) -> None:
    with sqlite3.connect(recording.system_db) as db:
        rows = dict(db.execute("SELECT workflow_uuid, attributes FROM workflow_status"))
        operations = {
            workflow_id: db.execute(
                "SELECT function_id, function_name FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id",
                (workflow_id,),
            ).fetchall()
            for workflow_id in ("desk-done", "desk-plain")
        }
    expected = {"triage": sha(TRIAGE_TEXT), "reply": sha(REPLY_TEXT)}
    assert json.loads(rows["desk-done"]) == {"replaytest_prompts": expected}
    assert rows["desk-plain"] in (None, "null")
    # The manifest is no operation: the run's function ids and names are those of the run without it.
    assert operations["desk-done"] == operations["desk-plain"]
    assert sorted(name for _, name in operations["desk-done"]) == ["DBOS.recv", "DBOS.sleep", "call_model", "write_reply"]
    for workflow_id in ("desk-done", "desk-parked"):
        assert json.loads((recording.histories / f"{workflow_id}.json").read_text())["prompt_manifest"] == expected
    assert "prompt_manifest" not in json.loads((recording.histories / "desk-plain.json").read_text())


def test_unchanged_prompts_pass(tmp_path: Path, recording: Recording) -> None:
    results = replay(tmp_path, recording)
    assert {workflow_id: result["status"] for workflow_id, result in results.items()} == {
        "desk-done": "passed", "desk-parked": "passed", "desk-plain": "passed", "desk-async": "passed",
    }
    assert results["desk-parked"]["run_status"] == "parked"  # PENDING in recv: DBOS recovers it, said parked
    for workflow_id in ("desk-done", "desk-parked"):
        assert results[workflow_id]["warnings"] == []
        assert NO_PROMPTS_NOTE not in results[workflow_id]["notes"]
        assert NO_MANIFEST_NOTE not in results[workflow_id]["notes"]
        assert results[workflow_id]["prompt_changes"] == []
    # Started without the helper: no manifest, but each step recorded the version it used.
    assert NO_PROMPTS_NOTE not in results["desk-plain"]["notes"]


def test_a_changed_prompt_the_parked_run_has_not_reached_fails_it_and_warns_the_completed_one(
    tmp_path: Path, recording: Recording
) -> None:
    new_text = "Write a short reply to the customer, given: {summary}"
    results = replay(tmp_path, recording, PROMPTS.replace(REPLY_TEXT, new_text))
    parked = results["desk-parked"]
    assert parked["status"] == "diverged"
    assert parked["divergence"]["kind"] == "prompt-drift"
    assert parked["divergence"]["message"] == (
        f"the parked run has not reached these prompts yet (it resumes at DBOS.recv, waiting for a message; its "
        f"history ends at function id 3): will use reply {sha(new_text)[:19]}, started under "
        f"{sha(REPLY_TEXT)[:19]} (fails by prompts-pending)"
    )
    assert parked["divergence"]["position"] is None  # no event is recorded where it resumes
    assert parked["prompt_changes"] == [
        {"prompt": "reply", "started": sha(REPLY_TEXT), "current": sha(new_text), "called": False, "compared": "manifest"}
    ]
    done = results["desk-done"]
    assert done["status"] == "passed"
    [warning] = done["warnings"]
    assert warning["kind"] == "prompt-drift"
    assert warning["message"] == (
        f"step 'write_reply' now uses prompt version {sha(new_text)[:19]} but the history recorded "
        f"{sha(REPLY_TEXT)[:19]} (prompt reply)"
    )
    assert warning["source"]["line"] == line_of("reply = write_reply(")
    # Started without the helper: no manifest, but the step's own record is compared all the same.
    [warning] = results["desk-plain"]["warnings"]
    assert warning["message"].startswith("step 'write_reply' now uses prompt version")


def test_a_changed_prompt_the_parked_run_already_used_fails_it_with_both_versions(tmp_path: Path, recording: Recording) -> None:
    new_text = "Classify this ticket into billing, shipping or other: {ticket}"
    results = replay(tmp_path, recording, PROMPTS.replace(TRIAGE_TEXT, new_text))
    parked = results["desk-parked"]
    # The version the step used is its own record (not inferred): a parked run fails by --prompts (fail).
    assert parked["status"] == "diverged"
    divergence = parked["divergence"]
    assert (divergence["kind"], divergence["position"]) == ("prompt-drift", 1)
    assert divergence["message"] == (
        f"step 'call_model' at function id 1 now uses prompt version {sha(new_text)[:19]} but the history recorded "
        f"{sha(TRIAGE_TEXT)[:19]} (prompt triage) (this parked run keeps the result of step 'call_model' recorded "
        f"under {sha(TRIAGE_TEXT)[:19]} and resumes at DBOS.recv (waiting for a message); the prompts it uses after "
        f"that: reply {sha(REPLY_TEXT)[:19]})"
    )
    assert divergence["source"]["line"] == line_of("queue = call_model(TRIAGE.render")
    assert parked["prompt_changes"] == [
        {"prompt": "triage", "started": sha(TRIAGE_TEXT), "current": sha(new_text), "called": True, "compared": "call"}
    ]
    # The async workflow's use_prompt block is seen where DBOS checks its step (a worker thread), both
    # when the step ran (recorded) and in replay.
    [warning] = results["desk-async"]["warnings"]
    assert warning["message"].startswith("step 'call_model_async' now uses prompt version")
    assert "(prompt triage)" in warning["message"]


def line_of(text: str) -> int:
    lines = [number for number, line in enumerate((HERE / "prompt_desk/app.py").read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_malformed_manifest_refuses_the_run_naming_the_json_path(tmp_path: Path, recording: Recording) -> None:
    system_db = tmp_path / "system.sqlite3"
    shutil.copy(recording.system_db, system_db)
    with sqlite3.connect(system_db) as db:
        db.execute(
            "UPDATE workflow_status SET attributes = ? WHERE workflow_uuid = 'desk-done'",
            (json.dumps({"replaytest_prompts": {"triage": 7}}),),
        )
    result = CliRunner().invoke(
        cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--workflow-id", "desk-done", "--out", str(tmp_path / "h")]
    )
    assert "workflow 'desk-done': workflow_status.attributes: $.replaytest_prompts['triage'] is 7, not a prompt version" in result.output
    assert not list((tmp_path / "h").glob("*.json"))


def test_impact_lists_the_parked_run_under_the_prompt_it_will_use(tmp_path: Path, recording: Recording) -> None:
    new_text = "Write a short reply to the customer, given: {summary}"
    replay(tmp_path, recording, PROMPTS.replace(REPLY_TEXT, new_text))  # sets the project up with the edit
    environment = {**os.environ, "PROMPT_DESK_EFFECTS": str(tmp_path / "replay-effects.log")}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "impact", "-q", "--format", "json", "-w", "prompt_desk.replay:CONFIG", "histories"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=environment,
    )
    assert not (tmp_path / "replay-effects.log").exists(), "impact ran a step body"
    workflows = {workflow["type"]: workflow for workflow in json.loads(run.stdout)["workflows"]}
    assert workflows["support_agent_async"]["prompt_groups"] == []  # it did not change and it completed
    workflow = workflows["support_agent"]
    # The completed run called the reply prompt, but calls nothing again: only in-flight runs are listed.
    # The group names the line of the current code that uses the prompt.
    source = workflow["prompt_groups"][0].pop("source")
    app = Path(source["path"])
    assert (app.parent.name, app.name) == ("prompt_desk", "app.py")
    assert "REPLY" in app.read_text().splitlines()[source["line"] - 1]
    assert workflow["prompt_groups"] == [{
        "prompt": "reply", "from": sha(REPLY_TEXT), "to": sha(new_text), "compared": ["manifest"],
        "runs": {"not_called": ["desk-parked"], "called": []},
    }]
    markdown = subprocess.run(
        [sys.executable, "-m", "replaytest", "impact", "-q", "--format", "markdown", "-w", "prompt_desk.replay:CONFIG", "histories"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=environment,
    ).stdout
    assert (
        f"| `reply` | `{sha(REPLY_TEXT)[:19]}` | `{sha(new_text)[:19]}` | the run's start manifest | `desk-parked` | — |"
        in markdown
    )
