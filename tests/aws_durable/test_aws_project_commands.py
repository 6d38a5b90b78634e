"""AWS durable histories in the project-level commands: ``replaytest check`` (lint and replay as one gate,
with ``--coverage``), ``replaytest impact`` and the pytest plugin take them as any other engine's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from aws_kit import APP_SOURCE

CONFIG = """\
[tool.replaytest.replay]
paths = ["histories"]
workflows = ["orders_app:FUNCTIONS"]

[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["orders_app:FUNCTIONS"]
"""


def _project(imported, folder: Path, rename: bool = False) -> Path:  # type: ignore[no-untyped-def]
    folder.mkdir()
    source = APP_SOURCE.read_text(encoding="utf-8")
    if rename:
        source = source.replace("def price_order(", "def quote_order(").replace("price_order(stock)", "quote_order(stock)")
    (folder / "orders_app.py").write_text(source, encoding="utf-8")
    shutil.copytree(imported.histories, folder / "histories")
    (folder / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    return folder


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "ORDERS_MARKER"}
    env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_check_passes_the_unchanged_handler_and_fails_a_renamed_step(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    green = _project(imported, tmp_path / "green")
    done = _run(green, "-m", "replaytest", "check", "--no-cache", "--coverage", "--format", "json", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [r["status"] for r in report["replay"]["results"]] == ["passed"] * 3
    red = _project(imported, tmp_path / "red", rename=True)
    done = _run(red, "-m", "replaytest", "check", "--no-cache", ".")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "command-mismatch" in done.stdout and "'quote_order'" in done.stdout


def test_the_pytest_plugin_replays_each_history_as_a_test(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    green = _project(imported, tmp_path / "green")
    done = _run(green, "-m", "pytest", "-q", "-p", "no:cacheprovider", "histories")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "replayed 3 histories: 3 passed, 0 diverged, 0 stale" in done.stdout
    red = _project(imported, tmp_path / "red", rename=True)
    done = _run(red, "-m", "pytest", "-q", "-p", "no:cacheprovider", "histories")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 failed" in done.stdout  # every order, the parked one too, went past the renamed step


def test_impact_groups_the_break_and_says_what_keeps_executions_on_the_old_code(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = _project(imported, tmp_path / "project")
    git = ["git", "-c", "user.email=tests@example.invalid", "-c", "user.name=tests"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    app = project / "orders_app.py"
    app.write_text(app.read_text(encoding="utf-8").replace("def price_order(", "def quote_order(")
                   .replace("price_order(stock)", "quote_order(stock)"), encoding="utf-8")
    done = _run(project, "-m", "replaytest", "impact", "--base", "HEAD", "--output-format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    (impact,) = json.loads(done.stdout)["workflows"]
    assert (impact["type"], impact["engine"]) == ("orders", "aws_durable")
    (group,) = impact["groups"]
    line = next(n for n, text in enumerate(app.read_text().splitlines(), 1) if "price = context.step(quote_order(stock))" in text)
    assert (group["kind"], group["issued"]["name"], group["line"]) == ("command-mismatch", "quote_order", line)
    runs = group["runs"]
    assert len(runs["in_flight"]) == 1 and len(runs["finished"]) == 2  # the parked order too went past it
    assert "no patch API" in impact["guidance"] and "qualified ARN" in impact["guidance"]
    assert f"in-flight executions that need it: {runs['in_flight'][0]}" in impact["guidance"]
