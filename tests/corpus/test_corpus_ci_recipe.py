"""The nightly corpus refresh of docs/ci.md, run as written (its ``sh`` block, with bash) in a project
whose committed corpus holds a rare run the day's export no longer has: the refresh keeps it, folds in
the export, prunes to the covering set and commits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_corpus_journal import CONFIG, HERE, _kept_outage, _record

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def _refresh_script() -> str:
    section = DOC.read_text(encoding="utf-8").split("## A nightly corpus refresh", 1)[1]
    (script,) = re.findall(r"```sh\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)
    return script


@pytest.mark.slow
def test_the_nightly_refresh_keeps_the_old_rare_run_folds_in_the_export_and_commits(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    _record(recorded / "histories", recorded)
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(HERE / "triage_agent.py", project / "triage_agent.py")
    (project / "pyproject.toml").write_text(CONFIG)
    # Committed yesterday: the only run of the old outage path. Exported today: everything else.
    (project / "histories").mkdir()
    shutil.copy(recorded / "histories" / "outage-before-paging.json", project / "histories")
    export = project / "production-histories"
    shutil.copytree(recorded / "histories", export, ignore=shutil.ignore_patterns("outage-before-paging.json"))
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("production-histories/\n.replaytest_cache/\n")
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "corpus"], cwd=project, check=True)

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com"}
    run = subprocess.run(["bash", "-c", _refresh_script()], cwd=project, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "corpus of 8 histories" in run.stdout and "deleted 4 dropped histories" in run.stdout
    outage = _kept_outage(recorded / "histories")
    kept = sorted(path.stem for path in (project / "histories").glob("*.json"))
    assert kept == sorted(["outage-before-paging", "outage-waiting", "question-eve", outage])
    committed = subprocess.run(["git", "ls-files", "histories"], cwd=project, capture_output=True, text=True, check=True)
    assert sorted(Path(line).stem for line in committed.stdout.split()) == kept
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True, check=True)
    assert log.stdout.splitlines()[0] == "histories: nightly corpus refresh"
    assert len(list(export.glob("*.json"))) == 7  # the export is never touched
