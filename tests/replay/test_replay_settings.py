"""One configuration for pytest and the command line: ``replay.settings`` reads pytest's ini twins from
the file pytest would read, with the plugin's precedence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replaytest.config import ConfigError, load_config
from replaytest.replay.settings import find_pytest_ini, replay_plan

TABLE = '[tool.replaytest.replay]\npaths = ["table_histories"]\nworkflows = ["table:wf"]\nprompts-running = "warn"\n'


def plan(root: Path, start: Path | None = None):
    return replay_plan(load_config(start or root), start or root)


def test_pyproject_ini_options_win_over_the_replaytest_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_paths = ["ini_histories"]\nreplay_workflows = ["ini:wf"]\n'
        'replay_prompts = "ignore"\nreplay_strict_args = true\nreplay_stale = "skip"\n\n' + TABLE, encoding="utf-8")
    found = plan(tmp_path)
    assert found.paths == (tmp_path.resolve() / "ini_histories",)
    assert found.workflows == ("ini:wf",)
    assert found.workflows_base == tmp_path.resolve()
    assert (found.prompts_running, found.prompts_completed, found.strict_args, found.stale) == ("ignore", "ignore", True, "skip")
    assert "replay_paths" in found.paths_from and "[tool.pytest.ini_options]" in found.paths_from


def test_the_table_applies_key_by_key_where_the_ini_is_silent(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_workflows = ["ini:wf"]\n\n' + TABLE, encoding="utf-8")
    found = plan(tmp_path)
    assert found.paths == (tmp_path.resolve() / "table_histories",)
    assert found.workflows == ("ini:wf",)
    assert (found.prompts_running, found.prompts_completed, found.strict_args, found.stale) == ("warn", "warn", False, "fail")


@pytest.mark.parametrize(("name", "text"), [
    ("pytest.ini", "[pytest]\nreplay_paths = h\nreplay_workflows =\n    agent:one\n    agent:two\n"),
    ("tox.ini", "[tox]\n[pytest]\nreplay_paths = h\nreplay_workflows =\n    agent:one\n    agent:two\n"),
    ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\nreplay_paths = h\nreplay_workflows =\n    agent:one\n    agent:two\n"),
])
def test_every_ini_file_pytest_reads_is_read(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    found = plan(tmp_path, sub)
    assert found.paths == (tmp_path.resolve() / "h",)
    assert found.workflows == ("agent:one", "agent:two")
    assert found.workflows_base == tmp_path.resolve()


def test_pytest_ini_wins_over_a_pyproject_in_the_same_folder(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nreplay_paths = ["x"]\n', encoding="utf-8")
    assert find_pytest_ini(tmp_path).path == tmp_path.resolve() / "pytest.ini"
    assert plan(tmp_path).paths == ()


def test_a_tox_ini_without_a_pytest_section_is_not_pytests_file(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[tox]\nenvlist = py3\n", encoding="utf-8")
    assert find_pytest_ini(tmp_path).path != tmp_path.resolve() / "tox.ini"


def test_default_histories_folder_when_code_is_configured(tmp_path: Path) -> None:
    (tmp_path / "fixtures" / "histories").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nreplay_workflows = ["a:b"]\n', encoding="utf-8")
    assert plan(tmp_path).paths == (tmp_path.resolve() / "fixtures" / "histories",)


@pytest.mark.parametrize(("option", "problem"), [
    ('replay_prompts = "sometimes"', "must be one of fail, warn, ignore"),
    ('replay_stale = "later"', "must be one of fail, skip"),
    ("replay_paths = 3", "must be a list of strings"),
    ('replay_strict_args = "maybe"', "must be true or false"),
])
def test_bad_ini_values_are_configuration_errors_naming_the_table(tmp_path: Path, option: str, problem: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{option}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.pytest.ini_options\] replay_\w+: " + problem) as caught:
        plan(tmp_path)
    assert "[tool.replaytest]" not in str(caught.value)  # the ini table, not replaytest's, holds the key


def _check(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "check", "--no-cache"],
                          cwd=cwd, capture_output=True, text=True, timeout=180)


def test_check_refuses_histories_without_code_naming_both_tables(tmp_path: Path) -> None:
    (tmp_path / "histories").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nreplay_paths = ["histories"]\n', encoding="utf-8")
    run = _check(tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no current code" in run.stderr
    assert "replay_workflows in [tool.pytest.ini_options]" in run.stderr
    assert "workflows in [tool.replaytest.replay]" in run.stderr


def test_check_without_any_replay_settings_says_which_tables_it_looked_for(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = \"-q\"\n", encoding="utf-8")
    run = _check(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("no histories configured (neither replay_paths in [tool.pytest.ini_options] nor paths in "
            "[tool.replaytest.replay]); replay skipped") in run.stdout


def test_the_hazards_policy_layers_like_the_other_replay_settings(tmp_path: Path) -> None:
    assert plan(tmp_path).hazards == "fail"  # default: a clock read the guards caught fails
    (tmp_path / "pyproject.toml").write_text(TABLE + 'hazards = "warn"\n', encoding="utf-8")
    assert plan(tmp_path).hazards == "warn"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nreplay_hazards = "fail"\n\n' + TABLE + 'hazards = "warn"\n', encoding="utf-8")
    assert plan(tmp_path).hazards == "fail"  # the ini twin wins


@pytest.mark.parametrize(("text", "message"), [
    ('[tool.pytest.ini_options]\nreplay_hazards = "ignore"\n', r"\[tool.pytest.ini_options\] replay_hazards: must be one of fail, warn"),
    ('[tool.replaytest.replay]\nhazards = "ignore"\n', r"\[tool.replaytest\] replay.hazards: must be one of fail, warn"),
])  # fmt: skip
def test_a_hazards_policy_outside_fail_and_warn_is_refused(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        plan(tmp_path)
