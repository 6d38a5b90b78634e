"""``ctx.deprecate_patch(id)``, the retirement step of ``ctx.patched(id)``, on the live journal runtime.

An expense agent gains a receipt check behind ``patched("receipt-check")``; later the branch is made
unconditional with ``deprecate_patch``. Runs recorded under each version are resumed under the next, the
way a deploy resumes them, and their journals are read back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from journal_clock import FakeClock

from replaytest.journal import AsyncContext, Journal, Worker, workflow


def _expense_agent(version: str):
    """The agent at one of its versions: ``v1`` before the change, ``v2`` with the guard, ``v3`` with the
    guard deprecated (the receipt check always runs), ``v4`` with the call removed."""

    @workflow(name="expense_review", version=version)
    def expense_review(ctx, claim):
        category = ctx.step("classify", lambda: "travel" if "train" in claim["item"] else "other")
        if version == "v2":
            if ctx.patched("receipt-check"):
                ctx.step("check receipt", lambda: {"receipt": "ok"})
        elif version == "v3":
            ctx.deprecate_patch("receipt-check")
            ctx.step("check receipt", lambda: {"receipt": "ok"})
        elif version == "v4":
            ctx.step("check receipt", lambda: {"receipt": "ok"})
        approval = ctx.wait_signal("manager approval")
        paid = ctx.step("reimburse", lambda: approval["approved"])
        return {"category": category, "paid": paid}

    return expense_review


def _events(journal: Journal, run_id: str) -> list[tuple]:
    return [(e.kind, e.name, e.patch_id, e.extra.get("deprecated")) for e in journal.export(run_id).events]


CLAIM = {"item": "train to Lyon", "amount": 84}


def test_a_new_run_records_the_marker_flagged_deprecated(journal: Journal) -> None:
    agent = _expense_agent("v3")
    run = journal.start(agent, CLAIM)
    Worker(journal, [agent], "w").run_until_idle()
    journal.signal(run, "manager approval", {"approved": True})
    Worker(journal, [agent], "w").run_until_idle()
    assert journal.status(run) == "completed"
    assert _events(journal, run) == [
        ("step", "classify", None, None),
        ("marker", "patched", "receipt-check", True),
        ("step", "check receipt", None, None),
        ("signal", "manager approval", None, None),
        ("step", "reimburse", None, None),
    ]


def test_a_run_with_the_marker_resumes_under_deprecate_patch(journal: Journal) -> None:
    v2, v3 = _expense_agent("v2"), _expense_agent("v3")
    marked = journal.start(v2, CLAIM)
    Worker(journal, [v2], "v2").run_until_idle()  # parked at the approval, recorded with the marker
    journal.signal(marked, "manager approval", {"approved": True})
    Worker(journal, [v3], "v3").run_until_idle()  # resumes under the deprecated guard
    assert journal.status(marked) == "completed"
    # The marker was consumed: no second marker, no divergence.
    assert _events(journal, marked) == [
        ("step", "classify", None, None),
        ("marker", "patched", "receipt-check", None),
        ("step", "check receipt", None, None),
        ("signal", "manager approval", None, None),
        ("step", "reimburse", None, None),
    ]
    assert journal.export(marked).result == {"category": "travel", "paid": True}


def test_deprecate_patch_itself_never_diverges_but_an_old_run_meets_the_unguarded_branch(journal: Journal) -> None:
    """The call finds no marker in a run recorded before the patch and goes on (Temporal's rule); the
    now unconditional check then stands where that run recorded its wait, and the engine fails it.
    That is why a patch is deprecated only once no in-flight run took the old branch."""
    v1, v3 = _expense_agent("v1"), _expense_agent("v3")
    old = journal.start(v1, CLAIM)
    Worker(journal, [v1], "v1").run_until_idle()
    journal.signal(old, "manager approval", {"approved": True})
    Worker(journal, [v3], "v3").run_until_idle()
    assert journal.status(old) == "failed"
    assert "'check receipt'" in journal.export(old).error.message
    assert "patched" not in journal.export(old).error.message


def test_code_that_still_has_patched_takes_the_new_path_on_a_deprecated_marker(journal: Journal) -> None:
    """A rollback from v3 to v2: the run v3 started resumes under v2 on the new branch."""
    v2, v3 = _expense_agent("v2"), _expense_agent("v3")
    run = journal.start(v3, CLAIM)
    Worker(journal, [v3], "v3").run_until_idle()
    journal.signal(run, "manager approval", {"approved": False})
    Worker(journal, [v2], "v2").run_until_idle()
    assert journal.status(run) == "completed"
    assert [name for _, name, _, _ in _events(journal, run)] == [
        "classify", "patched", "check receipt", "manager approval", "reimburse"
    ]


def test_async_workflows_deprecate_a_patch_too(journal: Journal) -> None:
    @workflow(name="async_expense_review")
    async def async_review(ctx: AsyncContext, claim):
        ctx.deprecate_patch("receipt-check")
        return await ctx.step("check receipt", lambda: claim["amount"] < 100)

    run = journal.start(async_review, CLAIM)
    Worker(journal, [async_review], "w").run_until_idle()
    assert journal.export(run).result is True
    assert _events(journal, run)[0] == ("marker", "patched", "receipt-check", True)


def test_a_journal_from_before_the_flag_gains_its_column(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "old.db"
    with Journal(path, clock=clock):
        pass
    with sqlite3.connect(path) as db:  # the events table as releases before deprecate_patch made it
        db.execute("ALTER TABLE events DROP COLUMN patch_deprecated")
    agent = _expense_agent("v3")
    with Journal(path, clock=clock) as journal:
        run = journal.start(agent, CLAIM)
        Worker(journal, [agent], "w").run_until_idle()
        assert _events(journal, run)[1] == ("marker", "patched", "receipt-check", True)
