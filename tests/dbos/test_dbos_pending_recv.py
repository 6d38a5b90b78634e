"""A refund run recorded for real on SQLite and left PENDING in ``DBOS.recv`` (its history has function
ids 1, 2 and the recv's timeout ``DBOS.sleep`` at 4; the recv's own row, id 3, is written only when a
message arrives). Changed code is replayed against that history, and the run is then resumed by DBOS
itself under the same code, on a copy of the system database, so each test states what DBOS really does:
an operation put before the recv is run for real and the run then fails, so replay must fail too; one put
after the recv is where the run goes on, so replay passes."""

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

HERE = Path(__file__).resolve().parent
APP = (HERE / "refund_desk/app.py").read_text()
RECORDER = HERE / "record_refund_desk.py"
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("refund_desk.app",))
'''

FRAUD_STEP = '''@DBOS.step()
def fraud_score(order_id: str) -> float:
    effect(f"fraud score {order_id}")
    return 0.1


@DBOS.step()
def issue_refund('''

STEP_BEFORE_RECV = (
    ("@DBOS.step()\ndef issue_refund(", FRAUD_STEP),
    (
        "    order = lookup_order(order_id)\n",
        "    order = lookup_order(order_id)\n"
        "    if fraud_score(order_id) > 0.8:\n"
        '        return {"order_id": order_id, "intent": "fraud"}\n',
    ),
)
AUTO_APPROVE_SMALL = (
    (
        "    order = lookup_order(order_id)\n",
        "    order = lookup_order(order_id)\n"
        '    if order["amount"] < 25:\n'
        '        refund = issue_refund(order_id, order["amount"])\n'
        '        send_email(order["email"], f"refund {refund} is on its way")\n'
        '        return {"order_id": order_id, "intent": intent, "refund": refund}\n',
    ),
)
STEP_AFTER_RECV = (
    ("@DBOS.step()\ndef issue_refund(", FRAUD_STEP),
    (
        '    refund = issue_refund(order_id, order["amount"])\n',
        "    fraud_score(order_id)\n"
        '    refund = issue_refund(order_id, order["amount"])\n',
    ),
)


@dataclass(frozen=True)
class Recording:
    system_db: Path
    histories: Path


@pytest.fixture(scope="module")
def pending(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    directory = tmp_path_factory.mktemp("refund-desk")
    shutil.copytree(HERE / "refund_desk", directory / "refund_desk", ignore=shutil.ignore_patterns("__pycache__"))
    system_db = directory / "system.sqlite3"
    run = subprocess.run(
        [sys.executable, str(RECORDER), str(system_db), str(directory / "effects.log")],
        capture_output=True, text=True, timeout=180, cwd=directory,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (directory / "effects.log").read_text().splitlines() == [
        "classify Please refund my order, the kettle arrived broken",
        "lookup 7",
    ]
    histories = directory / "histories"
    result = CliRunner().invoke(
        cli,
        ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--name", "handle_refund_request", "--out", str(histories)],
    )
    assert result.exit_code == 0, result.output
    return Recording(system_db, histories)


def edited(changes: tuple[tuple[str, str], ...]) -> str:
    text = APP
    for old, new in changes:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in refund_desk/app.py"
        text = text.replace(old, new)
    return text


def project(root: Path, recording: Recording, app: str) -> Path:
    shutil.copytree(HERE / "refund_desk", root / "refund_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "refund_desk/app.py").write_text(app)
    (root / "refund_desk/replay.py").write_text(REPLAY_CONFIG)
    shutil.copytree(recording.histories, root / "histories")
    return root


def replay(root: Path) -> tuple[int, dict]:
    """``replaytest replay`` in a fresh process (DBOS keeps one registry per process)."""
    environment = {**os.environ, "REFUND_DESK_EFFECTS": str(root / "replay-effects.log")}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", "--format", "json", "-w", "refund_desk.replay:CONFIG", "histories"],
        capture_output=True, text=True, timeout=180, cwd=root, env=environment,
    )
    assert not (root / "replay-effects.log").exists(), "replay ran a step body"
    [result] = json.loads(run.stdout)["results"]
    return run.returncode, result


def resume(root: Path, recording: Recording) -> tuple[dict, list[str]]:
    """DBOS recovers the pending run under the project's code on a copy of the system database, and the
    approval is sent: how the run ended, and the step bodies that really ran."""
    system_db = root / "resumed.sqlite3"
    shutil.copy(recording.system_db, system_db)
    run = subprocess.run(
        [sys.executable, str(RECORDER), str(system_db), str(root / "resume-effects.log"), "--resume"],
        capture_output=True, text=True, timeout=180, cwd=root,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    effects = root / "resume-effects.log"
    return json.loads(run.stdout.splitlines()[-1]), effects.read_text().splitlines() if effects.exists() else []


def line_of(app: str, text: str) -> int:
    numbers = [number for number, line in enumerate(app.splitlines(), 1) if text in line]
    assert len(numbers) == 1, f"{text!r} is on lines {numbers}"
    return numbers[0]


def test_the_history_holds_the_recv_timeout_sleep_but_not_the_recv(pending: Recording) -> None:
    document = json.loads((pending.histories / "refund-7.json").read_text())
    assert document["status"] == "running"
    assert [(event["function_id"], event["name"]) for event in document["events"]] == [
        (1, "classify"), (2, "lookup_order"), (4, "DBOS.sleep"),
    ]


def test_unchanged_code_passes_and_dbos_finishes_the_run(pending: Recording, tmp_path: Path) -> None:
    root = project(tmp_path, pending, APP)
    code, result = replay(root)
    assert (code, result["status"]) == (0, "passed"), result
    outcome, effects = resume(root, pending)
    assert outcome == {"output": {"order_id": "7", "intent": "refund", "refund": "rf_7"}}
    assert effects == ["refund 7 18.0", "email lena@example.com: refund rf_7 is on its way"]


def test_a_step_inserted_before_the_recv_fails_where_dbos_would_run_it_and_then_fail(
    pending: Recording, tmp_path: Path
) -> None:
    app = edited(STEP_BEFORE_RECV)
    root = project(tmp_path, pending, app)
    code, result = replay(root)
    assert (code, result["status"]) == (1, "diverged"), result
    divergence = result["divergence"]
    assert (divergence["kind"], divergence["position"]) == ("extra-command", 3)
    assert divergence["source"] == {"path": "refund_desk/app.py", "line": line_of(app, "if fraud_score(order_id)"), "function": "handle_refund_request"}
    assert divergence["issued"]["name"] == "fraud_score"
    assert divergence["recorded"] == {"kind": "timer", "name": "DBOS.sleep", "position": 4}
    assert "before timer 'DBOS.sleep' recorded at function id 4" in divergence["message"]
    assert "DBOS recovery would run 'fraud_score' for real and then fail with DBOSUnexpectedStepError" in divergence["message"]

    outcome, effects = resume(root, pending)
    assert outcome["error"] == "DBOSUnexpectedStepError"
    assert "step 4, function DBOS.sleep was recorded when DBOS.recv was expected" in outcome["message"]
    assert effects == ["fraud score 7"]  # the new step ran for real before the failure


def test_a_branch_that_refunds_before_the_recv_fails_at_the_refund(pending: Recording, tmp_path: Path) -> None:
    app = edited(AUTO_APPROVE_SMALL)
    root = project(tmp_path, pending, app)
    code, result = replay(root)
    assert (code, result["status"]) == (1, "diverged"), result
    divergence = result["divergence"]
    assert (divergence["kind"], divergence["position"]) == ("extra-command", 3)
    assert divergence["source"]["line"] == line_of(app, "        refund = issue_refund(order_id")
    assert divergence["issued"]["name"] == "issue_refund"
    assert "DBOS recovery would run 'issue_refund' for real" in divergence["message"]

    outcome, effects = resume(root, pending)
    assert outcome["error"] == "DBOSUnexpectedStepError"
    assert "step 4, function DBOS.sleep was recorded when send_email was expected" in outcome["message"]
    assert effects == ["refund 7 18.0"]  # the money went out, then the run failed


def test_a_step_inserted_after_the_recv_passes_and_dbos_runs_it_when_the_run_goes_on(
    pending: Recording, tmp_path: Path
) -> None:
    root = project(tmp_path, pending, edited(STEP_AFTER_RECV))
    code, result = replay(root)
    assert (code, result["status"]) == (0, "passed"), result
    outcome, effects = resume(root, pending)
    assert outcome == {"output": {"order_id": "7", "intent": "refund", "refund": "rf_7"}}
    assert effects == ["fraud score 7", "refund 7 18.0", "email lena@example.com: refund rf_7 is on its way"]


# The step before the recv under a version guard two ways: only the new step wrapped (the patch check then
# stands at function id 3, where the pending run recorded nothing), and the check moved before the recorded
# ``lookup_order`` with the span from there through the new step wrapped, as the divergence now advises.
NEW_STEP_ALONE_GUARDED = (
    ("@DBOS.step()\ndef issue_refund(", FRAUD_STEP),
    (
        "    order = lookup_order(order_id)\n",
        "    order = lookup_order(order_id)\n"
        '    if DBOS.patch("refund-fraud-score"):\n'
        "        if fraud_score(order_id) > 0.8:\n"
        '            return {"order_id": order_id, "intent": "fraud"}\n',
    ),
)
GUARDED_FROM_A_RECORDED_OPERATION = (
    ("@DBOS.step()\ndef issue_refund(", FRAUD_STEP),
    (
        "    order = lookup_order(order_id)\n",
        '    if DBOS.patch("refund-fraud-score"):\n'
        "        order = lookup_order(order_id)\n"
        "        if fraud_score(order_id) > 0.8:\n"
        '            return {"order_id": order_id, "intent": "fraud"}\n'
        "    else:\n"
        "        order = lookup_order(order_id)\n",
    ),
)


def test_the_guard_advice_for_a_step_before_the_recv_is_the_one_dbos_recovery_accepts(
    pending: Recording, tmp_path: Path
) -> None:
    code, result = replay(project(tmp_path / "changed", pending, edited(STEP_BEFORE_RECV)))
    assert code == 1, result
    message = result["divergence"]["message"]
    # Not "put the change under DBOS.patch": that check would find nothing recorded at id 3 either.
    assert "check put right there finds nothing recorded at function id 3 either, so DBOS answers it True" in message
    assert "put the check before an operation the run has already recorded (function id 2, step 'lookup_order', or earlier)" in message

    alone = project(tmp_path / "alone", pending, edited(NEW_STEP_ALONE_GUARDED))
    outcome, effects = resume(alone, pending)
    # DBOS answered the check True and wrote its marker at id 3, so the new step meets the recorded sleep.
    assert outcome["error"] == "DBOSUnexpectedStepError", outcome
    assert "step 4, function DBOS.sleep was recorded when fraud_score was expected" in outcome["message"]
    assert effects == []

    advised = project(tmp_path / "advised", pending, edited(GUARDED_FROM_A_RECORDED_OPERATION))
    code, result = replay(advised)
    assert (code, result["status"]) == (0, "passed"), result
    outcome, effects = resume(advised, pending)
    assert outcome == {"output": {"order_id": "7", "intent": "refund", "refund": "rf_7"}}
    assert effects == ["refund 7 18.0", "email lena@example.com: refund rf_7 is on its way"]  # the old path
