"""The pytest plugin reads RT201's ``calls`` option, the extra model calls replay's "recorded no prompt
version" note counts: a value that is not a list of dotted names stops the run with a usage error, as
``replaytest check`` stops with exit 2, instead of silently dropping the names. The project is the bundled
journal agent with its recorded histories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INI = """
[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["shop.agent:support_agent"]

[tool.replaytest.rules.RT201]
calls = {calls}
"""


def make_project(pytester: pytest.Pytester, calls: str) -> None:
    root = pytester.path
    (root / "shop").mkdir()
    (root / "shop/__init__.py").write_text("")
    shutil.copy(REPO / "fixtures/journal_app/agent.py", root / "shop/agent.py")
    shutil.copytree(REPO / "fixtures/histories", root / "histories")
    (root / "pyproject.toml").write_text(INI.format(calls=calls))


def test_a_list_of_names_replays_as_usual(pytester: pytest.Pytester) -> None:
    make_project(pytester, '["acme.llm.complete"]')
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)


def test_a_single_name_not_in_a_list_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_project(pytester, '"acme.llm.complete"')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*calls*must be a list of dotted qualified names*"])
