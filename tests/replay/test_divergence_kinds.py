"""Acceptance: every divergence kind, from a history recorded by the real journal runtime and a changed
version of the code, with its kind, position and the source line in the report."""

from __future__ import annotations

from pathlib import Path

import pytest
import replay_apps as apps
from replaykit import record, replay, tagged_line

from replaytest.replay.report import render_text, result_data

TICKET = {"text": "ship order 7"}


@pytest.fixture
def orders_history(tmp_path: Path) -> Path:
    return record(tmp_path, apps.recorded, TICKET, name="orders")


def assert_diverged(result, kind: str, position: int, fn, tag: str) -> None:
    assert result.status == "diverged", render_text(result)
    divergence = result.divergence
    assert divergence.kind == kind
    assert divergence.position == position
    line = tagged_line(fn, tag)
    assert divergence.source is not None
    assert Path(divergence.source.path).name == "replay_apps.py"
    assert divergence.source.line == line
    text = render_text(result)
    assert f"{kind} at event #{position}" in text
    assert f"replay_apps.py:{line}" in text
    data = result_data(result)
    assert data["divergence"]["kind"] == kind
    assert data["divergence"]["source"]["line"] == line


def test_recorded_code_replays_cleanly_and_never_runs_steps(orders_history: Path) -> None:
    apps.CALLS.clear()
    result = replay(orders_history, apps.recorded)
    assert result.status == "passed", render_text(result)
    assert result.events == 3 and not result.warnings
    assert apps.CALLS == []


def test_command_mismatch(orders_history: Path) -> None:
    result = replay(orders_history, apps.renamed_step)
    assert_diverged(result, "command-mismatch", 2, apps.renamed_step, "command-mismatch")
    assert result.divergence.recorded.name == "lookup"
    assert result.divergence.issued.name == "search"
    assert "recorded  step 'lookup'" in render_text(result)
    assert "issued    step 'search'" in render_text(result)


def test_args_mismatch_warns_by_default_and_fails_when_strict(orders_history: Path) -> None:
    relaxed = replay(orders_history, apps.changed_args)
    assert relaxed.status == "passed"
    [warning] = relaxed.warnings
    assert warning.kind == "args-mismatch" and warning.severity == "warning" and warning.position == 2
    assert warning.source.line == tagged_line(apps.changed_args, "args-mismatch")

    strict = replay(orders_history, apps.changed_args, strict_args=True)
    assert_diverged(strict, "args-mismatch", 2, apps.changed_args, "args-mismatch")
    assert strict.divergence.recorded.args_digest != strict.divergence.issued.args_digest


def test_extra_command(orders_history: Path) -> None:
    result = replay(orders_history, apps.added_step)
    assert_diverged(result, "extra-command", 4, apps.added_step, "extra-command")
    assert result.divergence.recorded is None
    assert result.divergence.issued.name == "audit"


def test_missing_command(orders_history: Path) -> None:
    result = replay(orders_history, apps.dropped_step)
    # Named at the last command the code issued before it finished.
    assert_diverged(result, "missing-command", 3, apps.dropped_step, "missing-command")
    assert result.divergence.recorded.name == "notify"
    assert result.divergence.issued is None


def test_result_mismatch(orders_history: Path) -> None:
    result = replay(orders_history, apps.other_result)
    assert_diverged(result, "result-mismatch", 4, apps.other_result, "result-mismatch")
    assert '"value": 11' in result.divergence.message and '"value": 10' in result.divergence.message


def test_prompt_drift_warns_for_a_completed_history(orders_history: Path) -> None:
    result = replay(orders_history, apps.reworded_prompt)
    assert result.status == "passed"
    [warning] = result.warnings
    assert warning.kind == "prompt-drift" and warning.position == 1
    assert warning.source.line == tagged_line(apps.reworded_prompt, "prompt-drift")
    assert "warning: prompt-drift at event #1" in render_text(result)


def test_prompt_drift_fails_when_the_policy_says_so(orders_history: Path) -> None:
    result = replay(orders_history, apps.reworded_prompt, prompts_completed="fail")
    assert_diverged(result, "prompt-drift", 1, apps.reworded_prompt, "prompt-drift")
    assert result.divergence.recorded.prompt_version != result.divergence.issued.prompt_version
    ignored = replay(orders_history, apps.reworded_prompt, prompts_completed="ignore")
    assert ignored.status == "passed" and not ignored.warnings


def test_prompt_drift_fails_for_a_parked_history(tmp_path: Path) -> None:
    parked = record(tmp_path, apps.approval_v1, TICKET, name="approval")
    assert '"status": "parked"' in parked.read_text()
    result = replay(parked, apps.approval_v2_reworded)
    assert_diverged(result, "prompt-drift", 1, apps.approval_v2_reworded, "running-drift")


def test_patch_mismatch_when_the_code_no_longer_asks_for_a_recorded_patch(tmp_path: Path) -> None:
    history = record(tmp_path, apps.billing_v2, 5, name="billing")
    assert '"patch_id": "tax"' in history.read_text()
    assert replay(history, apps.billing_v2).status == "passed"
    result = replay(history, apps.billing_v3_patch_removed)
    assert_diverged(result, "patch-mismatch", 1, apps.billing_v3_patch_removed, "patch-mismatch")
    assert result.divergence.recorded.detail == {"patch_id": "tax"}


def test_patch_mismatch_when_the_code_asks_for_another_patch(tmp_path: Path) -> None:
    history = record(tmp_path, apps.billing_v2, 5, name="billing")
    result = replay(history, apps.billing_other_patch)
    # patched("vat") is False (recorded before it existed); the recorded "tax" marker is then not asked for.
    assert_diverged(result, "patch-mismatch", 1, apps.billing_other_patch, "other-patch")
    assert "patched('tax')" in result.divergence.message


def test_a_newer_patch_before_a_recorded_one_takes_its_old_path(tmp_path: Path) -> None:
    history = record(tmp_path, apps.billing_v2, 5, name="billing")
    apps.CALLS.clear()
    result = replay(history, apps.billing_two_patches)
    assert result.status == "passed", render_text(result)


def test_old_history_without_the_marker_takes_the_old_path(tmp_path: Path) -> None:
    old = record(tmp_path, apps.billing_v1, 5, name="billing-old")
    apps.CALLS.clear()
    result = replay(old, apps.billing_v2)
    assert result.status == "passed", render_text(result)
    assert apps.CALLS == []


@pytest.mark.parametrize(
    ("fn", "call"),
    [
        (apps.reads_clock, "time.time"),
        (apps.reads_datetime, "datetime.now"),
        (apps.reads_module_datetime, "date.today"),
        (apps.makes_uuid, "uuid.uuid4"),
        (apps.rolls_dice, "random.randint"),
    ],
)
def test_nondeterministic_call(orders_history: Path, fn, call: str) -> None:
    result = replay(orders_history, fn)
    tag = "nondeterministic-call" if call == "time.time" else call
    assert_diverged(result, "nondeterministic-call", 2, fn, tag)
    assert f"{call}()" in result.divergence.message


def test_a_swallowed_guard_trip_is_still_reported(orders_history: Path) -> None:
    result = replay(orders_history, apps.swallows_guard)
    assert_diverged(result, "nondeterministic-call", 2, apps.swallows_guard, "swallowed")


def test_recorded_clock_uuid_and_random_replay_cleanly(tmp_path: Path) -> None:
    history = record(tmp_path, apps.stamped, {}, name="stamped")
    result = replay(history, apps.stamped)
    assert result.status == "passed", render_text(result)
    assert result.events == 3


def test_a_parked_history_stops_where_the_run_would_resume(tmp_path: Path) -> None:
    parked = record(tmp_path, apps.approval_v1, TICKET, name="approval")
    # The new code adds a step after the wait: past the end of a parked history that is the future.
    result = replay(parked, apps.approval_v2_extra_step)
    assert result.status == "passed", render_text(result)


def test_a_completed_history_with_the_signal_replays_and_checks_what_follows(tmp_path: Path) -> None:
    done = record(tmp_path, apps.approval_v1, TICKET, name="approval", signals=[("approved", {"ok": True})])
    assert replay(done, apps.approval_v1).status == "passed"
    result = replay(done, apps.approval_v2_extra_step)
    assert result.status == "diverged" and result.divergence.kind == "extra-command"
    assert result.divergence.position == 4


def test_stale_history_names_the_missing_type(orders_history: Path) -> None:
    result = replay(orders_history, apps.billing_v1)
    assert result.status == "stale"
    assert "'orders'" in result.error and "billing" in result.error
    assert "stale" in render_text(result)


def test_malformed_history_is_an_error_naming_file_and_json_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "replaytest-history", "format_version": 1, "workflow": {"type": "orders"}, "status": "x", "events": []}')
    result = replay(bad, apps.recorded)
    assert result.status == "error"
    assert "bad.json" in result.error and "$.workflow" in result.error


def test_recorded_failures_are_raised_again_and_timers_compared(tmp_path: Path) -> None:
    history = record(tmp_path, apps.payment_v1, 10, name="payment")
    text = history.read_text()
    assert '"type": "ValueError"' in text and '"duration_s": 60.0' in text
    apps.CALLS.clear()
    assert replay(history, apps.payment_v1).status == "passed"
    assert apps.CALLS == []
    longer = replay(history, apps.payment_longer_back_off)
    assert longer.status == "passed"
    [warning] = longer.warnings
    assert warning.kind == "args-mismatch" and "sleeps 120s, recorded 60s" in warning.message
    strict = replay(history, apps.payment_longer_back_off, strict_args=True)
    assert_diverged(strict, "args-mismatch", 2, apps.payment_longer_back_off, "timer-args")


def test_async_workflows_replay_under_the_guards(tmp_path: Path) -> None:
    history = record(tmp_path, apps.payment_v1, 10, name="payment")
    assert replay(history, apps.payment_async).status == "passed"
    result = replay(history, apps.payment_async_clock)
    assert_diverged(result, "nondeterministic-call", 2, apps.payment_async_clock, "async-clock")


def test_continue_as_new_is_a_command_like_any_other(tmp_path: Path) -> None:
    history = record(tmp_path, apps.counter_v1, 0, name="counter")
    assert '"kind": "continue-as-new"' in history.read_text()
    assert replay(history, apps.counter_v1).status == "passed"
    result = replay(history, apps.counter_never_continues)
    assert_diverged(result, "missing-command", 2, apps.counter_never_continues, "no-continue")


def test_a_failed_history_must_fail_the_same_way(tmp_path: Path) -> None:
    history = record(tmp_path, apps.strict_v1, {}, name="strict")
    assert '"status": "failed"' in history.read_text()
    assert replay(history, apps.strict_v1).status == "passed"
    completes = replay(history, apps.strict_relaxed)
    assert_diverged(completes, "result-mismatch", 2, apps.strict_relaxed, "now-completes")
    assert "the history failed with ValueError: value too large" in completes.divergence.message
    other = replay(history, apps.strict_other_error)
    assert_diverged(other, "result-mismatch", 2, apps.strict_other_error, "other-error")
    assert "KeyError" in other.divergence.message


def test_a_recorded_patch_the_finished_code_never_asked_for_is_a_patch_mismatch(tmp_path: Path) -> None:
    history = record(tmp_path, apps.closing_v2, 5, name="closing")
    result = replay(history, apps.closing_patch_dropped)
    assert_diverged(result, "patch-mismatch", 2, apps.closing_patch_dropped, "dropped-at-end")
