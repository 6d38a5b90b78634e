"""What every deploy-impact scenario kit shares: the ``ScenarioKit`` a recorded scenario hands to its
tests (project folder, the v1 commit, history files, run ids split in-flight/finished, the changed
versions of the code), the temporary git repository holding v1, and running ``replaytest`` on the
project in a fresh process (each engine keeps per-process registries, and every change is a real edit
of the source that a new process must read)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# A fixed identity so the commit needs no user configuration on the machine running the suite.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Kit Recorder", "GIT_AUTHOR_EMAIL": "kit@example.com",
    "GIT_COMMITTER_NAME": "Kit Recorder", "GIT_COMMITTER_EMAIL": "kit@example.com",
}


def edit_once(source: str, old: str, new: str) -> str:
    """``source`` with ``old`` replaced by ``new``; ``old`` must occur exactly once (a change to v1 that
    silently matched nothing, or twice, would test another change than its name says)."""
    assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times"
    return source.replace(old, new)


def git(root: Path, *args: str) -> str:
    environment = {**os.environ, **GIT_IDENTITY}
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60, env=environment)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout.strip()


def commit_everything(root: Path, message: str) -> str:
    """Make ``root`` a git repository (on first use) holding every file in it; the new commit's hash."""
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@dataclass(frozen=True)
class ScenarioKit:
    """One recorded scenario, copied into a test's own folder.

    ``root`` is the project (its pyproject holds ``[tool.replaytest.replay]`` paths and workflows), a git
    repository whose commit ``base`` is v1 of the code, the code the histories were recorded with.
    ``code_file`` is the workflow module (relative to ``root``) that ``switch`` rewrites; ``changes`` maps a
    change's name to the whole changed source. ``in_flight`` and ``finished`` are the recorded runs' ids;
    ``history_files`` maps each run id to its history file."""

    engine: str
    workflow_type: str
    root: Path
    code_file: str
    base: str
    v1: str
    changes: Mapping[str, str]
    in_flight: tuple[str, ...]
    finished: tuple[str, ...]
    history_files: Mapping[str, Path] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # what one engine's kit adds (server address, …)

    @property
    def histories(self) -> Path:
        return self.root / "histories"

    @property
    def run_ids(self) -> tuple[str, ...]:
        return self.in_flight + self.finished

    def switch(self, change: str | None) -> str:
        """Write change ``change`` (None: v1) into the working tree; the source now there."""
        source = self.v1 if change is None else self.changes[change]
        (self.root / self.code_file).write_text(source, encoding="utf-8")
        # The edits rewrite one file within seconds, sometimes at the same size: bytecode cached by mtime
        # and size could run the previous version.
        shutil.rmtree((self.root / self.code_file).parent / "__pycache__", ignore_errors=True)
        return source

    def line_of(self, text: str, change: str | None = None) -> int:
        """The 1-based line of the change's source (None: v1) holding ``text``, which must occur once."""
        source = self.v1 if change is None else self.changes[change]
        numbers = [number for number, line in enumerate(source.splitlines(), 1) if text in line]
        assert len(numbers) == 1, f"{text!r} is on lines {numbers}"
        return numbers[0]

    def copied_to(self, folder: Path) -> ScenarioKit:
        """This kit with its project (git repository included) copied below ``folder``."""
        root = folder / self.root.name
        shutil.copytree(self.root, root, ignore=shutil.ignore_patterns("__pycache__", ".venv"), symlinks=True)
        files = {run: root / path.relative_to(self.root) for run, path in self.history_files.items()}
        return replace(self, root=root, history_files=files)


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child ``replaytest``/recorder: no pytest or coverage variables of this run,
    no bytecode written (the edited module must be read afresh)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    environment.update(extra or {})
    return environment


def run_replaytest(root: Path, *args: str, environment: Mapping[str, str] | None = None,
                   timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replaytest", *args],
        cwd=root, capture_output=True, text=True, timeout=timeout, env=clean_environment(environment),
    )


def replay_json(kit: ScenarioKit, environment: Mapping[str, str] | None = None) -> tuple[int, dict[str, dict]]:
    """``replaytest replay --format json`` of the configured histories against the code in the working
    tree: the exit code and each result by its run id."""
    done = run_replaytest(kit.root, "replay", "--format", "json", environment=environment)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document = json.loads(done.stdout)
    results = {result["workflow"]["id"]: result for result in document["results"]}
    assert sorted(results) == sorted(kit.run_ids), document
    return done.returncode, results


def divergence_facts(result: dict) -> tuple[str, int, str | None, str, int] | None:
    """(kind, position, recorded name, source file name, source line) of a diverged result; None if it passed."""
    if result["status"] == "passed":
        return None
    assert result["status"] == "diverged", result
    found = result["divergence"]
    recorded = found["recorded"]["name"] if found["recorded"] else None
    source = found["source"]
    return found["kind"], found["position"], recorded, Path(source["path"]).name, source["line"]


def impact_json(kit: ScenarioKit, *args: str, environment: Mapping[str, str] | None = None) -> tuple[int, dict, dict]:
    """``replaytest impact --output-format json`` on the configured histories and the code in the working
    tree: the exit code, the whole document and the entry of the kit's workflow type."""
    done = run_replaytest(kit.root, "impact", "--output-format", "json", *args, environment=environment)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    document = json.loads(done.stdout)
    [workflow] = [entry for entry in document["workflows"] if entry["type"] == kit.workflow_type]
    return done.returncode, document, workflow


def predicted_resume(workflow: Mapping[str, Any], run: str) -> str:
    """What ``replaytest impact`` (its JSON ``workflow`` entry) predicts for in-flight ``run`` when it resumes:
    ``breaks`` (a divergence group holds it, or the engine refused its rehearsed resume), ``new`` (the engine
    issues the change next, or answers its guard True), ``old`` (any other resume the engine accepted), or
    ``unrehearsed``."""
    for group in workflow["groups"]:
        if run in group["runs"]["in_flight"]:
            return "breaks"
    for entry in workflow.get("resume", []):
        if run in entry["runs"]:
            return entry["path"] if entry["path"] in ("new", "breaks", "unrehearsed") else "old"
    raise AssertionError(f"impact says nothing of {run}: {workflow}")


def predicted_sleep(document: Mapping[str, Any], workflow: Mapping[str, Any], run: str) -> str:
    """What ``replaytest impact`` says of ``run`` when a timer's duration changed: ``recorded`` (a note names it as
    already sleeping on the timer: it keeps the recorded duration), ``new`` (its rehearsal reaches the timer
    next: it sleeps the new duration), else ``none``."""
    for note in document["summary"]["notes"]:
        if "; already sleeping on it: " in note and run in note.rsplit("; already sleeping on it: ", 1)[1].split(", "):
            return "recorded"
    for entry in workflow.get("resume", []):
        if run in entry["runs"] and re.search(r"the engine issues timer '[^']+' next", entry["text"]):
            return "new"
    return "none"
