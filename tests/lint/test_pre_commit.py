"""The pre-commit hook: ``.pre-commit-hooks.yaml`` declares ``replaytest-lint``, and running it for real
with ``pre-commit try-repo`` (which builds the hook's own environment from this checkout) fails on a
replay-unsafe workflow and passes once it is fixed.

``try-repo`` clones the committed HEAD of this repository plus its tracked, uncommitted changes, so the
slow test exercises what is (about to be) committed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, CLOCK_WORKFLOW_LINE

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_hook_manifest_declares_replaytest_lint() -> None:
    from pre_commit.clientlib import load_manifest

    hooks = {hook["id"]: hook for hook in load_manifest(str(REPO_ROOT / ".pre-commit-hooks.yaml"))}
    hook = hooks["replaytest-lint"]
    assert hook["language"] == "python"
    assert hook["entry"] == "replaytest lint"
    assert hook["types"] == ["python"]
    assert hook["require_serial"] is False


def _git(*args: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_try_repo_fails_on_violation_and_passes_when_fixed(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
        NO_COLOR="1",
    )
    project = tmp_path / "user-project"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    workflow_file = project / "app" / "wf.py"
    workflow_file.write_text(CLOCK_WORKFLOW, encoding="utf-8")
    _git("init", "-q", cwd=project, env=env)
    _git("add", ".", cwd=project, env=env)
    _git("commit", "-q", "-m", "workflow", cwd=project, env=env)

    command = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO_ROOT), "replaytest-lint", "--all-files"]
    failing = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=1200)
    output = failing.stdout + failing.stderr
    assert failing.returncode == 1, output
    assert f"app/wf.py:{CLOCK_WORKFLOW_LINE}:" in output, output

    workflow_file.write_text(
        CLOCK_WORKFLOW.replace("from datetime import datetime\n", "").replace("datetime.now()", "workflow.now()"),
        encoding="utf-8",
    )
    _git("commit", "-q", "-am", "fix", cwd=project, env=env)
    passing = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=1200)
    assert passing.returncode == 0, passing.stdout + passing.stderr
