"""Deploy impact on a real DBOS app on SQLite: the dispute desk's runs (three decided, two PENDING in
``DBOS.recv``) replayed against each changed version of the code, with what each run must do written
out by hand.

Function ids of a decided run: 1 classify_dispute, 2 lookup_invoice, 3 the recv, 4 the recv's timeout
``DBOS.sleep`` (written before the wait), 5 the next step (issue_credit when approved, notify_customer
when rejected). A pending run's history ends with ids 1, 2 and 4: it waits in the recv."""

from __future__ import annotations

from impact_kit import ScenarioKit, divergence_facts, replay_json

FILE = "app.py"


def replay_without_effects(kit: ScenarioKit) -> tuple[int, dict[str, dict]]:
    """Replay, and check no step body really ran (each appends to the effects file when it does)."""
    effects = kit.root / "replay-effects.log"
    code, results = replay_json(kit, {"DISPUTE_DESK_EFFECTS": str(effects)})
    assert not effects.exists(), effects.read_text()
    return code, results


def test_v1_replays_every_run_green(dbos_kit: ScenarioKit) -> None:
    code, results = replay_without_effects(dbos_kit)
    assert code == 0
    assert {run: (r["status"], r["in_flight"]) for run, r in results.items()} == {
        "dispute-1": ("passed", False),
        "dispute-2": ("passed", False),
        "dispute-3": ("passed", False),
        "dispute-4": ("passed", True),
        "dispute-5": ("passed", True),
    }
    assert {results[run]["run_status"] for run in dbos_kit.finished} == {"completed"}


def test_a_step_inserted_after_the_recv_breaks_only_the_decided_runs(dbos_kit: ScenarioKit) -> None:
    dbos_kit.switch("audit_after_review")
    audit_line = dbos_kit.line_of('record_audit(dispute["invoice_id"], decision)', "audit_after_review")
    code, results = replay_without_effects(dbos_kit)
    assert code == 1
    assert {run: divergence_facts(r) for run, r in results.items()} == {
        "dispute-1": ("command-mismatch", 5, "issue_credit", FILE, audit_line),
        "dispute-2": ("command-mismatch", 5, "issue_credit", FILE, audit_line),
        "dispute-3": ("command-mismatch", 5, "notify_customer", FILE, audit_line),
        # Pending in the recv, before the insertion: recovery takes the new path.
        "dispute-4": None,
        "dispute-5": None,
    }
    assert {results[run]["divergence"]["issued"]["name"] for run in dbos_kit.finished} == {"record_audit"}


def test_two_steps_reordered_before_the_recv_break_every_run(dbos_kit: ScenarioKit) -> None:
    dbos_kit.switch("lookup_first")
    lookup_line = dbos_kit.line_of('invoice = lookup_invoice(dispute["invoice_id"])', "lookup_first")
    code, results = replay_without_effects(dbos_kit)
    assert code == 1
    expected = ("command-mismatch", 1, "classify_dispute", FILE, lookup_line)
    assert {run: divergence_facts(r) for run, r in results.items()} == {run: expected for run in dbos_kit.run_ids}
    assert {r["divergence"]["issued"]["name"] for r in results.values()} == {"lookup_invoice"}


def test_a_branch_change_breaks_only_the_large_approved_run(dbos_kit: ScenarioKit) -> None:
    dbos_kit.switch("escalate_large")
    escalate_line = dbos_kit.line_of("credit = escalate_to_finance(", "escalate_large")
    code, results = replay_without_effects(dbos_kit)
    assert code == 1
    assert {run: divergence_facts(r) for run, r in results.items()} == {
        "dispute-1": None,
        "dispute-2": ("command-mismatch", 5, "issue_credit", FILE, escalate_line),
        "dispute-3": None,
        "dispute-4": None,
        "dispute-5": None,
    }
    assert results["dispute-2"]["divergence"]["issued"]["name"] == "escalate_to_finance"
