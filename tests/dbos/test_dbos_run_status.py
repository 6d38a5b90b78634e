"""DBOS runs imported from a real system database keep their status through replay: a finished order
(SUCCESS, ``completed``) and one still waiting in ``recv`` (PENDING, ``running``, reported as parked), both broken by a renamed
step, are told apart in the headlines and the pytest summary."""

from __future__ import annotations

import pytest
from dbos_kit import Recording, edited, no_effects, project, replay, report

RENAMED = edited(
    ("def send_receipt(", "def email_receipt("),
    ("        receipt = send_receipt(order_id)", "        receipt = email_receipt(order_id)"),
)


@pytest.mark.slow
def test_the_summary_separates_the_pending_run_that_breaks_from_the_finished_one(
    pytester: pytest.Pytester, pickled: Recording
) -> None:
    root = project(pytester, pickled.histories, RENAMED, only=("order-ok", "order-pending"))
    result = replay(pytester)
    result.assert_outcomes(failed=2)
    text = report(result)
    assert "histories/order-ok.json: place_order id order-ok: diverged (10 recorded events), finished run (completed)" in text
    assert "histories/order-pending.json: place_order id order-pending: diverged (9 recorded events), in-flight run (parked)" in text
    result.stdout.fnmatch_lines([
        "replayed 2 histories: 0 passed, 2 diverged, 0 stale",
        "in-flight runs that break: 1 (1 parked)",
        "finished runs that diverge: 1 (1 completed)",
    ])
    no_effects(root)
