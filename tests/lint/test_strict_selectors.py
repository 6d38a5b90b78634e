"""Strict selectors and suppressions: an unknown code or category anywhere is exit 2 naming it and its
place; ``# noqa: RTxxx`` works; unused suppressions are RT003; ``--exit-zero``, ``force-exclude``,
``.gitignore``, an ``exclude`` that leaves nothing to check and a folder with nothing to check."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from lintkit import findings, line_of, run_replaytest

WORKFLOW = '''\
"""One clock and one random finding."""
import random
import time

from temporalio import workflow


@workflow.defn
class Mixed:
    @workflow.run
    async def run(self) -> str:
        started = time.time()
        roll = random.random()
        return f"{started} {roll}"
'''
CLOCK = ("app/wf.py", line_of(WORKFLOW, "time.time()"), "clock")
RANDOM = ("app/wf.py", line_of(WORKFLOW, "random.random()"), "random")


def _lint(project, *options: str, target: str = "."):
    return run_replaytest("lint", "--format", "json", "--no-cache", *options, target, cwd=project)


def _exit_2_naming(run, *names: str) -> None:
    output = run.stdout + run.stderr
    assert run.returncode == 2, run.describe()
    assert "Traceback" not in output, run.describe()
    for name in names:
        assert name in output, f"{name!r} not named\n{run.describe()}"


@pytest.mark.parametrize("key", ["select", "ignore"])
def test_unknown_code_in_config_is_exit_2_naming_code_key_and_file(make_project, key: str) -> None:
    # RT999 has the shape of a code, so only knowing the installed rules can refuse it.
    project = make_project({"app/wf.py": WORKFLOW}, pyproject=f'[tool.replaytest]\n{key} = ["RT999"]\n')
    _exit_2_naming(_lint(project), "RT999", f"[tool.replaytest] {key}", "pyproject.toml")


def test_unknown_code_prefix_and_category_in_config(make_project) -> None:
    project = make_project({"app/wf.py": WORKFLOW}, pyproject='[tool.replaytest]\nselect = ["RT9"]\n')
    _exit_2_naming(_lint(project), "RT9", "select")
    project = make_project({"app/wf.py": WORKFLOW}, pyproject='[tool.replaytest]\nignore = ["clocks"]\n', name="p2")
    _exit_2_naming(_lint(project), "clocks", "ignore")


def test_unknown_code_in_per_file_ignores_names_the_glob_key(make_project) -> None:
    project = make_project(
        {"app/wf.py": WORKFLOW}, pyproject='[tool.replaytest.per-file-ignores]\n"app/*" = ["RT777"]\n'
    )
    _exit_2_naming(_lint(project), "RT777", "per-file-ignores.app/*")


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_unknown_code_on_the_command_line_is_exit_2_naming_flag(make_project, flag: str) -> None:
    project = make_project({"app/wf.py": WORKFLOW})
    _exit_2_naming(_lint(project, flag, "RT101,RT999"), "RT999", flag)


def test_known_prefixes_and_categories_still_select(make_project) -> None:
    project = make_project({"app/wf.py": WORKFLOW})
    assert findings(_lint(project, "--select", "RT10").json()) == {CLOCK, RANDOM}
    assert findings(_lint(project, "--select", "clock").json()) == {CLOCK}


@pytest.mark.parametrize("comment", ["# replaytest: ignore[RT999]", "# noqa: RT999", "# replaytest: ignore[clok]"])
def test_unknown_code_in_a_suppression_comment_is_exit_2_naming_file_and_line(make_project, comment: str) -> None:
    source = WORKFLOW.replace("started = time.time()", f"started = time.time()  {comment}")
    project = make_project({"app/wf.py": source})
    run = _lint(project)
    _exit_2_naming(run, f"app/wf.py:{CLOCK[1]}:", comment.split("[")[-1].rstrip("]").split()[-1])
    # The rest of the run is still reported.
    assert RANDOM in findings(run.json())


def test_noqa_with_replaytest_codes_suppresses_like_ruff(make_project) -> None:
    source = (
        WORKFLOW.replace("started = time.time()", "started = time.time()  # noqa: E501, RT101")
        .replace("roll = random.random()", "roll = random.random()  # noqa: E501")
    )
    project = make_project({"app/wf.py": source})
    run = _lint(project)
    # RT101 is suppressed; E501 is another linter's code: neither an error nor a suppression here.
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {RANDOM}


def test_bare_noqa_does_not_suppress_replaytest_findings(make_project) -> None:
    source = WORKFLOW.replace("started = time.time()", "started = time.time()  # noqa")
    project = make_project({"app/wf.py": source})
    assert findings(_lint(project).json()) == {CLOCK, RANDOM}


def test_unused_suppressions_are_reported_as_rt003(make_project) -> None:
    source = (
        WORKFLOW.replace("started = time.time()", "started = time.time()  # noqa: RT101, RT102")
        .replace('return f"{started} {roll}"', 'return f"{started} {roll}"  # replaytest: ignore')
    )
    project = make_project({"app/wf.py": source})
    report = _lint(project).json()
    unused = {(d["line"], d["message"]) for d in report["diagnostics"] if d["rule"] == "RT003"}
    assert unused == {
        (CLOCK[1], "unused suppression: RT102 in `# noqa: RT101, RT102` suppresses nothing here"),
        (line_of(source, "return f"), "unused suppression: `# replaytest: ignore` suppresses nothing here"),
    }
    # A rule that is not selected does not make its suppressions "unused"; RT003 can be ignored like any rule.
    assert not [d for d in _lint(project, "--select", "random").json()["diagnostics"] if d["rule"] == "RT003"]
    assert not [d for d in _lint(project, "--ignore", "RT003").json()["diagnostics"] if d["rule"] == "RT003"]


def test_exit_zero_keeps_the_report_but_exits_0(make_project) -> None:
    project = make_project({"app/wf.py": WORKFLOW})
    run = _lint(project, "--exit-zero")
    assert run.returncode == 0, run.describe()
    assert findings(run.json()) == {CLOCK, RANDOM}
    broken = make_project({"app/wf.py": WORKFLOW, "app/bad.py": "from temporalio import workflow\n@workflow.defn\ndef f(:\n"}, name="broken")
    assert _lint(broken, "--exit-zero").returncode == 2  # a file that could not be checked is never a pass


def test_exclude_that_leaves_nothing_is_exit_2(make_project) -> None:
    project = make_project({"app/wf.py": WORKFLOW}, pyproject='[tool.replaytest]\nexclude = ["*.py"]\n')
    run = _lint(project)
    _exit_2_naming(run, "nothing to check", "app/wf.py")


def test_a_folder_without_python_files_says_nothing_was_checked(make_project) -> None:
    project = make_project({"app/wf.py": WORKFLOW, "docs/notes.md": "# Notes\n"})
    run = run_replaytest("lint", "--no-cache", "docs", cwd=project)
    # As ruff warns: exit 0 (nothing is wrong), but a run that checked nothing says so, not only "passed".
    assert run.returncode == 0, run.describe()
    assert "replaytest: no Python file found under docs; nothing was checked" in run.stderr, run.describe()
    assert "nothing was checked" not in run_replaytest("lint", "--no-cache", "app", cwd=project).stderr


def test_force_exclude_applies_exclude_to_named_files(make_project) -> None:
    project = make_project(
        {"app/wf.py": WORKFLOW, "scripts/wf.py": WORKFLOW}, pyproject='[tool.replaytest]\nexclude = ["scripts/*"]\n'
    )
    # Named explicitly, an excluded file is linted by default ...
    assert _lint(project, target="scripts/wf.py").returncode == 1
    # ... and left out with --force-exclude (or force-exclude = true): a note, exit 0, as pre-commit needs.
    run = run_replaytest("lint", "--no-cache", "--force-exclude", "scripts/wf.py", cwd=project)
    assert run.returncode == 0, run.describe()
    assert "every file given is excluded (scripts/wf.py)" in run.stderr, run.describe()
    (project / "pyproject.toml").write_text('[tool.replaytest]\nexclude = ["scripts/*"]\nforce-exclude = true\n')
    run = _lint(project, target="scripts/wf.py")
    assert run.returncode == 0 and run.json()["diagnostics"] == [], run.describe()
    both = run_replaytest("lint", "--format", "json", "--no-cache", "app/wf.py", "scripts/wf.py", cwd=project)
    assert findings(both.json()) == {CLOCK, RANDOM}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignored_files_are_left_out_of_directory_walks(make_project) -> None:
    project = make_project({"app/wf.py": WORKFLOW, "generated/wf.py": WORKFLOW, ".gitignore": "generated/\n"})
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    # Linting a subfolder of a fresh repository (nothing tracked yet) still finds its untracked files.
    assert CLOCK in findings(_lint(project, target="app").json())
    generated = ("generated/wf.py", CLOCK[1], "clock")
    assert generated not in findings(_lint(project).json())
    assert generated in findings(_lint(project, "--no-respect-gitignore").json())
    (project / "pyproject.toml").write_text("[tool.replaytest]\nrespect-gitignore = false\n")
    assert generated in findings(_lint(project).json())


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_is_respected_in_a_linked_work_tree_and_with_git_dir_set(make_project, tmp_path) -> None:
    # A linked work tree (or a submodule) has a .git file, not a folder; GIT_DIR names a repository
    # kept elsewhere. Either way the work tree's .gitignore files are read and applied.
    import os

    files = {"app/wf.py": WORKFLOW, "generated/wf.py": WORKFLOW, ".gitignore": "generated/\n"}
    generated = ("generated/wf.py", CLOCK[1], "clock")
    main = make_project(files)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=main, check=True)
    subprocess.run([*git, "add", "-A"], cwd=main, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=main, check=True)
    linked = tmp_path / "linked"
    subprocess.run([*git, "worktree", "add", "-q", str(linked)], cwd=main, check=True)
    (linked / "generated").mkdir()
    (linked / "generated" / "wf.py").write_text(WORKFLOW, encoding="utf-8")
    assert (linked / ".git").is_file()
    assert CLOCK in findings(_lint(linked).json())
    assert generated not in findings(_lint(linked).json())

    elsewhere = make_project(files, name="elsewhere")
    repository = tmp_path / "repository.git"
    environment = {"GIT_DIR": str(repository), "GIT_WORK_TREE": str(elsewhere)}
    subprocess.run(["git", "init", "-q"], cwd=elsewhere, check=True, env={**os.environ, **environment})
    assert not (elsewhere / ".git").exists()
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=elsewhere, env=environment)
    assert CLOCK in findings(run.json()) and generated not in findings(run.json()), run.describe()


@pytest.mark.parametrize("pattern", ["#generated", "!"])
def test_an_exclude_pattern_that_can_match_nothing_is_exit_2_naming_it(make_project, pattern: str) -> None:
    # In gitignore syntax "#generated" is a comment and "!" is refused: either would exclude nothing unsaid.
    project = make_project({"app/wf.py": WORKFLOW}, pyproject=f'[tool.replaytest]\nexclude = ["{pattern}"]\n')
    _exit_2_naming(_lint(project), repr(pattern), "[tool.replaytest] exclude", "pyproject.toml")
    fresh = make_project({"app/wf.py": WORKFLOW}, name="p2")
    _exit_2_naming(_lint(fresh, "--exclude", pattern), "--exclude", repr(pattern))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_wholly_untracked_folder_of_a_repository_is_linted(make_project) -> None:
    # A folder of a repository that holds nothing tracked yet is walked like any other.
    project = make_project({"service/app/wf.py": WORKFLOW})
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project / "service")
    assert ("app/wf.py", CLOCK[1], "clock") in findings(run.json()), run.describe()
