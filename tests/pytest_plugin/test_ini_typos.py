"""A misspelt ini option of the plugin (``replay_path`` for ``replay_paths``): pytest warns naming the option
that was meant, and ``replaytest check``/``replay``, which read the same ini file, refuse it (exit 2) before
any history is replayed or taken from the cache as green."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replaytest.replay.settings import PYTEST_INI_KEYS

REPO = Path(__file__).resolve().parents[2]
AGENT = (REPO / "fixtures/journal_app/agent.py").read_text()


def _project(root: Path, ini: str) -> Path:
    (root / "shop").mkdir()
    (root / "shop/__init__.py").write_text("")
    (root / "shop/agent.py").write_text(AGENT)
    shutil.copytree(REPO / "fixtures/histories", root / "histories")
    (root / "pyproject.toml").write_text(ini)
    return root


MISSPELT = """
[tool.pytest.ini_options]
replay_path = ["histories"]
replay_workflows = ["shop.agent:support_agent"]
"""

WARNING = ("replay_path is not an ini option of replaytest; did you mean replay_paths?")


def test_pytest_warns_naming_the_option_that_was_meant(pytester: pytest.Pytester) -> None:
    _project(pytester.path, MISSPELT)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert WARNING in result.stdout.str()


def test_options_of_other_plugins_and_far_names_are_not_flagged(pytester: pytest.Pytester) -> None:
    _project(pytester.path, MISSPELT.replace("replay_path ", "replay_paths ") + 'markers = ["slow"]\nxfail_strict = true\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    assert "is not an ini option of replaytest" not in result.stdout.str()


def test_every_registered_ini_option_is_in_the_one_list(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    for key in PYTEST_INI_KEYS:
        config.getini(key)  # raises ValueError for an option the plugin does not register
    assert "replay_paths" in PYTEST_INI_KEYS and len(set(PYTEST_INI_KEYS)) == len(PYTEST_INI_KEYS)


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=root, capture_output=True, text=True,
                          timeout=180)


def test_check_refuses_a_misspelt_option_before_the_cache_skips_anything(tmp_path: Path) -> None:
    root = _project(tmp_path, MISSPELT.replace("replay_path ", "replay_paths "))
    (root / "shop/agent.py").write_text(AGENT)
    first = _cli(root, "check", "shop")
    assert first.returncode == 0, first.stdout + first.stderr
    second = _cli(root, "check", "shop")
    assert "skipped 3 histories that replayed green before" in second.stdout, second.stdout + second.stderr
    # A typo in the prompt policy meant for the run: the cache would skip every history as green under the
    # default policy. It is refused instead, before anything is replayed or read from the cache.
    (root / "pyproject.toml").write_text(MISSPELT.replace("replay_path ", "replay_paths ") + 'replay_prompt = "fail"\n')
    broken = _cli(root, "check", "shop")
    assert broken.returncode == 2, broken.stdout + broken.stderr
    assert "[tool.pytest.ini_options] replay_prompt: is not an ini option of replaytest; did you mean " \
           "replay_prompts?" in broken.stderr
    assert "skipped" not in broken.stdout and "replayed" not in broken.stdout
