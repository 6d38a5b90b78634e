"""The cache folder cannot be turned against the project: a ``cache-dir`` that is the project root, a folder
above it, or a folder of the user's is refused (exit 2) and nothing is written into it; a cache entry copied
over another file's key is a miss, so the copied-over file's finding is still reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, run_replaytest

CLEAN_WORKFLOW = CLOCK_WORKFLOW.replace("datetime.now()", "workflow.now()")


def _tree(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*")}


@pytest.mark.parametrize(
    ("cache_dir", "problem"),
    [
        (".", "'.' is the project root"),
        ("./", "'./' is the project root"),
        ("..", "'..' is a folder above the project root"),
        ("app/..", "'app/..' is the project root"),
    ],
)
def test_a_cache_dir_holding_the_project_is_refused_and_nothing_is_written(make_project, cache_dir, problem) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW}, pyproject=f'[tool.replaytest]\ncache-dir = "{cache_dir}"\n')
    before_project, before_parent = _tree(project), set(p.name for p in project.parent.iterdir())
    run = run_replaytest("lint", ".", cwd=project)
    assert run.returncode == 2, run.describe()
    assert "cache-dir" in run.stderr and problem in run.stderr, run.stderr
    assert "the cache needs a folder of its own" in run.stderr
    # Neither the markers (a .gitignore of "*" would hide every new file from git) nor a cache appeared.
    assert _tree(project) == before_project
    assert set(p.name for p in project.parent.iterdir()) == before_parent


def test_a_cache_dir_that_is_a_folder_of_the_users_is_refused(make_project) -> None:
    project = make_project(
        {"app/wf.py": CLOCK_WORKFLOW, "build/notes.txt": "mine\n", "build/setup.cfg": "[x]\n"},
        pyproject='[tool.replaytest]\ncache-dir = "build"\n',
    )
    before = _tree(project)
    run = run_replaytest("lint", ".", cwd=project)
    assert run.returncode == 2, run.describe()
    assert "[tool.replaytest] cache-dir: 'build'" in run.stderr
    assert "already holds files that are not replaytest's (notes.txt, setup.cfg)" in run.stderr
    assert _tree(project) == before, "no marker may be written into a folder replaytest did not make"
    # --no-cache does not touch the folder at all, so it runs.
    assert run_replaytest("lint", "--no-cache", ".", cwd=project).returncode == 1


def test_a_new_or_empty_cache_folder_is_taken_with_its_markers_and_kept(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "cache/.keep-me-out": ""},
                           pyproject='[tool.replaytest]\ncache-dir = "fresh/cache"\n')
    (project / "cache" / ".keep-me-out").unlink()  # an empty folder the user made
    assert run_replaytest("lint", ".", cwd=project).returncode == 1
    made = project / "fresh" / "cache"
    assert (made / ".gitignore").read_text() == "*\n"
    assert (made / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (made / "lint").is_dir()
    # Only the folder replaytest made is marked: the folder above it stays visible to git.
    assert not (project / "fresh" / ".gitignore").exists()
    # The next run finds its own folder (non-empty now) and uses it.
    assert run_replaytest("lint", ".", cwd=project).returncode == 1

    (project / "pyproject.toml").write_text('[tool.replaytest]\ncache-dir = "cache"\n')
    assert run_replaytest("lint", ".", cwd=project).returncode == 1
    assert (project / "cache" / ".gitignore").read_text() == "*\n"


def test_a_cache_folder_made_by_an_earlier_release_is_still_replaytests(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    old = project / ".replaytest_cache"
    (old / "lint").mkdir(parents=True)
    (old / "README").write_text("Created by replaytest lint. Safe to delete.\n")
    (old / ".gitignore").write_text("*\n")
    run = run_replaytest("lint", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    assert (old / "CACHEDIR.TAG").exists(), "a missing marker of replaytest's own folder is written again"


def test_check_refuses_the_same_folder(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "docs/index.md": "# docs\n"},
                           pyproject='[tool.replaytest]\ncache-dir = "docs"\n')
    run = run_replaytest("check", ".", cwd=project)
    assert run.returncode == 2, run.describe()
    assert "already holds files that are not replaytest's (index.md)" in run.stderr
    assert not (project / "docs" / ".gitignore").exists()


def test_an_entry_copied_over_another_files_key_is_a_miss(make_project) -> None:
    project = make_project({"app/clean.py": CLEAN_WORKFLOW, "app/dirty.py": CLOCK_WORKFLOW})
    first = run_replaytest("lint", "--format", "json", ".", cwd=project)
    assert first.returncode == 1 and '"app/dirty.py"' in first.stdout, first.describe()
    entries = sorted(path for path in (project / ".replaytest_cache" / "lint").rglob("*.json"))
    assert len(entries) == 2, entries
    clean_entry = next(path for path in entries if "clean.py" in path.read_text())
    dirty_entry = next(path for path in entries if path != clean_entry)
    shutil.copyfile(clean_entry, dirty_entry)  # the clean file's summary under the dirty file's key
    (project / ".replaytest_cache" / "lint" / "pack.txt").unlink()  # read the entry files (the pack: test_engine_runtime)

    again = run_replaytest("lint", "--format", "json", ".", cwd=project)
    assert again.returncode == 1, again.describe()
    assert again.stdout == first.stdout, "the poisoned entry hid the finding"
    assert "app/clean.py" not in dirty_entry.read_text(), "the recomputed summary was not written back"


# Eight processes take the same fresh folder at once, 600 times over (what pytest-xdist workers do on a
# first run). Writing the README in place let a second process read it empty and refuse the folder.
_CLAIM_RACE = """
import multiprocessing, sys, tempfile
from pathlib import Path
from replaytest import cachedir

def claim_every_folder(base, rounds, barrier, refusals):
    for round_number in range(rounds):
        barrier.wait()
        try:
            cachedir.claim(Path(base) / f"cache-{round_number}")
        except cachedir.CacheDirError as error:
            (Path(refusals) / f"{round_number}-{multiprocessing.current_process().pid}").write_text(str(error))

if __name__ == "__main__":
    base, refusals = sys.argv[1], sys.argv[2]
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(8)
    workers = [context.Process(target=claim_every_folder, args=(base, 600, barrier, refusals)) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    sys.exit(max(worker.exitcode for worker in workers))
"""


def test_processes_taking_one_new_cache_folder_at_once_never_refuse_it(tmp_path) -> None:
    import subprocess
    import sys

    from replaytest import cachedir

    script, base, refusals = tmp_path / "race.py", tmp_path / "caches", tmp_path / "refusals"
    script.write_text(_CLAIM_RACE)
    base.mkdir()
    refusals.mkdir()
    run = subprocess.run([sys.executable, str(script), str(base), str(refusals)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert [path.read_text() for path in refusals.iterdir()] == []
    for folder in base.iterdir():
        # Every folder ends whole: the three markers, complete, and no temporary marker left behind.
        assert sorted(path.name for path in folder.iterdir()) == sorted(cachedir.MARKERS)
        assert cachedir.is_replaytest_folder(folder)
