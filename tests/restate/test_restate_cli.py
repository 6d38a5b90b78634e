"""The faces on Restate histories: ``replaytest replay`` prints the notes for what Restate does not store,
``replaytest impact`` groups the runs a change breaks, and the import command refuses a bad admin URL."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from restate_kit import HERE, ORDERS_SOURCE, Recording

_TIMEOUT = 120


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT)


def test_replay_summary_notes_what_restate_does_not_store(recording: Recording) -> None:
    completed = run(["replay", str(recording.histories), "--workflows", "restate_shop.orders:orders", "--workflows", "restate_shop.orders:ledger",
                     "--workflows", "restate_shop.orders:signup"], HERE)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    output = completed.stdout + completed.stderr
    assert "Restate journals store no ctx.run arguments" in output
    assert "no prompt versions recorded" in output
    assert output.count("Restate journals store no ctx.run arguments") == 1  # once, for all histories


def test_impact_groups_the_runs_a_renamed_step_breaks(recording: Recording, tmp_path: Path) -> None:
    source = ORDERS_SOURCE.read_text()
    (tmp_path / "orders_now.py").write_text(source.replace('ctx.run_typed("charge"', 'ctx.run_typed("bill"'))
    histories = tmp_path / "histories"
    shutil.copytree(recording.histories, histories)
    completed = run(["impact", str(histories), "--workflows", "orders_now:orders", "--workflows", "orders_now:ledger", "--workflows", "orders_now:signup", "-q"], tmp_path)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    assert "orders/place (restate): 1 divergence point" in output
    assert "command-mismatch" in output and "step 'bill'" in output
    assert recording.ids["suspended"] in output and recording.ids["completed"] in output


def test_import_refuses_an_admin_url_that_is_no_http_url(tmp_path: Path) -> None:
    completed = run(["import", "restate", "--admin-url", "127.0.0.1:9070", "--out", str(tmp_path / "out")], tmp_path)
    assert completed.returncode == 2
    assert "--admin-url" in completed.stderr and "http://" in completed.stderr


def test_replay_coverage_reports_the_handlers_the_histories_reach(recording: Recording, tmp_path: Path) -> None:
    shutil.copytree(HERE / "restate_shop", tmp_path / "restate_shop", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(recording.histories, tmp_path / "histories")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\n'
        'workflows = ["restate_shop.orders:orders", "restate_shop.orders:ledger", "restate_shop.orders:signup"]\n'
    )
    completed = run(["check", "restate_shop", "--coverage", "-q", "--no-cache"], tmp_path)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    rows = {line.split()[0]: line.split() for line in output.splitlines() if line.strip().startswith(("orders/", "ledger/"))}
    # Both sides of the approval branch were recorded (approved and automatic orders).
    assert rows["orders/place"][1] == "restate_shop.orders.place" and rows["orders/place"][3] == "2/2"
    assert rows["ledger/add"][1] == "restate_shop.orders.add"


def test_the_pytest_plugin_replays_restate_histories_and_fails_the_diverging_one(recording: Recording, tmp_path: Path) -> None:
    source = ORDERS_SOURCE.read_text()
    package = tmp_path / "desk"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "orders.py").write_text(source.replace('if order.get("approval"):', 'if not order.get("approval"):'))
    shutil.copytree(recording.histories, tmp_path / "histories")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_paths = ["histories"]\n'
        'replay_workflows = ["desk.orders:orders", "desk.orders:ledger", "desk.orders:signup"]\n'
    )
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "histories"],
        cwd=tmp_path, capture_output=True, text=True, timeout=_TIMEOUT,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    # The branch change breaks every placed order (approved or not); the others still pass.
    assert "3 failed, 8 passed" in output, output
    for role in ("completed", "approved", "suspended"):
        assert f"FAILED histories/{recording.ids[role]}.json::replay" in output, output
