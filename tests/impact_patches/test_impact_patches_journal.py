"""Patch retirement on the journal runtime: which retained runs still need the old branch of
``ctx.patched("receipt-check")``, and how the verdict moves as the last of them completes.

The runs are real (a journal on SQLite, one worker per deploy); their histories are exported, replayed
against the current code and handed to ``attach_patches`` with the workflow's source file."""

from __future__ import annotations

from pathlib import Path

import impact_patches_expense as expense
import pytest

from replaytest.history import save_history
from replaytest.impact.report import verdict_text
from replaytest.impact.model import ImpactGroup, GroupKey, PatchUse, WorkflowImpact
from replaytest.impact.retirement import attach_patches
from replaytest.journal import Journal, Worker
from replaytest.plugins.journal import PLUGIN
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.runner import load_workflows, replay_file

SOURCE = Path(expense.__file__).resolve()
GUARD_LINE = next(n for n, line in enumerate(SOURCE.read_text().splitlines(), 1) if line.endswith("# [receipt-check]"))


class Deploys:
    """One journal, the runs started under each deploy, and their histories exported on demand."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.clock = [1_764_000_000.0]
        self.journal = Journal(folder / "journal.sqlite3", clock=lambda: self.clock[0])

    def run(self, code, run_id: str, claim: dict) -> None:
        self.journal.start(code, claim, run_id=run_id, workflow_id=run_id)
        Worker(self.journal, [code], heartbeat=False).run_until_idle()

    def approve(self, code, run_id: str) -> None:
        self.journal.signal(run_id, "manager approval", {"approved": True, "by": "dana"})
        Worker(self.journal, [code], heartbeat=False).run_until_idle()

    def export(self, *run_ids: str) -> list[Path]:
        paths = []
        for run_id in run_ids:
            path = self.folder / "histories" / f"{run_id}.json"
            path.parent.mkdir(exist_ok=True)
            save_history(self.journal.export(run_id), path)
            paths.append(path)
        return paths


def replay_all(paths: list[Path]) -> list[ReplayResult]:
    assert PLUGIN.replayer is not None
    workflows = load_workflows((), None, [expense.expense_review])
    results = [replay_file(path, [PLUGIN.replayer], workflows, ReplayOptions()) for path in paths]
    assert [result.status for result in results] == ["passed"] * len(paths), [r.divergence for r in results]
    return results


def retirement(paths: list[Path]) -> PatchUse:
    impacts = attach_patches([], replay_all(paths), [SOURCE])
    assert [(impact.workflow_type, impact.engine, impact.notes) for impact in impacts] == [("expense_review", "journal", [])]
    [use] = impacts[0].patches
    assert (use.patch_id, use.engine, use.path, use.line, use.deprecated) == ("receipt-check", "journal", SOURCE, GUARD_LINE, False)
    return use


def ids(results: list[ReplayResult]) -> list[str | None]:
    return [result.workflow_id for result in results]


@pytest.fixture
def deploys(tmp_path: Path) -> Deploys:
    deploys = Deploys(tmp_path)
    yield deploys
    deploys.journal.close()


def test_a_parked_run_that_passed_the_patch_point_keeps_the_guard_until_it_completes(deploys: Deploys) -> None:
    # Deploy 1 (before the check): a claim waits for its manager, past where the check now stands.
    deploys.run(expense.expense_review_before, "claim-taxi", {"item": "taxi", "amount": 31})
    # Deploy 2 (the guarded check): a new claim takes the new path and completes.
    deploys.run(expense.expense_review, "claim-flight", {"item": "flight", "amount": 420})
    deploys.approve(expense.expense_review, "claim-flight")

    use = retirement(deploys.export("claim-taxi", "claim-flight"))
    assert use.verdict == "still-needed"
    assert ids(use.needed_by) == ["claim-taxi"]
    assert ids(use.marked_by) == ["claim-flight"]

    # The parked claim is approved and completes under deploy 2, on the old branch: no in-flight run needs
    # it now, but its retained history replays the old branch, so removing the guard would make it diverge.
    deploys.approve(expense.expense_review, "claim-taxi")
    assert deploys.journal.status("claim-taxi") == "completed"
    use = retirement(deploys.export("claim-taxi", "claim-flight"))
    assert (use.verdict, use.needed_by, ids(use.marked_by), ids(use.replayed_old_by)) == (
        "still-needed", [], ["claim-flight"], ["claim-taxi"])
    assert verdict_text(use) == ("still needed: no in-flight run needs it, but 1 retained finished history replays "
                                 "its old branch (first: claim-taxi); removing it sends them down the new "
                                 "branch, which they did not record")

    # Once that history is no longer retained, only the marker's history holds the call: deprecate it.
    use = retirement(deploys.export("claim-flight"))
    assert (use.verdict, use.needed_by, ids(use.marked_by), use.replayed_old_by) == ("deprecate-now", [], ["claim-flight"], [])


def test_in_flight_runs_needing_the_guard_are_listed_oldest_first(deploys: Deploys) -> None:
    for run_id in ("claim-2", "claim-1", "claim-3"):
        deploys.run(expense.expense_review_before, run_id, {"item": "train", "amount": 12})
    # Neutral histories carry no start time: the order is the order of the histories given.
    use = retirement(deploys.export("claim-2", "claim-1", "claim-3"))
    assert ids(use.needed_by) == ["claim-2", "claim-1", "claim-3"]
    assert use.verdict == "still-needed"


def test_finished_runs_that_took_the_old_branch_keep_the_guard_from_removal(deploys: Deploys) -> None:
    """The same replays that say these runs diverge without the guard say it cannot go: never "remove now"
    while a retained history takes the old branch."""
    deploys.run(expense.expense_review_before, "claim-done", {"item": "taxi", "amount": 9})
    deploys.approve(expense.expense_review_before, "claim-done")
    use = retirement(deploys.export("claim-done"))
    assert (use.verdict, use.needed_by, use.marked_by, ids(use.replayed_old_by)) == ("still-needed", [], [], ["claim-done"])


def test_patches_join_the_workflow_s_divergence_report(deploys: Deploys) -> None:
    deploys.run(expense.expense_review_before, "claim-taxi", {"item": "taxi", "amount": 31})
    results = replay_all(deploys.export("claim-taxi"))
    group = ImpactGroup(GroupKey("expense_review", "command-mismatch", None, None, None), None, [], None, None, "")
    existing = WorkflowImpact("expense_review", "journal", groups=[group])
    impacts = attach_patches([existing], results, [SOURCE])
    assert impacts == [existing] and existing.groups == [group]
    assert [(use.patch_id, use.verdict, ids(use.needed_by)) for use in existing.patches] == [
        ("receipt-check", "still-needed", ["claim-taxi"])
    ]


def test_a_workflow_type_without_histories_says_its_verdict_rests_on_no_run() -> None:
    impacts = attach_patches([], [], [SOURCE])
    [impact] = impacts
    assert impact.workflow_type == "expense_review"
    assert [use.verdict for use in impact.patches] == ["remove-now"]
    assert impact.notes == [
        f"{SOURCE}:{GUARD_LINE}: no history of workflow type 'expense_review' was replayed: the verdict on "
        "patch 'receipt-check' rests on no run"
    ]


def test_a_history_that_cannot_be_read_is_said_not_counted(deploys: Deploys, tmp_path: Path) -> None:
    deploys.run(expense.expense_review_before, "claim-taxi", {"item": "taxi", "amount": 31})
    [good] = deploys.export("claim-taxi")
    torn = tmp_path / "histories" / "claim-torn.json"
    torn.write_text(good.read_text()[:200], encoding="utf-8")  # cut off mid-write
    assert PLUGIN.replayer is not None
    workflows = load_workflows((), None, [expense.expense_review])
    results = [replay_file(path, [PLUGIN.replayer], workflows, ReplayOptions()) for path in (good, torn)]
    assert [result.status for result in results] == ["passed", "error"]
    [impact] = attach_patches([], results, [SOURCE])
    assert [(use.verdict, ids(use.needed_by)) for use in impact.patches] == [("still-needed", ["claim-taxi"])]
    [note] = impact.notes
    assert note.startswith(f"1 history(ies) could not be read ({torn}: ")
    assert note.endswith("their workflow type is unknown and the patch verdicts do not count them")
