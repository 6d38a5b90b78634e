"""The journal replayer records every ``ctx.patched``/``ctx.deprecate_patch`` answer on the result
(``ReplayResult.patch_decisions``, JSON ``patch_decisions``), and replays ``deprecate_patch`` with
Temporal's semantics. Histories are recorded with the real journal runtime (``replaykit.record``)."""

from __future__ import annotations

from pathlib import Path

from replaykit import record, replay, tagged_line

from replaytest.journal import workflow
from replaytest.replay.divergence import PatchDecision, SourcePosition
from replaytest.replay.report import result_data

APPROVED = [("manager approval", {"approved": True})]
CLAIM = {"item": "taxi", "amount": 31}


@workflow(name="expense_review")
def before_patch(ctx, claim):
    ctx.step("classify", lambda: "travel")
    approval = ctx.wait_signal("manager approval")
    return ctx.step("reimburse", lambda: approval["approved"])


@workflow(name="expense_review")
def guarded(ctx, claim):
    ctx.step("classify", lambda: "travel")
    if ctx.patched("receipt-check"):  # [guard]
        ctx.step("check receipt", lambda: "ok")
    approval = ctx.wait_signal("manager approval")
    return ctx.step("reimburse", lambda: approval["approved"])


@workflow(name="expense_review")
def deprecated(ctx, claim):
    ctx.step("classify", lambda: "travel")
    ctx.deprecate_patch("receipt-check")  # [deprecated]
    ctx.step("check receipt", lambda: "ok")
    approval = ctx.wait_signal("manager approval")
    return ctx.step("reimburse", lambda: approval["approved"])


@workflow(name="expense_review")
def removed(ctx, claim):
    ctx.step("classify", lambda: "travel")
    ctx.step("check receipt", lambda: "ok")
    approval = ctx.wait_signal("manager approval")
    return ctx.step("reimburse", lambda: approval["approved"])


def _at(tag: str) -> SourcePosition:
    return SourcePosition(__file__, tagged_line(guarded, tag), {"guard": "guarded", "deprecated": "deprecated"}[tag])


def test_a_history_with_the_marker_takes_the_new_path(tmp_path: Path) -> None:
    history = record(tmp_path, guarded, CLAIM, signals=APPROVED)
    result = replay(history, guarded)
    assert result.status == "passed"
    assert result.patch_decisions == [PatchDecision("receipt-check", True, 2, _at("guard"), False, False)]


def test_a_parked_run_past_the_patch_point_without_the_marker_took_the_old_path(tmp_path: Path) -> None:
    history = record(tmp_path, before_patch, CLAIM)  # parked at the approval
    result = replay(history, guarded)
    assert (result.status, result.run_status) == ("passed", "parked")
    # The history ends at event 1; the wait it records stands at position 2, where patched() asked.
    assert result.patch_decisions == [PatchDecision("receipt-check", False, 2, _at("guard"), False, None)]


def test_a_completed_run_without_the_marker_took_the_old_path(tmp_path: Path) -> None:
    history = record(tmp_path, before_patch, CLAIM, signals=APPROVED)
    result = replay(history, guarded)
    assert result.status == "passed"
    # Event 2 holds the signal the old run received there, not a marker.
    assert result.patch_decisions == [PatchDecision("receipt-check", False, 2, _at("guard"), False, None)]


def test_a_run_parked_before_the_patch_point_records_no_decision(tmp_path: Path) -> None:
    @workflow(name="expense_intake")
    def intake_v1(ctx, claim):
        ctx.wait_signal("receipt uploaded")
        return ctx.step("file", lambda: "filed")

    @workflow(name="expense_intake")
    def intake_v2(ctx, claim):
        ctx.wait_signal("receipt uploaded")
        if ctx.patched("ocr"):
            ctx.step("read receipt", lambda: "text")
        return ctx.step("file", lambda: "filed")

    history = record(tmp_path, intake_v1, CLAIM)
    result = replay(history, intake_v2)
    assert (result.status, result.patch_decisions) == ("passed", [])


def test_deprecate_patch_consumes_the_marker_and_is_content_without_one(tmp_path: Path) -> None:
    marked = record(tmp_path, guarded, CLAIM, name="marked", signals=APPROVED)
    result = replay(marked, deprecated)
    assert result.status == "passed"
    assert result.patch_decisions == [PatchDecision("receipt-check", True, 2, _at("deprecated"), True, False)]
    # A history recorded under the deprecated call (its marker flagged) replays on the new path under
    # code that still has patched(), and under the deprecated call.
    flagged = record(tmp_path, deprecated, CLAIM, name="flagged", signals=APPROVED)
    for code, tag, is_deprecated in ((guarded, "guard", False), (deprecated, "deprecated", True)):
        result = replay(flagged, code)
        assert result.status == "passed", result.divergence
        assert result.patch_decisions == [PatchDecision("receipt-check", True, 2, _at(tag), is_deprecated, True)]


def test_removing_the_call_while_a_history_has_the_marker_is_a_patch_mismatch(tmp_path: Path) -> None:
    # The journal counts positions: a deprecated marker is not skipped (unlike sdk-core's replay).
    flagged = record(tmp_path, deprecated, CLAIM, signals=APPROVED)
    result = replay(flagged, removed)
    assert result.status == "diverged"
    assert (result.divergence.kind, result.divergence.position) == ("patch-mismatch", 2)


def test_the_replay_json_lists_the_decisions(tmp_path: Path) -> None:
    history = record(tmp_path, before_patch, CLAIM)
    data = result_data(replay(history, guarded))
    assert data["run_started_at"] is None  # the neutral history records no start time
    assert data["patch_decisions"] == [
        {
            "patch_id": "receipt-check",
            "taken": False,
            "deprecated": False,
            "marker_deprecated": None,
            "position": 2,
            "source": {"path": data["patch_decisions"][0]["source"]["path"], "line": tagged_line(guarded, "guard"),
                       "function": "guarded"},
        }
    ]
    assert data["patch_decisions"][0]["source"]["path"].endswith("test_replay_patch_decisions.py")
