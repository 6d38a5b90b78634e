"""Deploy impact on LangGraph's functional API (a real SqliteSaver): the dispute graph's threads (three
resumed with the reviewer's decision, two parked at the interrupt) replayed against each changed
version of the code, with what each thread must do written out by hand.

Events of a completed thread: 1 classify_dispute, 2 lookup_invoice, 3 the task after the review
(issue_credit when approved, notify_customer when rejected), then the rest, and the answered interrupt
last (LangGraph does not keep where an interrupt stood among the task calls; it is matched by count). A
parked thread's history is 1, 2 and the pending interrupt at 3."""

from __future__ import annotations

from impact_kit import ScenarioKit, divergence_facts, replay_json

FILE = "dispute_graph.py"


def replay_without_effects(kit: ScenarioKit) -> tuple[int, dict[str, dict]]:
    """Replay, and check no task body really ran (each appends to the effects file when it does)."""
    effects = kit.root / "replay-effects.log"
    code, results = replay_json(kit, {"DISPUTE_GRAPH_EFFECTS": str(effects)})
    assert not effects.exists(), effects.read_text()
    return code, results


def test_v1_replays_every_thread_green(langgraph_kit: ScenarioKit) -> None:
    code, results = replay_without_effects(langgraph_kit)
    assert code == 0
    assert {run: (r["status"], r["run_status"], r["in_flight"]) for run, r in results.items()} == {
        "dispute-1": ("passed", "completed", False),
        "dispute-2": ("passed", "completed", False),
        "dispute-3": ("passed", "completed", False),
        "dispute-4": ("passed", "parked", True),
        "dispute-5": ("passed", "parked", True),
    }


def test_a_task_inserted_after_the_interrupt_breaks_only_the_completed_threads(langgraph_kit: ScenarioKit) -> None:
    langgraph_kit.switch("audit_after_review")
    audit_line = langgraph_kit.line_of('record_audit(dispute["invoice_id"], decision)', "audit_after_review")
    code, results = replay_without_effects(langgraph_kit)
    assert code == 1
    assert {run: divergence_facts(r) for run, r in results.items()} == {
        "dispute-1": ("command-mismatch", 3, "issue_credit", FILE, audit_line),
        "dispute-2": ("command-mismatch", 3, "issue_credit", FILE, audit_line),
        "dispute-3": ("command-mismatch", 3, "notify_customer", FILE, audit_line),
        # Parked at the interrupt, before the insertion: they take the new path when resumed.
        "dispute-4": None,
        "dispute-5": None,
    }
    assert {results[run]["divergence"]["issued"]["name"] for run in langgraph_kit.finished} == {"record_audit"}


def test_two_tasks_reordered_before_the_interrupt_break_every_thread(langgraph_kit: ScenarioKit) -> None:
    langgraph_kit.switch("lookup_first")
    lookup_line = langgraph_kit.line_of('invoice = lookup_invoice(dispute["invoice_id"])', "lookup_first")
    code, results = replay_without_effects(langgraph_kit)
    assert code == 1
    expected = ("command-mismatch", 1, "classify_dispute", FILE, lookup_line)
    assert {run: divergence_facts(r) for run, r in results.items()} == {run: expected for run in langgraph_kit.run_ids}
