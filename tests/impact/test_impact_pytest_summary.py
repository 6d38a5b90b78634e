"""The pytest plugin's terminal summary ends with the grouped counts of ``replaytest impact`` (one line per
divergence point), in one process and merged on the pytest-xdist controller."""

from __future__ import annotations

import shutil
from pathlib import Path

import impact_agent as agent
import pytest
from impactkit import record_runs, tagged_line

INI = """
[tool.pytest.ini_options]
replay_paths = ["histories"]
replay_workflows = ["disputes:{workflow}"]
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_runs(tmp_path_factory.mktemp("recorded"), agent.invoice_dispute)


def make_project(pytester: pytest.Pytester, recorded: Path, workflow: str) -> None:
    # The agent under another module name: the summary names the project's own file.
    shutil.copy(agent.__file__, pytester.path / "disputes.py")
    shutil.copytree(recorded, pytester.path / "histories")
    (pytester.path / "pyproject.toml").write_text(INI.format(workflow=workflow))


def test_the_summary_ends_with_one_line_per_group(pytester: pytest.Pytester, recorded: Path) -> None:
    make_project(pytester, recorded, "payments_first")
    result = pytester.runpytest()
    result.assert_outcomes(failed=5)
    line = tagged_line(agent.payments_first, "swapped")
    result.stdout.fnmatch_lines([
        "replayed 5 histories: 0 passed, 5 diverged, 0 stale",
        "in-flight runs that break: 2 (2 parked)",
        "finished runs that diverge: 3 (3 completed)",
        "prompt drift: 0 warning(s)",
        "next: replaytest replay histories/approved-1.json --details --workflows disputes:payments_first",
        f"2 in-flight runs of invoice_dispute break at event #1 (disputes.py:{line}), and 3 finished diverge there; "
        "run `replaytest impact` for the guard",
    ], consecutive=True)


def test_finished_only_groups_and_no_line_when_nothing_diverges(pytester: pytest.Pytester, recorded: Path) -> None:
    make_project(pytester, recorded, "credit_limit_check")
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, failed=2)
    line = tagged_line(agent.credit_limit_check, "limit")
    result.stdout.fnmatch_lines([
        "next: replaytest replay histories/approved-1.json --details --workflows disputes:credit_limit_check",
        f"2 finished runs of invoice_dispute diverge at event #5 (disputes.py:{line}); "
        "run `replaytest impact` for the guard",
    ], consecutive=True)
    (pytester.path / "pyproject.toml").write_text(INI.format(workflow="invoice_dispute"))
    result = pytester.runpytest()
    result.assert_outcomes(passed=5)
    assert "replaytest impact" not in result.stdout.str()


@pytest.mark.slow
def test_xdist_workers_send_the_divergence_points_to_the_controller(pytester: pytest.Pytester, recorded: Path) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, recorded, "audit_after_decision")
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=2, failed=3)
    line = tagged_line(agent.audit_after_decision, "audit")
    result.stdout.fnmatch_lines([f"3 finished runs of invoice_dispute diverge at event #5 (disputes.py:{line}); "
                                 "run `replaytest impact` for the guard"])
