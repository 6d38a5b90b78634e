"""The shared report renders any replayer's ``ReplayResult`` (journal or engine-native, sparse positions)."""

from __future__ import annotations

import json
from pathlib import Path

from replaytest.replay.divergence import CommandView, Divergence, ReplayResult, SourcePosition
from replaytest.replay.report import render_text, report_data, result_data


def sparse_result() -> ReplayResult:
    """Shaped like an engine that numbers events (Temporal): commands at ids 5, 11, 16, 22."""
    recorded = (
        CommandView("activity", "charge", 5),
        CommandView("timer", "cool down", 11),
        CommandView("activity", "ship", 16),
        CommandView("complete", "", 22),
    )
    issued = (CommandView("activity", "charge", 5), CommandView("timer", "cool down", 11), CommandView("activity", "refund", 16))
    divergence = Divergence(
        kind="command-mismatch",
        position=16,
        message="activity 'refund' issued where the history scheduled 'ship'",
        recorded=recorded[2],
        issued=issued[2],
        recorded_context=recorded,
        issued_context=issued,
        source=SourcePosition("app/orders.py", 42, "OrderWorkflow.run"),
    )
    return ReplayResult(Path("histories/order-7.json"), "temporal", "OrderWorkflow", "order-7", status="diverged", divergence=divergence, events=22,
                        run_status="parked")


def test_text_report_shows_both_sides_the_line_and_neighbouring_commands() -> None:
    text = render_text(sparse_result())
    lines = text.splitlines()
    assert lines[0] == "histories/order-7.json: OrderWorkflow id order-7: diverged (22 recorded events), in-flight run (parked)"
    assert lines[1] == "  command-mismatch at event #16: activity 'refund' issued where the history scheduled 'ship'"
    assert lines[2] == "    recorded  activity 'ship'"
    assert lines[3] == "    issued    activity 'refund'"
    assert lines[4] == "    at        app/orders.py:42 in OrderWorkflow.run"
    rows = [line for line in lines if line.strip().startswith(("#", ">"))]
    assert [row.split()[0 if not row.lstrip().startswith(">") else 1] for row in rows] == ["#5", "#11", "#16", "#22"]
    assert any(row.lstrip().startswith("> #16 activity 'ship'") and row.endswith("| activity 'refund'") for row in rows)
    assert any(row.strip().startswith("#11 timer 'cool down'") and row.endswith("| same") for row in rows)


def test_details_widen_the_context() -> None:
    base = sparse_result()
    many = tuple(CommandView("step", f"s{i}", i) for i in range(1, 30))
    base.divergence = Divergence(kind="extra-command", position=15, message="m", recorded_context=many, issued_context=many[:14])
    assert len([l for l in render_text(base).splitlines() if "#" in l and "|" in l]) == 5
    assert len([l for l in render_text(base, details=True).splitlines() if "#" in l and "|" in l]) == 13


def test_data_form_is_plain_json() -> None:
    data = result_data(sparse_result())
    assert json.loads(json.dumps(data)) == data
    assert data["divergence"]["source"] == {"path": "app/orders.py", "line": 42, "function": "OrderWorkflow.run"}
    assert data["divergence"]["recorded"] == {"kind": "activity", "name": "ship", "position": 16}
    assert (data["run_status"], data["in_flight"]) == ("parked", True)
    whole = report_data([sparse_result(), ReplayResult(Path("h.json"), "journal", "t", run_status="completed")])
    assert whole["summary"] == {
        "histories": 2, "passed": 1, "diverged": 1, "stale": 0, "error": 0, "warnings": 0, "notes": [],
        "diverged_in_flight": 1, "diverged_finished": 0, "diverged_run_status_unknown": 0,
        "diverged_by_run_status": {"completed": 0, "failed": 0, "running": 0, "parked": 1, "unknown": 0},
    }
    assert [entry["run_status"] for entry in whole["results"]] == ["parked", "completed"]


def test_stale_and_error_results_render_their_reason() -> None:
    stale = ReplayResult(Path("h.json"), "journal", "gone", status="stale", error="no current code for workflow type 'gone'")
    assert render_text(stale) == "h.json: gone: stale, run status unknown\n  no current code for workflow type 'gone'"
    stale.run_status = "running"
    assert render_text(stale).splitlines()[0] == "h.json: gone: stale, in-flight run (running)"
    unreadable = ReplayResult(Path("h.json"), "journal", "?", status="error", error="h.json: $.status: expected one of …")
    assert render_text(unreadable).splitlines()[0] == "h.json: ?: error"  # the error line says why, not "unknown"


def test_same_only_for_calls_known_to_be_equal_and_issued_rows_show_their_line() -> None:
    recorded = (CommandView("activity", "say", 5, "sha256:" + "a" * 64), CommandView("activity", "say", 11))
    issued = (
        CommandView("activity", "say", 5, "sha256:" + "b" * 64, detail={"source": "wf.py:20"}),
        CommandView("activity", "say", 11),  # arguments unknown on both sides: not provably the same
    )
    divergence = Divergence("command-mismatch", 16, "…", None, CommandView("timer", "", 16), recorded, issued)
    rows = render_text(ReplayResult(Path("h.json"), "temporal", "Hello", status="diverged", divergence=divergence)).splitlines()
    first = next(row for row in rows if row.strip().startswith("#5 "))
    second = next(row for row in rows if row.strip().startswith("#11 "))
    assert first.endswith("| activity 'say' args sha256:bbbbbbbbbbbb @ wf.py:20")
    assert second.endswith("| activity 'say'")
    # No source: the report says the line is unknown rather than leaving it out.
    assert any(row.strip().startswith("at        line unknown") for row in rows)
