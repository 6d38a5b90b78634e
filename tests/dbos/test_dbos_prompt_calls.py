"""Prompt versions recorded per step call on the real DBOS engine (SQLite system database), across a
deploy: ``md-1`` is recorded with prompts v1 (both model calls on gpt-4o-mini) and left pending in
``DBOS.recv`` before its second model call; DBOS then recovers it in a new process with the code at v2
(the reply call on gpt-4.1), so its second call really uses v2. Both the parked and the resumed run are
imported and replayed, in fresh processes, against v2, against v1 (a rollback) and against other edits.
No step body may run during replay."""

from __future__ import annotations

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
from replaytest.plugins.dbos.replayer import NO_CALL_VERSIONS_NOTE
from replaytest.prompts import Prompt, short_version

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_model_desk.py"
V1 = (HERE / "model_desk/prompts.py").read_text()
REPLY_V1_MODEL = 'model="gpt-4o-mini", params={"temperature": 0.7}'
TRIAGE_V1_MODEL = 'model="gpt-4o-mini", params={"temperature": 0.2}'
V2 = V1.replace(REPLY_V1_MODEL, 'model="gpt-4.1", params={"temperature": 0.7}')  # the deploy: reply on gpt-4.1
TRIAGE_SWITCHED = V1.replace(TRIAGE_V1_MODEL, 'model="gpt-4.1", params={"temperature": 0.2}')
TRIAGE_TEXT = "Sort this ticket into billing, shipping or other: {ticket}"
REPLY_TEXT = "Write a friendly reply to the customer, given: {summary}"
TRIAGE_V1 = Prompt("triage", TRIAGE_TEXT, model="gpt-4o-mini", params={"temperature": 0.2})
REPLY_V1 = Prompt("reply", REPLY_TEXT, model="gpt-4o-mini", params={"temperature": 0.7})
REPLY_V2 = Prompt("reply", REPLY_TEXT, model="gpt-4.1", params={"temperature": 0.7})
TRIAGE_V2 = Prompt("triage", TRIAGE_TEXT, model="gpt-4.1", params={"temperature": 0.2})
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("model_desk.app",))
'''
assert V2 != V1 and TRIAGE_SWITCHED != V1


@dataclass(frozen=True)
class Deploy:
    parked_db: Path  # md-1 pending in recv, recorded under v1
    resumed_db: Path  # the same run recovered by DBOS under v2 and completed
    parked: Path  # its history before the deploy
    resumed: Path  # its history after it
    resume_effects: list[str]


def project(root: Path, prompts: str) -> Path:
    shutil.copytree(HERE / "model_desk", root / "model_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "model_desk/prompts.py").write_text(prompts)
    (root / "model_desk/replay.py").write_text(REPLAY_CONFIG)
    return root


def run_recorder(root: Path, system_db: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [sys.executable, str(RECORDER), str(system_db), str(root / "effects.log"), *flags],
        capture_output=True, text=True, timeout=180, cwd=root,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def import_run(system_db: Path, out: Path) -> Path:
    result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> Deploy:
    before = project(tmp_path_factory.mktemp("model-desk-v1"), V1)
    parked_db = before / "system.sqlite3"
    run_recorder(before, parked_db)
    after = project(tmp_path_factory.mktemp("model-desk-v2"), V2)
    resumed_db = after / "system.sqlite3"
    shutil.copy(parked_db, resumed_db)
    run = run_recorder(after, resumed_db, "--resume")  # DBOS recovery, in a new process, with the code at v2
    outcome = json.loads(run.stdout.splitlines()[-1])
    assert outcome["output"]["queue"] == "billing", outcome
    effects = (after / "effects.log").read_text().splitlines()
    return Deploy(
        parked_db, resumed_db, import_run(parked_db, before / "histories"), import_run(resumed_db, after / "histories"),
        effects,
    )


def replay(root: Path, histories: Path, prompts: str, *options: str, app_edits: tuple[tuple[str, str], ...] = ()) -> dict:
    """``replaytest replay`` of md-1 in a fresh process, against ``prompts`` as the prompts module (and the
    app with ``app_edits`` made)."""
    project(root, prompts)
    app = (root / "model_desk/app.py").read_text()
    for old, new in app_edits:
        assert app.count(old) == 1, old
        app = app.replace(old, new)
    (root / "model_desk/app.py").write_text(app)
    shutil.copytree(histories, root / "histories")
    environment = {**os.environ, "MODEL_DESK_EFFECTS": str(root / "replay-effects.log")}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "--format", "json", "-w", "model_desk.replay:CONFIG", *options, "histories"],
        capture_output=True, text=True, timeout=180, cwd=root, env=environment,
    )
    assert not (root / "replay-effects.log").exists(), "replay ran a step body"
    assert run.stdout, run.stderr
    [result] = json.loads(run.stdout)["results"]
    return result


def line_of(text: str) -> int:
    lines = [number for number, line in enumerate((HERE / "model_desk/app.py").read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, lines
    return lines[0]


def side_table(system_db: Path) -> dict[int, dict]:
    with sqlite3.connect(system_db) as db:
        rows = db.execute("SELECT workflow_uuid, function_id, name, prompt FROM replaytest_prompt_calls ORDER BY function_id").fetchall()
    assert {row[0] for row in rows} == {"md-1"}
    return {function_id: json.loads(prompt) for _, function_id, _, prompt in rows}


def test_each_step_records_the_version_it_used_across_the_deploy(deploy: Deploy) -> None:
    assert deploy.resume_effects == ["reply gpt-4.1"]  # only the second call ran after the deploy, on v2
    assert side_table(deploy.parked_db) == {1: TRIAGE_V1.record()}
    # The completed triage step was not run again on recovery: its row is still the one written under v1.
    assert side_table(deploy.resumed_db) == {1: TRIAGE_V1.record(), 4: REPLY_V2.record()}
    events = json.loads((deploy.resumed / "md-1.json").read_text())["events"]
    assert [(event["function_id"], event["name"], event.get("prompt")) for event in events] == [
        (1, "call_model", {"name": "triage", "version": TRIAGE_V1.full_version, "params": {"temperature": 0.2}}),
        (2, "DBOS.recv", None),
        (3, "DBOS.sleep", None),
        (4, "write_reply", {"name": "reply", "version": REPLY_V2.full_version, "params": {"temperature": 0.7}}),
    ]


def test_the_resumed_run_replays_green_against_the_code_it_ran(tmp_path: Path, deploy: Deploy) -> None:
    result = replay(tmp_path, deploy.resumed, V2)
    assert result["status"] == "passed", result
    # No false "already called reply ... started under v1": the step recorded that it used v2.
    assert result["warnings"] == []
    assert result["prompt_changes"] == []
    assert NO_CALL_VERSIONS_NOTE not in result["notes"]


def test_a_rollback_is_drift_at_the_call_that_used_v2(tmp_path: Path, deploy: Deploy) -> None:
    result = replay(tmp_path / "warn", deploy.resumed, V1)
    assert result["status"] == "passed"  # a completed run warns by default
    [warning] = result["warnings"]
    assert (warning["kind"], warning["position"]) == ("prompt-drift", 4)
    assert warning["message"] == (
        f"step 'write_reply' now uses prompt version {short_version(REPLY_V1.full_version)} but the history recorded "
        f"{short_version(REPLY_V2.full_version)} (prompt reply: model gpt-4.1 → gpt-4o-mini)"
    )
    assert warning["source"]["line"] == line_of("reply = write_reply(")
    assert NO_CALL_VERSIONS_NOTE not in result["notes"]
    assert result["prompt_changes"] == [
        {"prompt": "reply", "started": REPLY_V2.full_version, "current": REPLY_V1.full_version, "called": True, "compared": "call"}
    ]
    failed = replay(tmp_path / "fail", deploy.resumed, V1, "--prompts", "fail")
    assert failed["status"] == "diverged"
    assert failed["divergence"]["kind"] == "prompt-drift"
    assert "(prompt reply: model gpt-4.1 → gpt-4o-mini)" in failed["divergence"]["message"]


def test_the_parked_run_replays_green_against_the_code_it_was_recorded_with(tmp_path: Path, deploy: Deploy) -> None:
    result = replay(tmp_path, deploy.parked, V1)
    assert (result["status"], result["warnings"], result["prompt_changes"]) == ("passed", [], [])
    assert NO_CALL_VERSIONS_NOTE not in result["notes"]


def test_the_parked_run_fails_on_the_model_switch_it_has_not_reached(tmp_path: Path, deploy: Deploy) -> None:
    result = replay(tmp_path, deploy.parked, V2)
    assert result["status"] == "diverged"
    assert result["divergence"]["kind"] == "prompt-drift"
    assert result["divergence"]["message"] == (
        "the parked run has not reached these prompts yet (it resumes at DBOS.recv, waiting for a message; its history "
        f"ends at function id 3): will use reply {short_version(REPLY_V2.full_version)}, "
        f"started under {short_version(REPLY_V1.full_version)} (model gpt-4o-mini → gpt-4.1) (fails by prompts-pending)"
    )


def test_the_parked_run_names_the_parameters_of_a_prompt_it_has_not_reached(tmp_path: Path, deploy: Deploy) -> None:
    """The start manifest keeps the parameters' digest only: the message names the current ones."""
    warmer = V1.replace(REPLY_V1_MODEL, 'model="gpt-4o-mini", params={"temperature": 0.9}')
    result = replay(tmp_path, deploy.parked, warmer)
    assert result["status"] == "diverged"
    message = result["divergence"]["message"]
    assert "(parameters now temperature 0.9; the run recorded only their digest " in message, message
    assert "parameters changed" not in message


@pytest.mark.parametrize("policy", ["fail", "warn"])
def test_a_parked_run_that_already_used_a_changed_prompt_follows_the_prompts_policy(
    tmp_path: Path, deploy: Deploy, policy: str
) -> None:
    result = replay(tmp_path, deploy.parked, TRIAGE_SWITCHED, "--prompts", policy)
    message = (
        f"step 'call_model' now uses prompt version {short_version(TRIAGE_V2.full_version)} but the history recorded "
        f"{short_version(TRIAGE_V1.full_version)} (prompt triage: model gpt-4o-mini → gpt-4.1)"
    )
    if policy == "fail":
        assert result["status"] == "diverged"
        divergence = result["divergence"]
        assert (divergence["kind"], divergence["position"]) == ("prompt-drift", 1)
        lead = "step 'call_model' "
        assert divergence["message"].startswith(lead + "at function id 1 " + message[len(lead):] + " (this parked run keeps the result of step 'call_model'")
        assert "resumes at DBOS.recv (waiting for a message); the prompts it uses after that: reply" in divergence["message"]
        assert divergence["source"]["line"] == line_of("queue = call_model(")
    else:
        assert result["status"] == "passed"
        [warning] = result["warnings"]
        assert warning["message"] == message


def test_a_run_recorded_before_per_call_versions_falls_back_to_its_manifest_and_says_so(tmp_path: Path, deploy: Deploy) -> None:
    old_db = tmp_path / "old.sqlite3"
    shutil.copy(deploy.resumed_db, old_db)
    with sqlite3.connect(old_db) as db:
        db.execute("DROP TABLE replaytest_prompt_calls")
    histories = import_run(old_db, tmp_path / "histories")
    assert all("prompt" not in event for event in json.loads((histories / "md-1.json").read_text())["events"])
    for name, prompts in (("v2", V2), ("rollback", V1)):
        result = replay(tmp_path / name, histories, prompts)
        assert result["status"] == "passed", result
        assert NO_CALL_VERSIONS_NOTE in result["notes"], name
    # Against v2 the version is inferred from the manifest (v1), and the warning says where it came from.
    [warning] = replay(tmp_path / "v2-again", histories, V2)["warnings"]
    assert warning["message"].startswith("step 'write_reply' already called prompt reply: the run started under")
    assert "(from the run's start manifest; this run recorded no prompt version per call)" in warning["message"]


def test_recording_does_not_change_the_run(tmp_path: Path) -> None:
    """The same run completed with and without per-call recording: DBOS's own rows are the same."""
    rows = {}
    for name, flags in (("on", ()), ("off", ("--no-prompt-calls",))):
        root = project(tmp_path / name, V1)
        system_db = root / "system.sqlite3"
        run_recorder(root, system_db, "--complete", *flags)
        with sqlite3.connect(system_db) as db:
            rows[name] = db.execute(
                "SELECT function_id, function_name, output, error, child_workflow_id FROM operation_outputs "
                "WHERE workflow_uuid = 'md-1' ORDER BY function_id"
            ).fetchall()
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert ("replaytest_prompt_calls" in tables) == (name == "on")
    assert [row[:2] for row in rows["on"]] == [(1, "call_model"), (2, "DBOS.recv"), (3, "DBOS.sleep"), (4, "write_reply")]
    # Sleep rows hold their wake-up time: every other column is the same with and without recording.
    assert [row if row[1] != "DBOS.sleep" else row[:2] for row in rows["on"]] == [
        row if row[1] != "DBOS.sleep" else row[:2] for row in rows["off"]
    ]


TONE_ADDED = V1 + 'TONE = Prompt("tone", "Be warm and concise.", model="gpt-4o-mini")\n'
TONE_IN_TRIAGE = (
    ("from model_desk.prompts import REPLY, TRIAGE", "from model_desk.prompts import REPLY, TONE, TRIAGE"),
    ('effect(f"triage {TRIAGE.model}")', 'effect(f"triage {TRIAGE.model} {TONE.render()}")'),
)


@pytest.mark.parametrize("policy", ["fail", "warn"])
def test_a_prompt_added_to_a_step_the_parked_run_already_ran_is_drift_at_that_step_not_pending(
    tmp_path: Path, deploy: Deploy, policy: str
) -> None:
    """TONE, new since md-1 started, is rendered by ``call_model``, which md-1 already ran and will not run
    again: the recorded call did not use it (drift there, by ``--prompts``), and the parked run will not use
    it (no "has not reached these prompts yet: will use tone"), as LangGraph reports a task that now renders
    a prompt added since."""
    result = replay(tmp_path, deploy.parked, TONE_ADDED, "--prompts", policy, app_edits=TONE_IN_TRIAGE)
    tone = Prompt("tone", "Be warm and concise.", model="gpt-4o-mini")
    expected = (f"step 'call_model' at function id 1 now also uses prompt tone {short_version(tone.full_version)}, "
                "which the recorded call did not use")
    found = [result["divergence"]] if result["divergence"] else result["warnings"]
    assert [(d["kind"], d["position"]) for d in found] == [("prompt-drift", 1)], found
    assert found[0]["message"].replace("step 'call_model' now", "step 'call_model' at function id 1 now").startswith(expected)
    assert result["status"] == ("diverged" if policy == "fail" else "passed")
    assert not [d for d in [result["divergence"], *result["warnings"]] if d and "will use tone" in d["message"]]
    assert result["prompt_changes"] == []
