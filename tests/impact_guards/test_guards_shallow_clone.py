"""``replaytest impact`` in a shallow clone (``git clone --depth 1``, a CI checkout's default): the base revision
would be HEAD, or is not there at all, and the report says it is a shallow clone and what to do (fetch more
history, or pass --base) instead of comparing the code with itself; after ``git fetch --unshallow`` the guard
is there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from guardkit import ClaimsRepo, git, make_repo
from test_guards_impact_cli import GUARD_DIFF
from test_guards_journal_claims import INSERTED_AFTER_WAIT, _version_2

ADVICE = "this is a shallow clone: fetch more history (git fetch --unshallow) or pass --base REV"


def _impact(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "impact", "--quiet", *args], cwd=root,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def _released_and_changed(tmp_path: Path) -> ClaimsRepo:
    """Version 1 (the histories were recorded with it) and version 2 committed on main, one after the other."""
    repo = make_repo(tmp_path)
    _version_2(repo, INSERTED_AFTER_WAIT)
    git(repo.root, "commit", "-q", "-am", "claims v2: budget check")
    return repo


def _shallow_clone(repo: ClaimsRepo, into: Path, *args: str) -> Path:
    subprocess.run(["git", "clone", "-q", "--depth", "1", *args, f"file://{repo.root}", str(into)], check=True,
                   capture_output=True)
    assert git(into, "rev-parse", "--is-shallow-repository").strip() == "true"
    return into


def test_a_shallow_clone_of_the_default_branch_is_told_to_fetch_more_history(tmp_path: Path) -> None:
    clone = _shallow_clone(_released_and_changed(tmp_path), tmp_path / "checkout")

    shown = _impact(clone, "--diff")
    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert shown.stdout == ""
    assert "the base revision (the merge base of HEAD and origin/main) is HEAD itself" in shown.stderr
    assert "in a shallow clone" in shown.stderr and "fetch more history (git fetch --unshallow) or pass --base REV" \
        in shown.stderr
    assert "is the same as at" not in shown.stderr

    # Without --base, --diff or --fix no guard is a note of the report, as without git (docs/design.md).
    report = _impact(clone)
    assert report.returncode == 1, report.stderr
    [note] = [line for line in report.stdout.splitlines() if line.startswith("note: no version guards:")]
    assert "in a shallow clone" in note and "git fetch --unshallow" in note
    assert "is the same as at" not in report.stdout

    older = _impact(clone, "--base", "HEAD~1", "--diff")
    assert older.returncode == 2
    assert "--base HEAD~1: no such revision" in older.stderr and "shallow clone" in older.stderr

    # Done as told: the revision the runs were recorded with is there, and the guard with it.
    git(clone, "fetch", "-q", "--unshallow")
    fetched = _impact(clone, "--base", "HEAD~1", "--diff")
    assert (fetched.returncode, fetched.stdout) == (1, GUARD_DIFF), fetched.stderr


def test_a_shallow_clone_of_a_feature_branch_is_told_the_same(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    git(repo.root, "checkout", "-q", "-b", "budget-check")
    _version_2(repo, INSERTED_AFTER_WAIT)
    git(repo.root, "commit", "-q", "-am", "claims v2: budget check")
    clone = _shallow_clone(repo, tmp_path / "checkout", "--branch", "budget-check")

    shown = _impact(clone, "--diff")
    assert shown.returncode == 2, shown.stdout + shown.stderr
    # A single-branch clone's origin/HEAD is the branch cloned: the merge base with it is HEAD again.
    assert "(the merge base of HEAD and origin/budget-check) is HEAD itself" in shown.stderr
    assert "in a shallow clone" in shown.stderr and "fetch more history (git fetch --unshallow) or pass --base REV" \
        in shown.stderr


def test_a_shallow_clone_without_a_default_branch_is_told_to_fetch_more_history(tmp_path: Path) -> None:
    repo = _released_and_changed(tmp_path)
    clone = _shallow_clone(repo, tmp_path / "checkout")
    git(clone, "checkout", "-q", "--detach")  # a CI checkout of one commit: no branch, no remote ones
    git(clone, "branch", "-q", "-D", "main")
    git(clone, "remote", "remove", "origin")
    git(clone, "symbolic-ref", "--delete", "refs/remotes/origin/HEAD")  # which removing the remote leaves

    shown = _impact(clone, "--diff")
    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert "no default branch to take the base revision from" in shown.stderr
    assert ADVICE in shown.stderr


def test_a_full_clone_on_the_default_branch_is_not_told_about_shallow_clones(tmp_path: Path) -> None:
    repo = _released_and_changed(tmp_path)
    shown = _impact(repo.root, "--diff")
    # The base is HEAD there too, but the whole history is at hand: the guard notes say why there is none.
    assert shown.returncode == 1, shown.stderr
    assert "shallow" not in shown.stdout + shown.stderr
