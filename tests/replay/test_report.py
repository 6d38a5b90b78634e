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
    return ReplayResult(Path("histories/order-7.json"), "temporal", "OrderWorkflow", "order-7", status="diverged", divergence=divergence, events=22)


def test_text_report_shows_both_sides_the_line_and_neighbouring_commands() -> None:
    text = render_text(sparse_result())
    lines = text.splitlines()
    assert lines[0] == "histories/order-7.json: OrderWorkflow id order-7: diverged (22 recorded events)"
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
    whole = report_data([sparse_result(), ReplayResult(Path("h.json"), "journal", "t")])
    assert whole["summary"] == {"histories": 2, "passed": 1, "diverged": 1, "stale": 0, "error": 0, "warnings": 0, "notes": []}


def test_stale_and_error_results_render_their_reason() -> None:
    stale = ReplayResult(Path("h.json"), "journal", "gone", status="stale", error="no current code for workflow type 'gone'")
    assert render_text(stale) == "h.json: gone: stale\n  no current code for workflow type 'gone'"
