"""``replaytest impact`` carries the patch verdicts: a project whose histories are real runs of the
expense agent (``impact_patches_expense``) — one parked before the receipt check was added, one completed
with it — replayed against the guarded code; the JSON and text reports name the guard, the run that
still needs it, and later the changed verdict."""

from __future__ import annotations

import json
import os
from pathlib import Path

import impact_patches_expense as expense
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import save_history
from replaytest.journal import Journal, Worker

SOURCE = Path(expense.__file__).resolve()
GUARD_LINE = next(n for n, line in enumerate(SOURCE.read_text().splitlines(), 1) if line.endswith("# [receipt-check]"))
SPEC = "impact_patches_expense:expense_review"


def _project(root: Path) -> Journal:
    (root / "histories").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["{SPEC}"]\n')
    return Journal(root / "journal.sqlite3", clock=lambda: 1_764_000_000.0)


def _run(journal: Journal, code, run_id: str, claim: dict, approve: bool = False) -> None:
    journal.start(code, claim, run_id=run_id, workflow_id=run_id)  # a run that exists is kept as it is
    if approve:
        journal.signal(run_id, "manager approval", {"approved": True, "by": "dana"})
    Worker(journal, [code], heartbeat=False).run_until_idle()


def _export(root: Path, journal: Journal, *run_ids: str) -> None:
    for run_id in run_ids:
        save_history(journal.export(run_id), root / "histories" / f"{run_id}.json")


def _impact(root: Path, *args: str) -> tuple[int, str]:
    previous = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(cli, ["impact", *args])
    finally:
        os.chdir(previous)
    return result.exit_code, result.output


def test_impact_reports_which_run_still_needs_the_guard_and_when_it_may_go(tmp_path: Path) -> None:
    journal = _project(tmp_path)
    _run(journal, expense.expense_review_before, "claim-taxi", {"item": "taxi", "amount": 31})
    _run(journal, expense.expense_review, "claim-flight", {"item": "flight", "amount": 420}, approve=True)
    _export(tmp_path, journal, "claim-taxi", "claim-flight")

    code, out = _impact(tmp_path, "--output-format", "json")
    assert code == 0, out  # nothing breaks: the guard keeps the parked claim on its old path
    data = json.loads(out)
    [workflow] = data["workflows"]
    assert (workflow["type"], workflow["groups"]) == ("expense_review", [])
    assert workflow["patches"] == [
        {
            "patch_id": "receipt-check", "engine": "journal", "path": str(SOURCE), "line": GUARD_LINE,
            "deprecated": False, "needed_by": ["claim-taxi"], "marked_by": ["claim-flight"], "replayed_old_by": [],
            "verdict": "still-needed", "verdict_text": "1 run still needs it (oldest: claim-taxi)",
        }
    ]
    assert data["summary"]["patches"] == 1 and data["summary"]["notes"] == []

    # The manager approves the parked claim; it completes under the guarded code, on the old branch.
    _run(journal, expense.expense_review, "claim-taxi", {}, approve=True)
    _export(tmp_path, journal, "claim-taxi")
    code, out = _impact(tmp_path)
    assert code == 0, out
    assert (f"patch 'receipt-check' at {SOURCE}:{GUARD_LINE}: still needed: no in-flight run needs it, but 1 "
            "retained finished history replays its old branch (first: claim-taxi); removing it sends them down the new branch, "
            "which they did not record") in out

    (tmp_path / "histories" / "claim-taxi.json").unlink()
    code, out = _impact(tmp_path)
    assert code == 0, out
    assert (f"patch 'receipt-check' at {SOURCE}:{GUARD_LINE}: deprecate now: no in-flight run needs the old "
            "branch; 1 retained history records the marker") in out

    journal.close()
