"""A DBOS workflow that reads ``datetime.now()`` itself: the real DBOS library ran it on SQLite, its runs
were imported, and ``replaytest replay`` replays them in a fresh process against the code as it is and
edited. The clock read is reported and the comparison goes on, so a renamed step is reported too; a step's
undecorated function called directly and a file written by the workflow are stopped at their lines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent
APP = (HERE / "dbos_refunds/app.py").read_text()
REPLAY_CONFIG = '''from replaytest.plugins.dbos.replayer import DBOSReplayConfig

CONFIG = DBOSReplayConfig(modules=("dbos_refunds.app",))
'''


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("dbos-refunds")
    system_db, effects = directory / "system.sqlite3", directory / "effects.log"
    run = subprocess.run(
        [sys.executable, str(HERE / "record_refunds.py"), str(system_db), str(effects)],
        capture_output=True, text=True, timeout=180, cwd=directory,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert effects.read_text().count("email ana@example.com") == 2  # while recording, the steps did run
    out = directory / "histories"
    imported = CliRunner().invoke(
        cli, ["import", "dbos", "--database-url", f"sqlite:///{system_db}", "--name", "refund_order", "--out", str(out)]
    )
    assert imported.exit_code == 0, imported.output
    assert sorted(p.name for p in out.glob("*.json")) == ["refund-1.json", "refund-2.json"]
    return out


def edited(*changes: tuple[str, str]) -> str:
    text = APP
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def line_of(app: str, text: str) -> int:
    [number] = [number for number, line in enumerate(app.splitlines(), 1) if text in line]
    return number


def replay(tmp_path: Path, histories: Path, app: str, *args: str) -> tuple[int, list[dict[str, Any]], Path]:
    """``replaytest replay --format json`` in a fresh process (DBOS keeps one registry per process) in a
    project holding ``app``; asserts that no step body ran (each would have written to the effects file)."""
    root = tmp_path / "project"
    shutil.copytree(HERE / "dbos_refunds", root / "dbos_refunds", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "dbos_refunds/app.py").write_text(app)
    (root / "dbos_refunds/replay.py").write_text(REPLAY_CONFIG)
    environment = {**os.environ, "REFUNDS_EFFECTS": str(root / "effects.log")}
    command = [sys.executable, "-m", "replaytest", "replay", str(histories), "--workflows", "dbos_refunds.replay:CONFIG",
               "--format", "json", *args]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=root, env=environment)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert not (root / "effects.log").exists(), (root / "effects.log").read_text()
    return run.returncode, json.loads(run.stdout)["results"], root


NOW = "    requested_at = datetime.now()"
RENAMED = edited(
    ("def issue_refund(", "def refund_payment("),
    ('    refund = issue_refund(order_id, order["amount"])', '    refund = refund_payment(order_id, order["amount"])'),
)


def clock_hazard(app: str) -> tuple[str, str, int, int]:
    return ("nondeterministic-call", "error", 1, line_of(app, NOW))


def test_unchanged_code_reports_the_clock_hazard_only(tmp_path: Path, histories: Path) -> None:
    code, results, _ = replay(tmp_path, histories, APP)
    assert code == 1
    for result in results:
        assert result["status"] == "diverged"
        assert [(h["kind"], h["severity"], h["position"], h["source"]["line"]) for h in result["hazards"]] == [clock_hazard(APP)]
        assert result["divergence"]["kind"] == "nondeterministic-call"
        assert result["divergence"]["source"]["line"] == line_of(APP, NOW)
        message = result["hazards"][0]["message"]
        assert "datetime.now()" in message and "use a @DBOS.step() function that reads the clock" in message
        assert "breaking change for runs already in flight" in message and "DBOS.patch(" in message


def test_a_renamed_step_is_reported_beside_the_clock_hazard(tmp_path: Path, histories: Path) -> None:
    code, results, _ = replay(tmp_path, histories, RENAMED)
    assert code == 1
    for result in results:
        divergence = result["divergence"]
        assert divergence["kind"] == "command-mismatch"  # the primary divergence: what the change breaks
        assert divergence["position"] == 2
        assert divergence["recorded"]["name"] == "issue_refund" and divergence["issued"]["name"] == "refund_payment"
        assert divergence["source"]["line"] == line_of(RENAMED, "refund = refund_payment(")
        assert [(h["kind"], h["severity"], h["position"], h["source"]["line"]) for h in result["hazards"]] == [clock_hazard(RENAMED)]


def test_under_warn_unchanged_code_passes_with_the_hazard_as_a_warning(tmp_path: Path, histories: Path) -> None:
    code, results, _ = replay(tmp_path, histories, APP, "--hazards", "warn")
    assert code == 0
    for result in results:
        assert result["status"] == "passed" and result["divergence"] is None
        assert [(w["kind"], w["severity"]) for w in result["warnings"]] == [("nondeterministic-call", "warning")]
        assert [h["severity"] for h in result["hazards"]] == ["warning"]


def test_the_policy_is_read_from_the_project_settings(tmp_path: Path, histories: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project/pyproject.toml").write_text('[tool.replaytest.replay]\nhazards = "warn"\n')
    code, results, _ = replay(tmp_path, histories, RENAMED)
    assert code == 1  # the renamed step still fails; the clock read is a warning
    assert [(r["divergence"]["kind"], [h["severity"] for h in r["hazards"]]) for r in results] == [
        ("command-mismatch", ["warning"]),
        ("command-mismatch", ["warning"]),
    ]


CALLS_BODY = edited(
    ('    email_customer(order["email"], f"refund', '    email_customer.__wrapped__(order["email"], f"refund'),
)
WRITES_FILE = edited(
    ('    order = look_up_order(order_id)\n', '    order = look_up_order(order_id)\n    open("audit.txt", "w").write(order_id)\n'),
)


@pytest.mark.parametrize(
    ("app", "line", "message"),
    [
        pytest.param(CALLS_BODY, "email_customer.__wrapped__(", "stopped the step body dbos_refunds.app.email_customer()", id="step-body"),
        pytest.param(WRITES_FILE, 'open("audit.txt", "w")', "stopped open()", id="file-write"),
    ],
)
def test_effects_in_the_workflow_are_stopped_at_their_line(
    tmp_path: Path, histories: Path, app: str, line: str, message: str
) -> None:
    code, results, root = replay(tmp_path, histories, app)
    assert code == 1
    assert not (root / "audit.txt").exists()
    for result in results:
        divergence = result["divergence"]
        assert divergence["kind"] == "nondeterministic-call" and divergence["message"].startswith(message)
        assert divergence["source"]["line"] == line_of(app, line)
        # The clock read before it is reported too; the effect ended the run.
        assert [h["source"]["line"] for h in result["hazards"]] == [line_of(app, NOW), line_of(app, line)]
