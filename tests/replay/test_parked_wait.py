"""A parked journal run is checked where it waits: its history records the pending wait (``waiting``), and
the changed code must reach that wait before it issues anything the history does not hold.

Each case records a real run of ``parked_refund_agent.refund_agent`` parked at its ``approval`` signal, replays
it against a changed version, and — for the breaking changes — resumes the run with the journal runtime
itself under that version, to pin what the engine really does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from parked_refund_agent import (
    fails_after_lookup,
    fraud_check_first,
    no_wait,
    refund_agent,
    small_refunds_paid,
    survey_after,
    ticket,
)
from replaykit import record, replay, tagged_line

from replaytest.history import load_history, save_history
from replaytest.journal import Journal, Timing, Worker
from replaytest.plugins.journal.replayer import NO_WAIT_NOTE


@pytest.fixture
def parked(tmp_path: Path) -> tuple[Path, Path]:
    """A run parked at the approval signal, its journal database, and an empty effects log."""
    history = record(tmp_path, refund_agent, ticket(tmp_path), name="parked")
    effects = tmp_path / "effects.log"
    assert effects.read_text().split() == ["classify", "lookup_order"], "the recording did not run the steps"
    effects.write_text("")
    return history, effects


def test_the_history_records_the_wait_the_run_stands_at(parked) -> None:
    history, _ = parked
    document = json.loads(history.read_text())
    assert document["status"] == "parked"
    assert document["waiting"] == {"kind": "signal", "name": "approval"}
    assert [event["name"] for event in document["events"]] == ["classify", "lookup order"]


def test_unchanged_code_and_a_change_after_the_wait_pass(parked) -> None:
    history, effects = parked
    for code in (refund_agent, survey_after):
        result = replay(history, code)
        assert result.status == "passed", (code.__name__, result.divergence)
        assert NO_WAIT_NOTE not in result.notes
    assert effects.read_text() == "", "a step body ran during replay"


def test_a_step_inserted_before_the_wait_breaks_the_parked_run(parked, tmp_path: Path) -> None:
    history, effects = parked
    result = replay(history, fraud_check_first)
    assert result.status == "diverged" and result.in_flight
    divergence = result.divergence
    assert divergence.kind == "command-mismatch" and divergence.position == 3
    assert (divergence.recorded.kind, divergence.recorded.name) == ("signal", "approval")
    assert (divergence.issued.kind, divergence.issued.name) == ("step", "check fraud")
    assert divergence.source.line == tagged_line(fraud_check_first, "fraud")
    assert divergence.message == (
        "the code issued step 'check fraud' where this parked run waits for signal 'approval' "
        "(a resumed run must reach that wait before anything new)"
    )
    assert effects.read_text() == ""
    # What the engine does: resumed under the new code, the journal finds the wait at position 3 and
    # fails the run (before this check existed, replay passed this history).
    with Journal(tmp_path / "parked.sqlite3") as journal:
        journal.signal("run-parked", "approval", {"ok": True})
        Worker(journal, [fraud_check_first], timing=Timing(sleep=lambda seconds: None)).run_until_idle()
        resumed = journal.export("run-parked")
    assert resumed.status == "failed" and resumed.error is not None
    assert resumed.error.type == "JournalDivergence"
    assert "the journal holds signal 'approval' but the code now issues step 'check fraud'" in resumed.error.message


def test_a_branch_before_the_wait_breaks_the_parked_run(parked) -> None:
    history, effects = parked
    result = replay(history, small_refunds_paid)
    assert result.status == "diverged"
    assert result.divergence.kind == "command-mismatch" and result.divergence.position == 3
    assert result.divergence.issued.name == "issue refund"
    assert result.divergence.source.line == tagged_line(small_refunds_paid, "autopay")
    assert effects.read_text() == ""


def test_code_that_no_longer_waits_is_a_missing_command(parked) -> None:
    history, _ = parked
    result = replay(history, no_wait)
    assert result.status == "diverged"
    assert result.divergence.kind == "missing-command" and result.divergence.position == 3
    assert result.divergence.message == "the code finished without reaching the signal 'approval' this parked run waits at"


def test_code_that_now_fails_after_the_last_event_is_a_result_mismatch(parked) -> None:
    history, _ = parked
    for waiting in (True, False):
        path = history if waiting else _without_waiting(history)
        result = replay(path, fails_after_lookup)
        assert result.status == "diverged", waiting
        assert result.divergence.kind == ("missing-command" if waiting else "result-mismatch")
    assert "the code now fails with ValueError: refunds are paused" in result.divergence.message


def test_a_history_without_its_wait_still_replays_and_says_what_it_could_not_check(parked) -> None:
    history, _ = parked
    old = _without_waiting(history)
    result = replay(old, fraud_check_first)
    assert result.status == "passed"
    assert NO_WAIT_NOTE in result.notes


def test_patched_before_the_wait_takes_the_old_path(parked, tmp_path: Path) -> None:
    from replaytest.journal import workflow

    taken: list[bool] = []

    @workflow(name="refund_agent", version="7")
    def guarded(ctx, request):
        ctx.step("classify", lambda t: "refund", request)
        ctx.step("lookup order", lambda t: {}, request)
        new = ctx.patched("fraud-check")
        taken.append(new)
        if new:
            ctx.step("check fraud", lambda t: False, request)
        ctx.wait_signal("approval")
        return {"refund": None}

    history, _ = parked
    result = replay(history, guarded)
    assert result.status == "passed", result.divergence
    assert taken == [False], "a parked run replays up to its wait: patched() is False there"


def _without_waiting(history: Path) -> Path:
    loaded = load_history(history)
    older = history.with_name("older.json")
    from dataclasses import replace

    save_history(replace(loaded, waiting=None), older)
    return older
