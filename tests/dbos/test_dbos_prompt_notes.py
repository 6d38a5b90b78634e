"""A DBOS step that calls a model and records no prompt version is named in a note, on a run recorded
for real with per-call records: ``fd-1`` runs three model steps on a LangChain chat model, one rendering a
``Prompt`` of the code, one a ``Prompt.fetched`` from a registry, one a registry text sent as a plain
string. Only the last is unchecked, and the replay says so with its line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.prompts import fetched_ahead_note
from replaytest.replay.engine import UNRECORDED_MODEL_CALL_NOTE, uncompared_prompt_note

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_fetch_desk.py"
APP = (HERE / "fetch_desk/app.py").read_text()
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("fetch_desk.app",))
'''


def project(root: Path, app: str = APP) -> Path:
    shutil.copytree(HERE / "fetch_desk", root / "fetch_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "fetch_desk/app.py").write_text(app)
    (root / "fetch_desk/replay.py").write_text(REPLAY_CONFIG)
    return root


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = project(tmp_path_factory.mktemp("fetch-desk"))
    system_db = root / "system.sqlite3"
    run = subprocess.run([sys.executable, str(RECORDER), str(system_db), str(root / "effects.log")],
                         capture_output=True, text=True, timeout=180, cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (root / "effects.log").read_text().splitlines() == ["triage", "answer", "follow-up", "triage"]
    out = root / "histories"
    result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def replay(root: Path, histories: Path, app: str = APP, run: str = "fd-1") -> dict:
    project(root, app)
    shutil.copytree(histories, root / "histories")
    environment = {**os.environ, "FETCH_DESK_EFFECTS": str(root / "replay-effects.log")}
    run_id = run
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "--format", "json", "-w", "fetch_desk.replay:CONFIG", "histories"],
        capture_output=True, text=True, timeout=180, cwd=root, env=environment,
    )
    assert not (root / "replay-effects.log").exists(), "replay ran a step body"
    assert run.stdout, run.stderr
    [result] = [r for r in json.loads(run.stdout)["results"] if r["workflow"]["id"] == run_id]
    return result


def line_of(text: str) -> int:
    [line] = [number for number, line in enumerate(APP.splitlines(), 1) if text in line]
    return line


def test_the_steps_that_recorded_a_prompt_carry_it(histories: Path) -> None:
    events = json.loads((histories / "fd-1.json").read_text())["events"]
    assert [(event["name"], (event.get("prompt") or {}).get("name")) for event in events] == [
        ("triage", "triage"), ("answer", "answer"), ("follow_up", None),
    ]


def test_a_model_step_with_no_recorded_prompt_is_named_in_a_note(tmp_path: Path, histories: Path) -> None:
    result = replay(tmp_path, histories)
    assert result["status"] == "passed", result
    site = f"MODEL.invoke at app.py:{line_of('return str(MODEL.invoke(text).content)')}"
    expected = UNRECORDED_MODEL_CALL_NOTE.format(what="step 'follow_up' (function id 3)", site=site)
    assert expected in result["notes"]
    # The steps whose prompt was recorded (one of the code, one fetched at run time) get no such note.
    assert [note for note in result["notes"] if "recorded no prompt version:" in note] == [expected]


def test_a_step_that_calls_no_model_gets_no_note(tmp_path: Path, histories: Path) -> None:
    without_model = APP.replace("return str(MODEL.invoke(text).content)", "return text")
    result = replay(tmp_path, histories, without_model)
    assert result["status"] == "passed", result
    assert not [note for note in result["notes"] if "recorded no prompt version:" in note]


def test_a_parked_runs_next_step_that_fetches_its_prompt_is_named_in_a_note(tmp_path: Path, histories: Path) -> None:
    """fd-2 waits in DBOS.recv; its next step renders a prompt fetched at run time: replay cannot know what
    the registry will hold, and says so instead of passing silently."""
    result = replay(tmp_path, histories, run="fd-2")
    assert result["status"] == "passed", result
    line = line_of('prompt = Prompt.fetched("answer"')
    assert fetched_ahead_note("step 'answer'", ("app.py", line), "parked") in result["notes"]
    # The completed run will not run it again: no such note.
    assert not [n for n in replay(tmp_path / "done", histories)["notes"] if "fetched at run time" in n]


def test_a_recorded_step_whose_prompt_is_fetched_at_run_time_is_named_as_not_compared(tmp_path: Path, histories: Path) -> None:
    """fd-1's ``answer`` step recorded the version of the prompt it fetched; the current code fetches it again
    at run time, so there is no current version to compare with: a note says so instead of a silent pass."""
    result = replay(tmp_path, histories)
    assert result["status"] == "passed", result
    [recorded] = [event["prompt"] for event in json.loads((histories / "fd-1.json").read_text())["events"]
                  if event["name"] == "answer"]
    line = line_of('prompt = Prompt.fetched("answer"')
    expected = uncompared_prompt_note("step 'answer' (function id 2)", "step", "answer", recorded["version"], ("app.py", line))
    assert expected in result["notes"]
    assert expected.endswith(f"its code fetches that prompt at run time (Prompt.fetched at app.py:{line}), "
                             "so replay cannot compare it offline")
    # TRIAGE, a Prompt of the code, was compared: no such note for it.
    assert not [note for note in result["notes"] if note.startswith("step 'triage'")]
