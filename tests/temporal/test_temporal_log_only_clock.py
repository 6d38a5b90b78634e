"""A clock read whose value only fills a log line stays an RT101 finding on Temporal, because the engine
rejects it: temporalio's own ``Replayer`` runs the recorded ``Hello`` history against the workflow with that
one line added, and its sandbox fails the workflow task with ``RestrictedWorkflowAccessError`` at the read.
Lint says the same, in words that name the sandbox (``FrameworkProfile.log_only_words``). Other engines
let such a read run (``tests/lint/test_lint_log_only_reads.py``; DBOS's recovery in
``tests/dbos/test_dbos_log_only_clock.py``)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import temporal_wf_logs_clock as logs_clock

HISTORY = Path(__file__).resolve().parent / "histories" / "hello_timer_history.json"


def test_temporal_s_sandbox_rejects_a_clock_read_that_only_fills_a_log_line() -> None:
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    history = WorkflowHistory.from_json("hello-1", HISTORY.read_text(encoding="utf-8"))
    result = asyncio.run(
        Replayer(workflows=[logs_clock.HelloLogsClock]).replay_workflow(history, raise_on_replay_failure=False)
    )
    failure = str(result.replay_failure)
    assert "Cannot access datetime.datetime.now.__call__ from inside a workflow" in failure, failure
    assert 'r#type: "RestrictedWorkflowAccessError"' in failure, failure
    assert 'workflow.logger.info(f\\"greeting {name} at {datetime.now()}\\")' in failure, failure  # the log line


def test_lint_reports_it_and_says_the_sandbox_rejects_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n")
    shutil.copy(logs_clock.__file__, tmp_path / "flows.py")
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    [finding] = json.loads(run.stdout)["diagnostics"]
    assert (finding["rule"], finding["line"]) == ("RT101", 24)
    assert finding["message"] == (
        "datetime.now() reads the wall clock in workflow code, only for a log line, where it does not break "
        "replay but Temporal's workflow sandbox rejects it at run time; use workflow.now()"
    )
