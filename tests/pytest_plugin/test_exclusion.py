"""The pytest plugin with ``replay_exclude`` / ``[tool.replaytest.replay] exclude``: excluded histories
are not collected, the replaytest summary says how many which setting left out, and a corrupt history
among good ones fails alone. The project is the bundled journal agent with its recorded histories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENT = (REPO / "fixtures/journal_app/agent.py").read_text()
GOOD = sorted(p.name for p in (REPO / "fixtures/histories").glob("*.json"))
INI = """
[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["shop.agent:support_agent"]
"""


def make_project(pytester: pytest.Pytester, ini: str) -> Path:
    root = pytester.path
    (root / "shop").mkdir()
    (root / "shop/__init__.py").write_text("")
    (root / "shop/agent.py").write_text(AGENT)
    shutil.copytree(REPO / "fixtures/histories", root / "histories")
    whole = (root / "histories" / GOOD[0]).read_text()
    (root / "histories/drafts").mkdir()
    (root / "histories/drafts/support_agent-cut-short.json").write_text(whole[: len(whole) // 2])
    (root / "pyproject.toml").write_text(ini)
    return root


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(("=", "FAILED", "ERROR"))]


def test_a_corrupt_history_fails_alone(pytester: pytest.Pytester) -> None:
    make_project(pytester, INI)
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["replayed 4 histories: 3 passed, 0 diverged, 0 stale, 1 error",
                                 "FAILED histories/drafts/support_agent-cut-short.json::replay*"])


def test_replay_exclude_leaves_the_history_uncollected_and_says_so(pytester: pytest.Pytester) -> None:
    root = make_project(pytester, INI + 'replay_exclude = ["drafts", "archive/"]\n')
    setting = f"[tool.pytest.ini_options] replay_exclude in {root / 'pyproject.toml'}"
    assert collected(pytester.runpytest("--collect-only", "-q")) == [f"histories/{name}::replay" for name in GOOD]
    result = pytester.runpytest("--replay-details")
    result.assert_outcomes(passed=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        f"excluded 1 history (by {setting})",
        "  excluded histories/drafts/support_agent-cut-short.json (glob 'drafts')",
        f"note: exclude glob 'archive/' ({setting}) matches no history under the replay paths",
        "replayed 3 histories: 3 passed, 0 diverged, 0 stale",
    ])


@pytest.mark.slow
def test_the_ini_option_takes_precedence_over_the_replaytest_table(pytester: pytest.Pytester) -> None:
    refund = "support_agent-refund-approved.json"
    root = make_project(pytester, INI + 'replay_exclude = ["drafts"]\n\n[tool.replaytest.replay]\nexclude = ["'
                        + refund + '"]\n')
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)  # the refund history is replayed: the table's glob does not apply
    result.stdout.fnmatch_lines([f"excluded 1 history (by [tool.pytest.ini_options] replay_exclude in {root / 'pyproject.toml'})"])
    (root / "pyproject.toml").write_text(INI + '\n[tool.replaytest.replay]\nexclude = ["' + refund + '"]\n')
    alone = pytester.runpytest()
    alone.assert_outcomes(passed=2, failed=1)
    alone.stdout.fnmatch_lines([f"excluded 1 history (by [tool.replaytest.replay] exclude in {root / 'pyproject.toml'})"])
    assert refund not in alone.stdout.str().split("= replaytest =")[0]


def test_a_history_named_on_the_command_line_is_collected_even_when_excluded(pytester: pytest.Pytester) -> None:
    make_project(pytester, INI + 'replay_exclude = ["drafts"]\n')
    named = "histories/drafts/support_agent-cut-short.json"
    assert collected(pytester.runpytest("--collect-only", "-q", named)) == [f"{named}::replay"]


def test_excluding_every_history_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_project(pytester, INI + 'replay_exclude = ["*.json"]\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nothing to replay: exclude ([[]tool.pytest.ini_options] replay_exclude in *) leaves out "
                                 "every history under the replay paths (4 excluded)*"])


@pytest.mark.slow
def test_xdist_controller_reports_the_exclusion(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, INI + 'replay_exclude = ["drafts"]\n')
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["excluded 1 history (by [[]tool.pytest.ini_options] replay_exclude in *)",
                                 "replayed 3 histories: 3 passed, 0 diverged, 0 stale"])


def test_a_replay_exclude_glob_that_can_match_nothing_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # In gitignore syntax "#drafts" is a comment: it would exclude nothing without a word.
    make_project(pytester, INI + 'replay_exclude = ["#drafts"]\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*replay_exclude*'#drafts': matches nothing*"])
