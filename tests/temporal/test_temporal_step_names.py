"""RT105 against the real engine: an activity named with a value that differs between runs is reported by
lint at the naming argument, and temporalio's own Replayer fails the recorded history at that activity, the
recorded name (``say``) against the one the code computed now."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import temporal_wf_step_names as named

from replaytest.replay.report import render_text

MODULE = Path(named.__file__)
NAMING_LINE = next(n for n, text in enumerate(MODULE.read_text().splitlines(), 1) if 'f"say-{id(object())}"' in text)


def test_lint_reports_the_name_that_differs_between_runs(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.replaytest]\n")
    (project / "app" / "__init__.py").write_text("")
    (project / "app" / "wf.py").write_text(MODULE.read_text())
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=project, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    [finding] = json.loads(run.stdout)["diagnostics"]
    assert (finding["rule"], finding["line"]) == ("RT105", NAMING_LINE)
    assert finding["message"].startswith('f"say-{id(object())}" names the activity with a value that differs '
                                         "between runs (id())")


def test_the_replayer_fails_the_recorded_history_at_that_activity(replay) -> None:
    result = replay("hello_timer_history.json", named.HelloNamedPerRun)
    assert result.status == "diverged", render_text(result)
    divergence = result.divergence
    assert divergence.kind == "command-mismatch"
    assert (divergence.recorded.kind, divergence.recorded.name) == ("activity", "say")
    assert divergence.issued.kind == "activity" and divergence.issued.name.startswith("say-")
    assert divergence.source is not None and divergence.source.line == NAMING_LINE
