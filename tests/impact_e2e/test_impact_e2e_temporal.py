"""Deploy impact on a real Temporal dev server: the invoice-dispute runs (three decided, two waiting for
the reviewer's signal) replayed against each changed version of the code, with what each run must do
written out by hand.

Event ids of a decided run: 1 started, 2-4 first workflow task, 5-7 classify_dispute, 8-10 task,
11-13 lookup_invoice, 14-16 task (the run parks at the wait here: the in-flight histories end at 16),
17 the review signal, 18-20 task, 21 the next activity scheduled (issue_credit when approved,
notify_customer when rejected)."""

from __future__ import annotations

import pytest
from impact_kit import ScenarioKit, divergence_facts, replay_json

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

FILE = "dispute_agent.py"


def test_v1_replays_every_run_green(temporal_kit: ScenarioKit) -> None:
    code, results = replay_json(temporal_kit)
    assert code == 0
    assert {run: (r["status"], r["run_status"], r["in_flight"]) for run, r in results.items()} == {
        "dispute-1": ("passed", "completed", False),
        "dispute-2": ("passed", "completed", False),
        "dispute-3": ("passed", "completed", False),
        "dispute-4": ("passed", "parked", True),
        "dispute-5": ("passed", "parked", True),
    }


def test_an_activity_inserted_after_the_wait_breaks_only_the_decided_runs(temporal_kit: ScenarioKit) -> None:
    temporal_kit.switch("audit_after_review")
    audit_line = temporal_kit.line_of("record_audit, args=", "audit_after_review") - 1  # the call's first line
    code, results = replay_json(temporal_kit)
    assert code == 1
    assert {run: divergence_facts(r) for run, r in results.items()} == {
        "dispute-1": ("command-mismatch", 21, "issue_credit", FILE, audit_line),
        "dispute-2": ("command-mismatch", 21, "issue_credit", FILE, audit_line),
        "dispute-3": ("command-mismatch", 21, "notify_customer", FILE, audit_line),
        # Parked before the insertion: they take the new path when the signal comes.
        "dispute-4": None,
        "dispute-5": None,
    }
    assert {results[run]["divergence"]["issued"]["name"] for run in temporal_kit.finished} == {"record_audit"}


def test_two_activities_reordered_before_the_wait_break_every_run(temporal_kit: ScenarioKit) -> None:
    temporal_kit.switch("lookup_first")
    lookup_line = temporal_kit.line_of("invoice = await workflow.execute_activity(lookup_invoice", "lookup_first")
    code, results = replay_json(temporal_kit)
    assert code == 1
    expected = ("command-mismatch", 5, "classify_dispute", FILE, lookup_line)
    assert {run: divergence_facts(r) for run, r in results.items()} == {run: expected for run in temporal_kit.run_ids}
    assert {r["divergence"]["issued"]["name"] for r in results.values()} == {"lookup_invoice"}


def test_a_branch_change_breaks_only_the_large_approved_run(temporal_kit: ScenarioKit) -> None:
    temporal_kit.switch("escalate_large")
    escalate_line = temporal_kit.line_of("escalate_to_finance, args=", "escalate_large") - 1
    code, results = replay_json(temporal_kit)
    assert code == 1
    assert {run: divergence_facts(r) for run, r in results.items()} == {
        "dispute-1": None,  # approved, 120: still credited
        "dispute-2": ("command-mismatch", 21, "issue_credit", FILE, escalate_line),  # approved, 900
        "dispute-3": None,  # rejected
        "dispute-4": None,
        "dispute-5": None,
    }
    assert results["dispute-2"]["divergence"]["issued"]["name"] == "escalate_to_finance"
