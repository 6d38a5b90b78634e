"""A fresh id whose only use is to name a child workflow: DBOS records a child started from a workflow under the
parent's operation number with the child's id, and on recovery returns the recorded child without using the id
given this time. ``child_id_desk`` starts children under fresh UUIDs in every form (``DBOS.start_workflow``,
``DBOS.enqueue_workflow``, ``queue.enqueue`` and their async versions; the id made in place, held by a local, or made
by a helper and handed to a helper that enqueues under it). It is run for real on SQLite and left PENDING after
each child finished, then recovered by DBOS itself: each parent ends with exactly one child, the recorded one, and
no child runs again. That is why ``replaytest lint`` does not report these ids (RT103), and still does as soon as
the id is used for anything else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "record_child_id_desk.py"
PARENTS = ("start_under_fresh_id", "enqueue_under_local_id", "queue_enqueue_under_fresh_id", "enqueue_through_helpers",
           "start_async_under_fresh_id", "enqueue_async_under_fresh_id", "queue_enqueue_async_under_fresh_id")
APP = (HERE / "child_id_desk" / "app.py").read_text()


def _desk(root: Path, app: str = APP) -> Path:
    shutil.copytree(HERE / "child_id_desk", root / "child_id_desk", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "child_id_desk" / "app.py").write_text(app)
    return root


def _run(root: Path, *arguments: str) -> dict:
    run = subprocess.run([sys.executable, str(RECORDER), *arguments], capture_output=True, text=True, timeout=180, cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = _desk(tmp_path_factory.mktemp("child-id-desk"))
    children = _run(root, "system.sqlite3", "effects.log")
    assert sorted((root / "effects.log").read_text().splitlines()) == [f"work {name}" for name in "abcdefg"]
    return root, children


def test_each_parent_recorded_one_child_under_a_fresh_id(recorded: tuple[Path, dict]) -> None:
    _, children = recorded
    assert sorted(children) == sorted(PARENTS)
    assert all(len(ids) == 1 for ids in children.values()), children
    assert children["enqueue_through_helpers"][0].startswith("d:force:")


def test_recovery_returns_the_recorded_child_whatever_fresh_id_the_rerun_makes(recorded: tuple[Path, dict], tmp_path: Path) -> None:
    root, before = recorded
    shutil.copy(root / "system.sqlite3", tmp_path / "resumed.sqlite3")
    _desk(tmp_path)
    after = _run(tmp_path, "resumed.sqlite3", "resume-effects.log", "--resume")
    for parent in PARENTS:
        outcome = after[parent]
        assert outcome["recovery_attempts"] >= 2, outcome  # DBOS really ran the parent again, from its top
        assert outcome["children"] == before[parent], parent  # exactly one child: the recorded one
        assert outcome["output"][0] == before[parent][0], parent  # the handle the rerun got is the recorded child's
    assert not (tmp_path / "resume-effects.log").exists(), "a child ran again"


def _lint(root: Path) -> list[tuple[int, str]]:
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "child_id_desk"],
                         capture_output=True, text=True, timeout=120, cwd=root, env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return sorted((d["line"], d["rule"]) for d in json.loads(run.stdout)["diagnostics"])


def _line(app: str, text: str) -> int:
    numbers = [number for number, line in enumerate(app.splitlines(), 1) if text in line]
    assert len(numbers) == 1, (text, numbers)
    return numbers[0]


def test_lint_does_not_report_fresh_ids_that_only_name_a_child(tmp_path: Path) -> None:
    assert _lint(_desk(tmp_path)) == []


@pytest.mark.parametrize(("old", "new", "reported_at"), [
    pytest.param("        handle = DBOS.enqueue_workflow(CHILDREN, child, name)\n    return finish(handle)",
                 "        handle = DBOS.enqueue_workflow(CHILDREN, child, name)\n    work(child_id)\n    return finish(handle)",
                 'child_id = f"{name}-{uuid.uuid4()}"', id="local-also-passed-to-a-step"),
    pytest.param("    return finish(handle)\n\n\n@DBOS.workflow()\ndef queue_enqueue_under_fresh_id",
                 "    return [child_id, *finish(handle)]\n\n\n@DBOS.workflow()\ndef queue_enqueue_under_fresh_id",
                 'child_id = f"{name}-{uuid.uuid4()}"', id="local-also-returned"),
    pytest.param('    child_id = f"{name}-{uuid.uuid4()}"\n',
                 '    child_id = f"{name}-{uuid.uuid4()}"\n    DBOS.set_event("noted", (lambda: child_id)())\n',
                 'child_id = f"{name}-{uuid.uuid4()}"', id="local-read-in-a-lambda"),
    pytest.param('    child_id = f"{name}-{uuid.uuid4()}"\n',
                 '    def note() -> str:\n        return work(child_id)\n\n    child_id = f"{name}-{uuid.uuid4()}"\n    note()\n',
                 'child_id = f"{name}-{uuid.uuid4()}"', id="local-read-by-a-function-defined-before"),
    pytest.param('    child_id = f"{name}-{uuid.uuid4()}"\n    with SetWorkflowID(child_id):\n'
                 '        handle = DBOS.enqueue_workflow(CHILDREN, child, name)\n',
                 '    handle = None\n    for _ in range(2):\n        if handle is not None:\n            work(child_id)\n'
                 '        child_id = f"{name}-{uuid.uuid4()}"\n        with SetWorkflowID(child_id):\n'
                 '            handle = DBOS.enqueue_workflow(CHILDREN, child, name)\n',
                 'child_id = f"{name}-{uuid.uuid4()}"', id="local-read-before-its-assignment-in-a-loop"),
    pytest.param("    with SetWorkflowID(uuid.uuid4().hex):\n        handle = queue.enqueue(child, name)",
                 "    with SetWorkflowID(uuid.uuid4().hex):\n        work(name)\n        handle = queue.enqueue(child, name)",
                 "with SetWorkflowID(uuid.uuid4().hex):", id="scope-runs-more-than-the-child-start"),
    pytest.param("    if key is not None:\n        with SetWorkflowID(key):",
                 "    if key is not None:\n        DBOS.logger.info(key)\n        with SetWorkflowID(key):",
                 "return finish(enqueue_child(name, key=run_key(name, force=force)))", id="helper-parameter-also-logged"),
    pytest.param("    return f\"{name}:force:{uuid.uuid4()}\"",
                 "    key = f\"{name}:force:{uuid.uuid4()}\"\n    work(key)\n    return key",
                 "return finish(enqueue_child(name, key=run_key(name, force=force)))", id="helper-value-also-used"),
])
def test_lint_reports_a_fresh_id_used_for_anything_else(tmp_path: Path, old: str, new: str, reported_at: str) -> None:
    assert APP.count(old) == 1, old
    app = APP.replace(old, new)
    assert _lint(_desk(tmp_path, app)) == [(_line(app, reported_at), "RT103")]
