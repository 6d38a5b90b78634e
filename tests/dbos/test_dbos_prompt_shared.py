"""Per-call prompt versions on the real DBOS engine when one prompt is used by several steps and one step
uses several prompts: the model desk with a ``tone`` prompt rendered by both model steps and a reply step
that renders ``reply``, ``tone`` and ``signature``. ``md-1`` is recorded under v1 twice: parked in
``DBOS.recv`` after its first step, and completed. Both are imported and replayed, in fresh processes,
against edits of the prompts; no step body may run during replay."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.prompts import Prompt, short_version

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_model_desk.py"
APP = '''"""The model desk with a shared tone: both model steps render it; the reply step renders three prompts."""

from __future__ import annotations

import os

from dbos import DBOS

from model_desk.prompts import REPLY, SIGNATURE, TONE, TRIAGE
from replaytest.plugins.dbos.prompts import use_prompt


def effect(what: str) -> None:
    with open(os.environ.get("MODEL_DESK_EFFECTS", "model-desk-effects.log"), "a", encoding="utf-8") as journal:
        journal.write(what + "\\n")


@DBOS.step()
def call_model(prompt_text: str) -> str:
    text = prompt_text + TONE.render()
    effect(f"triage {text}")
    return "billing" if "invoice" in text else "other"


@DBOS.step()
def write_reply(summary: str) -> str:
    text = REPLY.render(summary=summary) + TONE.render() + SIGNATURE.render()
    effect(f"reply {text}")
    return text


@DBOS.workflow()
def support_agent(ticket: str) -> dict:
    with use_prompt(TRIAGE):
        queue = call_model(TRIAGE.render(ticket=ticket))
    review = DBOS.recv("review", timeout_seconds=600)
    reply = write_reply(f"{queue}: {review}")
    return {"queue": queue, "reply": reply}
'''
TRIAGE_TEXT = "Sort this ticket into billing, shipping or other: {ticket}"
REPLY_TEXT = "Write a friendly reply to the customer, given: {summary}"
TONE_TEXT = " Be warm and concise."
SIGNATURE_TEXT = " Sign off as the Acme support team."
V1 = f'''from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", {TRIAGE_TEXT!r}, model="gpt-4o-mini", params={{"temperature": 0.2}})
REPLY = Prompt("reply", {REPLY_TEXT!r}, model="gpt-4o-mini", params={{"temperature": 0.7}})
TONE = Prompt("tone", {TONE_TEXT!r}, model="gpt-4o-mini", params={{"temperature": 0.2}})
SIGNATURE = Prompt("signature", {SIGNATURE_TEXT!r})
'''
TONE_V1_MODEL = 'TONE = Prompt("tone", {!r}, model="gpt-4o-mini", params={{"temperature": 0.2}})'.format(TONE_TEXT)
TONE_HOT = V1.replace(TONE_V1_MODEL, TONE_V1_MODEL.replace("0.2", "0.9"))  # the deploy: tone at temperature 0.9
REPLY_SWITCHED = V1.replace('model="gpt-4o-mini", params={"temperature": 0.7}', 'model="gpt-4.1", params={"temperature": 0.7}')
BOTH = TONE_HOT.replace('model="gpt-4o-mini", params={"temperature": 0.7}', 'model="gpt-4.1", params={"temperature": 0.7}')
TRIAGE_REWORDED = V1.replace(TRIAGE_TEXT, "Classify this ticket: {ticket}")
TONE_V1 = Prompt("tone", TONE_TEXT, model="gpt-4o-mini", params={"temperature": 0.2})
TONE_V2 = Prompt("tone", TONE_TEXT, model="gpt-4o-mini", params={"temperature": 0.9})
REPLY_V1 = Prompt("reply", REPLY_TEXT, model="gpt-4o-mini", params={"temperature": 0.7})
REPLY_V2 = Prompt("reply", REPLY_TEXT, model="gpt-4.1", params={"temperature": 0.7})
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("model_desk.app",))
'''
PYPROJECT = '''[tool.replaytest.replay]
paths = ["histories"]
workflows = ["model_desk.replay:CONFIG"]
'''
RESUME_POINT = "(it resumes at DBOS.recv, waiting for a message; its history ends at function id 3)"
assert len({V1, TONE_HOT, REPLY_SWITCHED, BOTH, TRIAGE_REWORDED}) == 5


@dataclass(frozen=True)
class Recorded:
    parked: Path  # md-1 pending in recv after call_model, under v1
    done: Path  # md-1 completed under v1


def project(root: Path, prompts: str) -> Path:
    shutil.copytree(HERE / "model_desk", root / "model_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "model_desk/app.py").write_text(APP)
    (root / "model_desk/prompts.py").write_text(prompts)
    (root / "model_desk/replay.py").write_text(REPLAY_CONFIG)
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def record(root: Path, *flags: str) -> Path:
    system_db = root / "system.sqlite3"
    run = subprocess.run(
        [sys.executable, str(RECORDER), str(system_db), str(root / "effects.log"), *flags],
        capture_output=True, text=True, timeout=180, cwd=root,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out", str(root / "histories")])
    assert result.exit_code == 0, result.output
    return root / "histories"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    parked = record(project(tmp_path_factory.mktemp("shared-tone-parked"), V1))
    done = record(project(tmp_path_factory.mktemp("shared-tone-done"), V1), "--complete")
    return Recorded(parked, done)


def run_cli(root: Path, histories: Path, prompts: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``replaytest ARGUMENTS`` in a fresh process, in a project whose prompts module is ``prompts``."""
    project(root, prompts)
    shutil.copytree(histories, root / "histories")
    environment = {**os.environ, "MODEL_DESK_EFFECTS": str(root / "replay-effects.log")}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", *arguments], capture_output=True, text=True, timeout=180, cwd=root,
        env=environment,
    )
    assert not (root / "replay-effects.log").exists(), "replay ran a step body"
    assert run.stdout, run.stderr
    return run


def replay(root: Path, histories: Path, prompts: str, *options: str) -> dict:
    run = run_cli(root, histories, prompts, "replay", "--format", "json", *options, "histories")
    [result] = json.loads(run.stdout)["results"]
    return result


def test_the_recorded_steps_carry_every_prompt_they_used(recorded: Recorded) -> None:
    events = json.loads((recorded.done / "md-1.json").read_text())["events"]
    [reply_step] = [event for event in events if event["name"] == "write_reply"]
    assert [prompt["name"] for prompt in reply_step["prompts"]] == ["reply", "signature", "tone"]
    [triage_step] = [event for event in events if event["name"] == "call_model"]
    assert {prompt["name"] for prompt in triage_step["prompts"]} == {"triage", "tone"}


def test_a_prompt_a_done_step_used_that_a_pending_step_uses_again_is_pending_drift(tmp_path: Path, recorded: Recorded) -> None:
    """Finding 1: tone, rendered by call_model (recorded) and by write_reply (after the recv), changed."""
    result = replay(tmp_path / "warn", recorded.parked, TONE_HOT, "--prompts", "warn")
    assert result["status"] == "diverged"  # prompts-pending = fail: write_reply will use tone at 0.9
    assert result["run_status"] == "parked"
    divergence = result["divergence"]
    assert divergence["kind"] == "prompt-drift"
    assert divergence["position"] is None  # reported at the resume point, where no event is recorded
    assert divergence["message"] == (
        f"the parked run has not reached these prompts yet {RESUME_POINT}: will use tone "
        f"{short_version(TONE_V2.full_version)} again, used under {short_version(TONE_V1.full_version)} by a "
        "recorded step (temperature 0.2 → 0.9) (fails by prompts-pending)"
    )
    assert divergence["source"]["function"] == "write_reply"  # the step that will use it, not call_model
    [warning] = result["warnings"]  # the recorded call_model used tone at 0.2: compared at its call
    assert (warning["position"], warning["message"]) == (1, (
        f"step 'call_model' now uses prompt version {short_version(TONE_V2.full_version)} but the history recorded "
        f"{short_version(TONE_V1.full_version)} (prompt tone: temperature 0.2 → 0.9)"
    ))
    # Under fail the run keeps call_model's result; the hint names every prompt it uses after resuming.
    failed = replay(tmp_path / "fail", recorded.parked, TONE_HOT)
    message = failed["divergence"]["message"]
    assert message.startswith("step 'call_model' at function id 1 now uses prompt version")
    assert "resumes at DBOS.recv (waiting for a message); the prompts it uses after that: " in message
    assert f"tone {short_version(TONE_V2.full_version)} (used by a recorded step too)" in message
    assert f"reply {short_version(REPLY_V1.full_version)}" in message
    assert "signal 'DBOS.recv'" not in message and "(function id 1)" not in message


def test_a_prompt_only_recorded_steps_used_stays_out_of_the_pending_check(tmp_path: Path, recorded: Recorded) -> None:
    result = replay(tmp_path, recorded.parked, TRIAGE_REWORDED, "--prompts", "warn")
    assert result["status"] == "passed", result["divergence"]
    [warning] = result["warnings"]
    assert warning["position"] == 1 and "(prompt triage)" in warning["message"]


def test_every_changed_prompt_of_a_step_is_reported(tmp_path: Path, recorded: Recorded) -> None:
    """Finding 2: write_reply recorded reply, signature and tone; reply's model and tone's temperature changed."""
    result = replay(tmp_path / "warn", recorded.done, BOTH)
    assert result["status"] == "passed"
    by_position = {warning["position"]: warning["message"] for warning in result["warnings"]}
    assert by_position[4] == (
        f"step 'write_reply' now uses prompt version {short_version(REPLY_V2.full_version)} but the history recorded "
        f"{short_version(REPLY_V1.full_version)} (prompt reply: model gpt-4o-mini → gpt-4.1); also prompt tone: now "
        f"{short_version(TONE_V2.full_version)}, recorded {short_version(TONE_V1.full_version)} (temperature 0.2 → 0.9)"
    )
    failed = replay(tmp_path / "fail", recorded.done, BOTH, "--prompts", "fail")
    assert failed["divergence"]["position"] == 1  # call_model's tone comes first
    rollback = replay(tmp_path / "rollback", recorded.done, REPLY_SWITCHED)  # tone as recorded: only reply
    assert [w["message"] for w in rollback["warnings"] if w["position"] == 4] == [
        f"step 'write_reply' now uses prompt version {short_version(REPLY_V2.full_version)} but the history recorded "
        f"{short_version(REPLY_V1.full_version)} (prompt reply: model gpt-4o-mini → gpt-4.1)"
    ]


def test_the_report_shows_the_prompt_the_drift_is_about_by_name(tmp_path: Path, recorded: Recorded) -> None:
    """Findings 3 and 4: tone (not reply, the step's first recorded prompt) in the table, with its name;
    the temperature named from the recorded and the current parameters."""
    result = replay(tmp_path / "json", recorded.done, TONE_HOT, "--details")
    warning = next(w for w in result["warnings"] if w["position"] == 4)
    assert "(prompt tone: temperature 0.2 → 0.9)" in warning["message"]
    assert "parameters changed" not in warning["message"]
    assert warning["recorded"]["prompt_version"] == TONE_V1.full_version
    assert warning["recorded"]["detail"]["prompt"] == "tone"
    assert warning["issued"]["detail"]["prompt"] == "tone"
    [row] = [view for view in warning["recorded_context"] if view["position"] == 4]
    assert (row["prompt_version"], row["detail"]["prompt"]) == (TONE_V1.full_version, "tone")
    text = run_cli(tmp_path / "text", recorded.done, TONE_HOT, "replay", "--details", "histories").stdout
    assert f"> #4 step 'write_reply' prompt tone {TONE_V1.full_version[:19]}" in text


def test_pending_drift_is_at_the_resume_point_alike_in_replay_check_and_impact(tmp_path: Path, recorded: Recorded) -> None:
    """Finding 5: no event number past the end of the history, and the same words everywhere."""
    replayed = replay(tmp_path / "replay", recorded.parked, REPLY_SWITCHED)
    divergence = replayed["divergence"]
    assert divergence["position"] is None and RESUME_POINT in divergence["message"]
    text = run_cli(tmp_path / "text", recorded.parked, REPLY_SWITCHED, "replay", "histories").stdout
    assert f"  prompt-drift: the parked run has not reached these prompts yet {RESUME_POINT}" in text
    assert "at event #" not in text
    assert "in-flight run (parked)" in text and "in-flight runs that break: 1 (1 parked)" in text
    check = run_cli(tmp_path / "check", recorded.parked, REPLY_SWITCHED, "check").stdout
    assert "at event #" not in check
    impact = json.loads(run_cli(tmp_path / "impact", recorded.parked, REPLY_SWITCHED, "impact", "--format", "json").stdout)
    [workflow] = impact["workflows"]
    [group] = workflow["groups"]
    assert group["position"] is None
    assert RESUME_POINT in group["message"]
    assert group["message"] == divergence["message"]
    impact_text = run_cli(tmp_path / "impact-text", recorded.parked, REPLY_SWITCHED, "impact").stdout
    assert "at event #" not in impact_text and RESUME_POINT in impact_text
