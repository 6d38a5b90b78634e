"""DBOS's own recovery judges a clock read whose value only fills log lines: the desk's workflow
(``log_only_desk/app.py``) logs ``datetime.now()`` between two steps. A first process crashes inside the
second step; a second process launches DBOS on the same system database, which recovers the run. The
recovered run logs another time, yet records the same steps with the same outputs and returns the same
result as a run that never crashed, and the recorded first step is not run again: nothing DBOS records or
compares depends on the logged value. So lint does not report the read on DBOS (RT101, ``Effect.log_only``),
while a read that also reaches a step stays reported (``tests/lint/test_lint_log_only_reads.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "run_log_only_desk.py"
APP = HERE / "log_only_desk" / "app.py"


def run_desk(directory: Path, mode: str, crash: bool = False) -> tuple[dict, list[str]]:
    """(the run's result and recorded steps, the times it logged) of one process of the desk."""
    environment = {key: value for key, value in os.environ.items() if key != "LOG_ONLY_CRASH"}
    if crash:
        environment["LOG_ONLY_CRASH"] = "1"
    run = subprocess.run([sys.executable, str(RUNNER), str(directory / "system.sqlite3"), str(directory / "effects.log"), mode],
                         capture_output=True, text=True, timeout=180, cwd=directory, env=environment)
    assert run.returncode == 0, run.stdout + run.stderr
    logged = [line.split(" ", 1)[1] for line in run.stdout.splitlines() if line.startswith("LOGGED ")]
    results = [json.loads(line.split(" ", 1)[1]) for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    return (results[0] if results else {}), logged


def test_dbos_recovery_runs_the_same_steps_to_the_same_result_with_another_time_logged(tmp_path: Path) -> None:
    reference_dir, crashed_dir = tmp_path / "reference", tmp_path / "crashed"
    reference_dir.mkdir()
    crashed_dir.mkdir()
    reference, _ = run_desk(reference_dir, "start")

    crashed, first_logged = run_desk(crashed_dir, "start", crash=True)
    assert crashed == {}  # the process died inside ship, before printing a result
    recovered, recovery_logged = run_desk(crashed_dir, "recover")

    assert len(first_logged) == len(recovery_logged) == 1
    assert first_logged != recovery_logged  # the recovery logged another time ...
    assert recovered == reference  # ... and recorded the same steps, with the same outputs, and the same result
    assert recovered == {"result": "shipped parcel-1",
                         "steps": [[1, "fetch", "parcel-1"], [2, "ship", "shipped parcel-1"]]}
    # The recorded fetch was not run again; the step that crashed ran again, as DBOS runs unfinished steps.
    assert (crashed_dir / "effects.log").read_text().splitlines() == ["fetch 1", "ship parcel-1", "ship parcel-1"]


def test_lint_does_not_report_the_read_on_dbos_and_does_once_it_reaches_a_step(tmp_path: Path) -> None:
    def lint(source: str) -> list[dict]:
        project = tmp_path / f"project{len(list(tmp_path.iterdir()))}"
        project.mkdir()
        (project / "pyproject.toml").write_text("[tool.replaytest]\n")
        (project / "app.py").write_text(source)
        run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                             cwd=project, capture_output=True, text=True, timeout=120)
        assert run.returncode in (0, 1), run.stdout + run.stderr
        return json.loads(run.stdout)["diagnostics"]

    source = APP.read_text()
    assert lint(source) == []
    reaches_step = source.replace("return ship(parcel)", "return ship(f\"{parcel} {packed_at:%H}\")")
    [finding] = lint(reaches_step)
    assert (finding["rule"], finding["line"]) == ("RT101", 37)
