"""Version guards on the journal runtime, end to end: an expense-claim agent (version 1 committed, four
runs recorded: two parked at the manager's decision, one paid, one rejected) changed three ways; for each
change the guard text (written out by hand below), its verification against every history, ``apply_guards``,
a green ``replaytest replay`` of the guarded code, and a fresh run of the guarded code taking the new path."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from guardkit import CLAIMS, SPEC, ClaimsRepo, git, impacts_of, load_module, make_repo, run_fresh, run_ids

from replaytest.history import load_history
from replaytest.impact.guards import apply_guards, attach_guards, guards_diff
from replaytest.journal import Journal, Worker


@dataclass(frozen=True)
class Change:
    """One version-2 edit, what it breaks, and the guard expected for it."""

    old: str  # the version-1 text replaced
    new: str
    in_flight: list[str]  # workflow ids of the runs that break, in flight and finished
    finished: list[str]
    not_reached: list[str]
    position: int
    issued: str
    recorded: list[str]
    patch_id: str
    guarded: str  # what ``new`` becomes in the guarded file
    fresh_path: list[tuple[str, str]]  # (kind, name) of a claim started on the guarded code
    fresh_approved: bool = True  # the manager's decision for that claim


INSERTED_AFTER_WAIT = Change(
    old='''    decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
''',
    new='''    decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
    # Finance asked for a budget check on every claim before it is paid or rejected.
    ctx.step("check budget", check_budget, claim["employee"], receipt["total"])
''',
    in_flight=[], finished=["claim-paid", "claim-rejected"], not_reached=["claim-parked-hotel", "claim-parked-taxi"],
    position=4, issued="check budget", recorded=["pay employee", "explain rejection"],
    patch_id="expense-claim-check-budget",
    guarded='''    decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
    # Finance asked for a budget check on every claim before it is paid or rejected.
    if ctx.patched("expense-claim-check-budget"):
        ctx.step("check budget", check_budget, claim["employee"], receipt["total"])
''',
    fresh_path=[("step", "look up employee"), ("step", "read receipt"), ("signal", "manager decision"),
                ("marker", "patched"), ("step", "check budget"), ("step", "pay employee"), ("step", "file claim")],
)

REORDERED_BEFORE_WAIT = Change(
    old='''    employee = ctx.step("look up employee", lookup_employee, claim["employee"])
    receipt = ctx.step("read receipt", read_receipt, claim["receipt"])
''',
    new='''    receipt = ctx.step("read receipt", read_receipt, claim["receipt"])
    employee = ctx.step("look up employee", lookup_employee, claim["employee"])
''',
    in_flight=["claim-parked-hotel", "claim-parked-taxi"], finished=["claim-paid", "claim-rejected"], not_reached=[],
    position=1, issued="read receipt", recorded=["look up employee"],
    patch_id="expense-claim-read-receipt",
    guarded='''    if ctx.patched("expense-claim-read-receipt"):
        receipt = ctx.step("read receipt", read_receipt, claim["receipt"])
        employee = ctx.step("look up employee", lookup_employee, claim["employee"])
    else:
        employee = ctx.step("look up employee", lookup_employee, claim["employee"])
        receipt = ctx.step("read receipt", read_receipt, claim["receipt"])
''',
    fresh_path=[("marker", "patched"), ("step", "read receipt"), ("step", "look up employee"),
                ("signal", "manager decision"), ("step", "pay employee"), ("step", "file claim")],
)

# Only the else: body changes; the if and its paid branch stay as they are, outside the guard.
BRANCH_CHANGED = Change(
    old='''        ctx.step("explain rejection", write_letter, employee["email"], "Your claim was not approved.",
                 idempotency_key=ctx.idempotency_key())
''',
    new='''        ctx.step("offer appeal", write_letter, employee["email"], "Not approved; reply to this mail to appeal.",
                 idempotency_key=ctx.idempotency_key())
''',
    in_flight=[], finished=["claim-rejected"], not_reached=["claim-parked-hotel", "claim-parked-taxi"],
    position=4, issued="offer appeal", recorded=["explain rejection"],
    patch_id="expense-claim-offer-appeal",
    guarded='''        if ctx.patched("expense-claim-offer-appeal"):
            ctx.step("offer appeal", write_letter, employee["email"], "Not approved; reply to this mail to appeal.",
                     idempotency_key=ctx.idempotency_key())
        else:
            ctx.step("explain rejection", write_letter, employee["email"], "Your claim was not approved.",
                     idempotency_key=ctx.idempotency_key())
''',
    fresh_path=[("step", "look up employee"), ("step", "read receipt"), ("signal", "manager decision"),
                ("marker", "patched"), ("step", "offer appeal"), ("step", "file claim")],
    fresh_approved=False,
)

CHECK_BUDGET = '''def check_budget(employee: str, amount: float) -> dict[str, Any]:
    return {"employee": employee, "within_budget": amount < 1000}


def file_claim('''


def _version_2(repo: ClaimsRepo, change: Change) -> str:
    repo.edit(change.old, change.new)
    if "check_budget" in change.new:
        repo.edit("def file_claim(", CHECK_BUDGET)
    return repo.module_path.read_text()


def _replay_cli(repo: ClaimsRepo) -> subprocess.CompletedProcess[str]:
    """``replaytest replay`` in the project, on its configured histories and workflows."""
    return subprocess.run([sys.executable, "-m", "replaytest", "replay"], cwd=repo.root, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(repo.root), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("change", [INSERTED_AFTER_WAIT, REORDERED_BEFORE_WAIT, BRANCH_CHANGED],
                         ids=["inserted-after-wait", "reordered-before-wait", "branch-changed"])
def test_the_guard_for_a_change_verifies_applies_and_keeps_every_run(tmp_path: Path, change: Change) -> None:
    repo = make_repo(tmp_path)
    version_2 = _version_2(repo, change)
    results = repo.replay_all()
    impacts = impacts_of(results)
    [impact] = impacts
    [group] = impact.groups
    assert (run_ids(group.in_flight), run_ids(group.finished), run_ids(impact.not_reached)) == (
        change.in_flight, change.finished, change.not_reached)
    assert group.position == change.position and group.issued is not None and group.issued.name == change.issued
    assert [view.name for view in group.recorded if view is not None] == change.recorded

    attach_guards(impacts, results, root=repo.root, base_rev=None, workflow_specs=[SPEC], workflows_base=repo.root)

    guard = group.guard
    assert guard is not None, group.guard_note
    assert (guard.engine, guard.patch_id, guard.function) == ("journal", change.patch_id, "expense_claim")
    expected = version_2.replace(change.new, change.guarded)
    assert guard.guarded_text == expected
    assert guard.verification is not None
    assert (guard.verification.histories, guard.verification.passed, guard.verification.failing) == (4, 4, [])
    assert guard.verification.verified
    # The diff is the patch from the file as it is now; git applies it.
    assert guards_diff(impacts) == guard.diff
    subprocess.run(["git", "apply", "--check", "-"], input=guard.diff, cwd=repo.root, check=True, text=True)

    assert _replay_cli(repo).returncode == 1, "version 2 without the guard breaks the recorded runs"
    assert apply_guards(impacts) == [repo.module_path]
    assert repo.module_path.read_text() == expected
    replayed = _replay_cli(repo)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "4 passed" in replayed.stdout

    # A claim started after the deploy records the marker and runs version 2's commands.
    fresh = run_fresh(repo.module_path, tmp_path / "after-deploy.sqlite3", CLAIMS["paid"] | {"id": "C-9"},
                      {"approved": change.fresh_approved, "by": "lea@example.com"})
    assert [(event.kind, event.name) for event in fresh.events] == change.fresh_path
    [marker] = [event for event in fresh.events if event.kind == "marker"]
    assert marker.patch_id == change.patch_id
    # The verification's fresh run, made by the journal worker's own backend, said so before the deploy: the
    # check answered True and the command after it is the one the worker ran after the marker.
    after_marker = fresh.events[fresh.events.index(marker) + 1]
    [said] = guard.verification.fresh_runs
    assert (said.patch_id, said.path) == (change.patch_id, "new path")
    assert said.command is not None and said.command.startswith(f"{after_marker.kind} {after_marker.name!r}")


def test_a_parked_run_resumed_on_the_guarded_code_takes_the_new_path(tmp_path: Path) -> None:
    """A run "not reached" by the change resumes under the guard and records its marker (new path)."""
    repo = make_repo(tmp_path)
    _version_2(repo, INSERTED_AFTER_WAIT)
    results = repo.replay_all()
    impacts = impacts_of(results)
    attach_guards(impacts, results, root=repo.root, base_rev="HEAD", workflow_specs=[SPEC], workflows_base=repo.root)
    apply_guards(impacts)
    guarded = load_module(repo.module_path).expense_claim
    with Journal(tmp_path / "journal.sqlite3", clock=lambda: 1_780_086_400.0) as journal:
        journal.signal("run-parked-taxi", "manager decision", {"approved": True, "by": "lea@example.com"})
        Worker(journal, [guarded], heartbeat=False).run_until_idle()
        resumed = journal.export("run-parked-taxi")
    assert resumed.status == "completed"
    assert [(event.kind, event.name, event.patch_id) for event in resumed.events[3:5]] == [
        ("marker", "patched", "expense-claim-check-budget"), ("step", "check budget", None)]


# Version 2 with both the budget check and the appeal: the changed run of statements is one block (the
# budget step and the whole if), guarded whole, so runs kept on the old path there keep the old else too.
BOTH_CHANGES_GUARDED = '''    decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
    # Finance asked for a budget check on every claim before it is paid or rejected.
    if ctx.patched("expense-claim-check-budget"):
        ctx.step("check budget", check_budget, claim["employee"], receipt["total"])
        if decision and decision.get("approved"):
            outcome = "paid"
            ctx.step("pay employee", pay_employee, employee["iban"], receipt["total"], idempotency_key=ctx.idempotency_key())
        else:
            outcome = "rejected"
            ctx.step("offer appeal", write_letter, employee["email"], "Not approved; reply to this mail to appeal.",
                     idempotency_key=ctx.idempotency_key())
    else:
        if decision and decision.get("approved"):
            outcome = "paid"
            ctx.step("pay employee", pay_employee, employee["iban"], receipt["total"], idempotency_key=ctx.idempotency_key())
        else:
            outcome = "rejected"
            ctx.step("explain rejection", write_letter, employee["email"], "Your claim was not approved.",
                     idempotency_key=ctx.idempotency_key())
    ctx.step("file claim", file_claim, claim["id"], outcome)
'''


def test_two_changes_in_one_run_of_statements_are_guarded_as_one_block(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _version_2(repo, INSERTED_AFTER_WAIT)
    version_2 = _version_2(repo, BRANCH_CHANGED)
    results = repo.replay_all()
    impacts = impacts_of(results)
    attach_guards(impacts, results, root=repo.root, base_rev=None, workflow_specs=[SPEC], workflows_base=repo.root)
    # Both finished runs break at the budget check first: one group, one guard.
    [group] = impacts[0].groups
    assert group.guard is not None and group.guard.patch_id == "expense-claim-check-budget"
    assert group.guard.verification is not None and group.guard.verification.verified
    start = version_2.index('    decision = ctx.wait_signal(')
    end = version_2.index('    return {"claim"')
    assert group.guard.guarded_text == version_2[:start] + BOTH_CHANGES_GUARDED + version_2[end:]
    assert apply_guards(impacts) == [repo.module_path]
    assert _replay_cli(repo).returncode == 0


def test_a_guard_that_does_not_verify_names_the_history_that_still_fails(tmp_path: Path) -> None:
    """--base at a commit newer than the deployed code: the guard's old branch is not what the runs
    recorded, and the replay against the guarded copy says so instead of offering it."""
    repo = make_repo(tmp_path)
    _version_2(repo, BRANCH_CHANGED)
    git(repo.root, "commit", "-q", "-am", "offer an appeal")
    not_deployed = git(repo.root, "rev-parse", "HEAD").strip()
    repo.edit('ctx.step("offer appeal"', 'ctx.step("open appeal case"')
    results = repo.replay_all()
    impacts = impacts_of(results)
    attach_guards(impacts, results, root=repo.root, base_rev=not_deployed, workflow_specs=[SPEC],
                  workflows_base=repo.root)
    [group] = impacts[0].groups
    guard = group.guard
    assert guard is not None and guard.verification is not None
    assert not guard.verification.verified
    assert (guard.verification.histories, guard.verification.passed) == (4, 3)
    [(path, why)] = guard.verification.failing
    assert path == repo.histories["rejected"]
    assert why.startswith("command-mismatch at event #4:") and "explain rejection" in why, why
    assert guards_diff(impacts) == "" and apply_guards(impacts) == []
    assert load_history(repo.histories["rejected"]).status == "completed"


def test_guards_that_fail_together_are_replayed_alone_and_only_the_verified_one_is_offered(tmp_path: Path) -> None:
    """Two changes of one workflow type, one guard each; the appeal guard's old branch comes from a base that
    was never deployed, so replaying both together fails, and each is replayed alone to tell them apart."""
    repo = make_repo(tmp_path)
    _version_2(repo, BRANCH_CHANGED)
    git(repo.root, "commit", "-q", "-am", "offer an appeal")
    not_deployed = git(repo.root, "rev-parse", "HEAD").strip()
    repo.edit('ctx.step("offer appeal"', 'ctx.step("open appeal case"')
    repo.edit('ctx.step("pay employee", pay_employee,', 'ctx.step("pay by transfer", pay_employee,')
    results = repo.replay_all()
    impacts = impacts_of(results)
    attach_guards(impacts, results, root=repo.root, base_rev=not_deployed, workflow_specs=[SPEC],
                  workflows_base=repo.root)
    by_run = {run_ids(group.finished)[0]: group.guard for group in impacts[0].groups}
    paid, rejected = by_run["claim-paid"], by_run["claim-rejected"]
    assert paid is not None and rejected is not None and paid is not rejected
    assert paid.patch_id == "expense-claim-pay-by-transfer" and rejected.patch_id == "expense-claim-open-appeal-case"
    left_out = ["1 history of a change this guard does not cover left out (they break at that change)"]
    assert paid.verification is not None and rejected.verification is not None
    assert (paid.verification.histories, paid.verification.passed, paid.verification.failing,
            paid.verification.notes) == (3, 3, [], left_out)
    assert (rejected.verification.histories, rejected.verification.passed, rejected.verification.notes) == (3, 2, left_out)
    assert [path for path, _why in rejected.verification.failing] == [repo.histories["rejected"]]
    assert guards_diff(impacts) == paid.diff
    apply_guards(impacts)
    assert repo.module_path.read_text() == paid.guarded_text


def _negated(texts: dict[Path, str]) -> dict[Path, str]:
    """The guarded files with every guard's check negated: ``if not ctx.patched(…)``, the mistake of a guard
    that sends the runs recorded before the change down the new block and new runs down the old one."""
    return {path: text.replace("if ctx.patched(", "if not ctx.patched(") for path, text in texts.items()}


def test_a_guard_that_sends_new_runs_down_the_old_path_is_not_verified_though_every_history_replays_green(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The parked claims are the only histories kept (the finished ones pruned): they have not reached the
    budget check, so a negated guard replays them green and the engine accepts their resume. Only the engine's
    fresh run of the guarded code shows that a claim started after the deploy skips the budget check, which the
    journal worker confirms by running one."""
    from replaytest.impact import verify

    repo = make_repo(tmp_path)
    _version_2(repo, INSERTED_AFTER_WAIT)
    results = repo.replay_all()
    impacts = impacts_of(results)
    attach_guards(impacts, results, root=repo.root, base_rev=None, workflow_specs=[SPEC], workflows_base=repo.root,
                  verify=False)
    [group] = impacts[0].groups
    guard = group.guard
    assert guard is not None and guard.patch_id == "expense-claim-check-budget"
    parked = [result for result in results if result.in_flight]
    assert sorted(result.workflow_id or "" for result in parked) == ["claim-parked-hotel", "claim-parked-taxi"]

    # The guard as written: verified on the parked claims alone, new runs taking the new path.
    verify.verify_impacts(impacts, parked, root=repo.root, workflow_specs=[SPEC], workflows_base=repo.root)
    assert guard.verification is not None and guard.verification.verified
    name = repo.module_path.name
    budget = _line_of(guard.guarded_text, 'ctx.step("check budget"')
    assert [(fresh.path, fresh.command) for fresh in guard.verification.fresh_runs] == [
        ("new path", f"step 'check budget' ({name}:{budget})")]
    parked_paths = sorted(result.history_path for result in parked)
    assert sorted(guard.verification.resume) == [(path, "new path") for path in parked_paths]

    # Negated: both parked claims still replay green and resume, but a new claim takes the old path. (No kept
    # history carries a manager decision, so the fresh run's wait gets none: the claim is rejected.)
    real = verify.compose_guards
    monkeypatch.setattr(verify, "compose_guards", lambda guards: _negated(real(guards)))
    guard.verification = None
    verify.verify_impacts(impacts, parked, root=repo.root, workflow_specs=[SPEC], workflows_base=repo.root)
    verification = guard.verification
    assert verification is not None
    assert (verification.histories, verification.passed, verification.failing) == (2, 2, [])
    [fresh] = verification.fresh_runs
    rejection = _line_of(guard.guarded_text, 'ctx.step("explain rejection"')
    assert (fresh.path, fresh.command) == ("old path", f"step 'explain rejection' ({name}:{rejection})")
    assert not verification.verified
    # The parked claims reach the check past their history, where the engine answers it True: under the
    # negated check that is the else: block, so they resume on the old path (the command after the check, not
    # the answer, says so).
    assert sorted(verification.resume) == [(path, "old path") for path in parked_paths]

    # The journal worker runs a claim on the negated guard: the marker, then the old path's rejection letter.
    negated = repo.module_path.with_name("claims_negated.py")
    negated.write_text(_negated({repo.module_path: guard.guarded_text})[repo.module_path], encoding="utf-8")
    run = run_fresh(negated, tmp_path / "negated.sqlite3", CLAIMS["paid"] | {"id": "C-10"}, {"approved": False})
    kinds = [(event.kind, event.name) for event in run.events]
    assert ("step", "check budget") not in kinds
    assert kinds[kinds.index(("marker", "patched")) + 1] == ("step", "explain rejection")

    # The journal worker resumes a parked claim on the negated guard (the same signal the rehearsal delivered):
    # the marker, then the old path, as the resume verdict said.
    resumed = _resume_parked(negated, tmp_path, "parked-taxi")
    assert ("step", "check budget") not in resumed
    assert resumed[resumed.index(("marker", "patched")) + 1] == ("step", "explain rejection")


def _resume_parked(module_path: Path, tmp_path: Path, name: str) -> list[tuple[str, str]]:
    """Resume the recorded parked claim ``name`` (a copy of the recording's journal) on ``module_path``, with the
    manager's decision signalled without a payload; its events, kind and name."""
    database = tmp_path / f"resume-{name}.sqlite3"
    shutil.copyfile(tmp_path / "journal.sqlite3", database)
    workflow = load_module(module_path).expense_claim
    with Journal(database, clock=lambda: 1_790_000_000.0) as journal:
        worker = Worker(journal, [workflow], heartbeat=False)
        journal.signal(f"run-{name}", "manager decision", None)
        worker.run_until_idle()
        return [(event.kind, event.name) for event in journal.export(f"run-{name}").events]


def _line_of(text: str, fragment: str) -> int:
    [number] = [number for number, line in enumerate(text.splitlines(), 1) if fragment in line]
    return number

