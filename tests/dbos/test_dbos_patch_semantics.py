"""The DBOS replayer answers ``DBOS.patch`` / ``deprecate_patch`` by what the history records at the
check's function id, as DBOS's ``SystemDatabase.patch`` / ``deprecate_patch`` do (not Temporal's rule):
the marker → True; another operation → False; nothing → ``patch`` writes its marker and answers True
(``deprecate_patch`` answers False and writes nothing). Driven directly on ``_Operations`` with recorded
events; the end-to-end check against DBOS's own recovery is ``tests/impact_e2e/test_impact_e2e_dbos_recovery.py``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from replaytest.plugins.dbos.importer import PATCH_PREFIX
from replaytest.plugins.dbos.replayer import _Operations
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.engine import PATCH_MARKER, DivergenceFound, Matcher, ReachedEnd, Recorded


def operations(status: str, *recorded: tuple[int, str]) -> _Operations:
    events = [
        Recorded(seq, "marker", PATCH_MARKER, patch_id=name[len(PATCH_PREFIX) :])
        if name.startswith(PATCH_PREFIX) else Recorded(seq, "timer" if name == "DBOS.sleep" else "step", name)
        for seq, name in recorded
    ]
    history = SimpleNamespace(status=status, events=[], prompt_manifest=None)  # a history recorded without prompts
    return _Operations(history, Matcher(events, status, ReplayOptions()), set(), rebuilder=None)  # type: ignore[arg-type]


def decisions(ops: _Operations) -> list[tuple[str, bool, int | None, bool]]:
    return [(d.patch_id, d.taken, d.position, d.deprecated) for d in ops.matcher.patch_decisions]


def test_the_recorded_marker_answers_true_and_is_consumed() -> None:
    ops = operations("completed", (1, "classify"), (2, f"{PATCH_PREFIX}x"), (3, "audit"))
    ops.matcher.index = 1
    assert ops.patched(2, f"{PATCH_PREFIX}x", deprecated=False) is True
    assert (ops.matcher.index, decisions(ops)) == (2, [("x", True, 2, False)])


def test_another_operation_at_the_id_answers_false_and_consumes_nothing() -> None:
    ops = operations("running", (1, "classify"), (2, "lookup"), (4, "DBOS.sleep"))
    ops.matcher.index = 1
    assert ops.patched(2, f"{PATCH_PREFIX}x", deprecated=False) is False
    assert (ops.matcher.index, decisions(ops)) == (1, [("x", False, 2, False)])


def test_nothing_recorded_at_the_id_answers_true_and_the_new_step_meets_the_recorded_sleep() -> None:
    # Parked in recv: classify 1, lookup 2, nothing at the recv's id 3, its timeout sleep at 4.
    ops = operations("running", (1, "classify"), (2, "lookup"), (4, "DBOS.sleep"))
    ops.matcher.index = 2
    assert ops.patched(3, f"{PATCH_PREFIX}fraud-check", deprecated=False) is True
    assert decisions(ops) == [("fraud-check", True, 3, False)]
    with pytest.raises(DivergenceFound) as found:
        ops.recorded(4, "record_audit")
    divergence = found.value.divergence
    assert (divergence.kind, divergence.position, divergence.recorded.name) == ("command-mismatch", 4, "DBOS.sleep")  # type: ignore[union-attr]
    assert "real DBOS recovery would fail with DBOSUnexpectedStepError (function DBOS.sleep was recorded when record_audit was expected)" in divergence.message


def test_deprecate_patch_with_nothing_recorded_answers_false_and_writes_nothing() -> None:
    ops = operations("running", (1, "classify"), (2, "lookup"), (4, "DBOS.sleep"))
    ops.matcher.index = 2
    assert ops.patched(3, f"{PATCH_PREFIX}x", deprecated=True) is False
    assert (ops.inserted, decisions(ops)) == (None, [("x", False, 3, True)])


def test_the_end_of_a_pending_history_takes_the_new_path_and_stops_there() -> None:
    ops = operations("running", (1, "classify"), (2, "DBOS.sleep"))
    ops.matcher.index = 2
    with pytest.raises(ReachedEnd):
        ops.patched(3, f"{PATCH_PREFIX}x", deprecated=False)
    assert decisions(ops) == [("x", True, 3, False)]


def test_the_end_of_a_finished_history_is_the_old_path() -> None:
    ops = operations("completed", (1, "classify"), (2, "notify"))
    ops.matcher.index = 2
    assert ops.patched(3, f"{PATCH_PREFIX}x", deprecated=False) is False
    assert decisions(ops) == [("x", False, 3, False)]


def test_an_async_patch_check_that_found_its_marker_consumes_it_when_the_run_moves_past() -> None:
    # DBOS.patch_async probes the id (get_checkpoint_name), and on its own marker reserves the position and
    # answers True without asking the system database again: the next operation comes one id later.
    ops = operations("completed", (1, "classify"), (2, f"{PATCH_PREFIX}x"), (3, "lookup"))
    ops.matcher.index = 1
    ops.name_at(2)
    ops._match(3, "lookup")
    assert (ops.matcher.index, decisions(ops)) == (3, [("x", True, 2, False)])


def test_an_async_patch_check_that_found_another_operation_consumes_nothing() -> None:
    ops = operations("completed", (1, "classify"), (2, "lookup"))
    ops.matcher.index = 1
    ops.name_at(2)  # another operation there: patch_async answers False and the next operation is at 2
    ops._match(2, "lookup")
    assert (ops.matcher.index, decisions(ops)) == (2, [])


def test_a_rehearsal_goes_past_the_end_on_the_new_path_and_stops_at_the_first_new_operation() -> None:
    from replaytest.plugins.dbos.replayer import _RehearsalStop, _Rehearsing

    ops = operations("running", (1, "classify"), (2, "DBOS.sleep"))
    ops.matcher.index = 2
    ops.rehearsal = _Rehearsing(ops.matcher)
    assert ops.patched(3, f"{PATCH_PREFIX}x", deprecated=False) is True  # the resume point: DBOS writes the marker
    with pytest.raises(_RehearsalStop):
        ops.recorded(4, "audit")
    rehearsal = ops.rehearsal.result(SimpleNamespace(status="running"), "3.4.0")  # type: ignore[arg-type]
    assert (rehearsal.outcome, rehearsal.delivered) == ("continues", "")
    assert [(c.kind, c.name, c.position) for c in rehearsal.commands] == [("marker", PATCH_MARKER, 3), ("step", "audit", 4)]
    assert rehearsal.takes_patch("x") is True
    assert ops.rehearsal.decisions_before == 1  # the check at the resume point is kept on the replay result too
