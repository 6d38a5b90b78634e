"""The scenario kits themselves: the base revision holds v1 and the histories, and a change guarded by
hand (the way a verified guard must look) replays every recorded run green while a fresh run of it takes
the new path and records the patch marker — on the real dev server and on a real DBOS app — so the
guard assertions of the impact tests stand on working plumbing."""

from __future__ import annotations

import impact_dbos_kit
import impact_temporal_kit
import pytest
from impact_kit import ScenarioKit, git, replay_json


@pytest.mark.parametrize("kit_name", [
    pytest.param("temporal_kit", marks=[pytest.mark.temporal_server, pytest.mark.slow]), "dbos_kit", "langgraph_kit",
])
def test_the_base_revision_is_v1_with_every_history(kit_name: str, request: pytest.FixtureRequest) -> None:
    kit: ScenarioKit = request.getfixturevalue(kit_name)
    kit.switch("audit_after_review")
    assert git(kit.root, "show", f"{kit.base}:{kit.code_file}") + "\n" == kit.v1
    committed = git(kit.root, "ls-tree", "-r", "--name-only", kit.base, "histories").splitlines()
    histories = [path for path in committed if path.endswith(".json")]
    assert sorted(histories) == sorted(str(path.relative_to(kit.root)) for path in kit.history_files.values())
    assert len(histories) == 5
    # The import's record (how to import the folder again) is committed beside the histories.
    assert sorted(set(committed) - set(histories)) == ["histories/.replaytest-imports"]
    assert git(kit.root, "status", "--porcelain") == f"M {kit.code_file}"


TEMPORAL_GUARDED_AUDIT = (
    impact_temporal_kit.WAIT
    + '        if workflow.patched("audit-after-review"):\n'
    + "".join("    " + line for line in impact_temporal_kit.AUDIT.splitlines(keepends=True))
)


@pytest.mark.temporal_server
@pytest.mark.slow
def test_temporal_audit_guarded_by_hand_keeps_every_run_and_marks_new_ones(temporal_kit: ScenarioKit) -> None:
    guarded = temporal_kit.v1.replace(impact_temporal_kit.WAIT, TEMPORAL_GUARDED_AUDIT)
    (temporal_kit.root / temporal_kit.code_file).write_text(guarded, encoding="utf-8")
    code, results = replay_json(temporal_kit)
    assert (code, {r["status"] for r in results.values()}) == (0, {"passed"})
    result, history = impact_temporal_kit.fresh_run(temporal_kit, "dispute-fresh-guarded", "approve")
    assert result == {"category": "billing-error", "decision": "approve", "credit": "credit-INV-200-75.00"}
    assert impact_temporal_kit.patch_markers(history) == ["audit-after-review"]
    assert impact_temporal_kit.scheduled_activities(history) == ["classify_dispute", "lookup_invoice", "record_audit", "issue_credit", "notify_customer"]


DBOS_GUARDED_AUDIT = (
    impact_dbos_kit.RECV + '    if DBOS.patch("audit-after-review"):\n' + "    " + impact_dbos_kit.AUDIT
)


def test_dbos_audit_guarded_by_hand_keeps_every_run_and_marks_new_ones(dbos_kit: ScenarioKit) -> None:
    guarded = dbos_kit.v1.replace(impact_dbos_kit.RECV, DBOS_GUARDED_AUDIT)
    (dbos_kit.root / dbos_kit.code_file).write_text(guarded, encoding="utf-8")
    code, results = replay_json(dbos_kit, {"DISPUTE_DESK_EFFECTS": str(dbos_kit.root / "replay-effects.log")})
    assert (code, {r["status"] for r in results.values()}) == (0, {"passed"})
    output, history_file = impact_dbos_kit.fresh_run(dbos_kit, "dispute-fresh-guarded", "approve")
    assert output == {"category": "billing-error", "decision": "approve", "credit": "credit-INV-200-75.00"}
    assert impact_dbos_kit.step_names(history_file) == [
        "classify_dispute", "lookup_invoice", "DBOS.recv", "DBOS.sleep", "patched audit-after-review",
        "record_audit", "issue_credit", "notify_customer",
    ]
