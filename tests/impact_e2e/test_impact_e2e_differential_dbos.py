"""The engine is the judge, run by run, on DBOS: for each kind of change a team makes, ``replaytest impact``
predicts what each of the dispute desk's two runs parked in ``DBOS.recv`` does when DBOS recovers it on the
changed code; then DBOS's own recovery (``DBOS.launch()`` on a copy of the recorded system database, the
decision sent) runs it. Then the guard impact offers is written with ``--fix``, impact predicts again, and
DBOS recovers the same runs (a fresh copy of the database) on the guarded code. Every prediction must be what
DBOS did: ``breaks`` (recovery failed), ``new`` (the changed operation ran past the recv) or ``old``.

The recovery sends each run the decision the rehearsal delivers (the one the first finished run received),
so both resume with the same message."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from impact_dbos_kit import (
    APP_FILE,
    APPROVED,
    CLASSIFY,
    LOOKUP,
    RECV,
    import_runs,
    recorded_steps,
    recover,
    run_recorder,
    write,
)
from impact_kit import ScenarioKit, edit_once, impact_json, predicted_resume, predicted_sleep, run_replaytest

RECV_ID = 3  # classify 1, lookup 2, the recv 3 (its timeout sleep 4)
DECISION = "approve"  # what dispute-1, the first finished run, received: the rehearsal delivers it
AUDIT = '    record_audit(dispute["invoice_id"], "fraud screen")\n'
CHILD_WORKFLOW = '''@DBOS.workflow()
def review_audit(invoice_id: str) -> str:
    return record_audit(invoice_id, "child review")


@DBOS.workflow()
def resolve_dispute('''


def _renamed(source: str) -> str:
    return source.replace("def lookup_invoice(", "def find_invoice(").replace("lookup_invoice(dispute", "find_invoice(dispute")


def _with_child(source: str) -> str:
    return edit_once(edit_once(source, "@DBOS.workflow()\ndef resolve_dispute(", CHILD_WORKFLOW),
                     RECV, RECV + '    review_audit(dispute["invoice_id"])\n')


def _escalating(source: str) -> str:
    return edit_once(source, APPROVED, '    if decision == "approve" and dispute["amount"] > 200:\n'
                     '        credit = escalate_to_finance(dispute["invoice_id"], dispute["amount"])\n'
                     '    elif decision == "approve":\n')


def _changes(v1: str) -> dict[str, tuple[str, str, str, str]]:
    """change -> (the code, the operation that tells the new path past the recv, what impact and DBOS must
    both say for the parked runs unguarded, and guarded)."""
    return {
        "step inserted before the recv": (edit_once(v1, RECV, AUDIT + RECV), "record_audit", "breaks", "old"),
        "step inserted after the recv": (edit_once(v1, RECV, RECV + AUDIT), "record_audit", "new", "new"),
        "step renamed": (_renamed(v1), "find_invoice", "breaks", "old"),
        "two steps swapped": (edit_once(v1, CLASSIFY + LOOKUP, LOOKUP + CLASSIFY), "never", "breaks", "old"),
        "branch condition changed": (_escalating(v1), "escalate_to_finance", "new", "new"),
        "timer added after the recv": (edit_once(v1, RECV, RECV + "    DBOS.sleep(1)\n"), "DBOS.sleep", "new", "new"),
        "child workflow added after the recv": (_with_child(v1), "review_audit", "new", "new"),
    }


def dbos_outcome(kit: ScenarioKit, changed: str) -> dict[str, str]:
    """DBOS's own recovery of the parked runs on the code in the working tree: per run, ``breaks``, ``new`` or
    ``old`` (whether the ``changed`` operation was recorded past the recv's timeout sleep)."""
    outcomes, _ran, system_db = recover(kit, dict.fromkeys(kit.in_flight, DECISION))
    found = {}
    for run in kit.in_flight:
        if "error" in outcomes[run]:
            found[run] = "breaks"
            continue
        past = [name for function_id, name in recorded_steps(system_db, run) if function_id > RECV_ID + 1]
        found[run] = "new" if any(name == changed or name.endswith("." + changed) for name in past) else "old"
    return found


CHANGE_KINDS = ["step inserted before the recv", "step inserted after the recv", "step renamed", "two steps swapped",
                "branch condition changed", "timer added after the recv", "child workflow added after the recv"]


@pytest.mark.parametrize("change", CHANGE_KINDS)
def test_impact_predicts_each_parked_run_as_dbos_recovers_it(dbos_kit: ScenarioKit, change: str) -> None:
    code, changed, unguarded, guarded = _changes(dbos_kit.v1)[change]
    write(dbos_kit, code)
    _, _, workflow = impact_json(dbos_kit, "--base", dbos_kit.base)
    predicted = {run: predicted_resume(workflow, run) for run in dbos_kit.in_flight}
    assert (predicted, dbos_outcome(dbos_kit, changed)) == (dict.fromkeys(dbos_kit.in_flight, unguarded),) * 2, workflow

    fixed = run_replaytest(dbos_kit.root, "impact", "--base", dbos_kit.base, "--fix")
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    _, _, workflow = impact_json(dbos_kit, "--base", dbos_kit.base)
    predicted = {run: predicted_resume(workflow, run) for run in dbos_kit.in_flight}
    assert (predicted, dbos_outcome(dbos_kit, changed)) == (dict.fromkeys(dbos_kit.in_flight, guarded),) * 2, (
        fixed.stdout, workflow)


# A cooling-off sleep right after the recv: two seconds (the stand-in for a day, short enough that the run
# sleeping on it is due by the time DBOS recovers it), then an hour.
COOL_OFF = "    DBOS.sleep(2)\n"
COOL_OFF_ID = RECV_ID + 2  # after the recv's own timeout sleep


def cool_off_sleeps(system_db: Path, run_id: str) -> list[float]:
    """How long each of the run's cooling-off sleeps was asked to last: its recorded wake-up time less its start."""
    with sqlite3.connect(system_db) as db:
        rows = db.execute(
            "SELECT output, started_at_epoch_ms FROM operation_outputs WHERE workflow_uuid = ? AND function_id = ?"
            " AND function_name = 'DBOS.sleep'", (run_id, COOL_OFF_ID),
        ).fetchall()
    return [round(json.loads(output) - started / 1000) for output, started in rows]


def test_a_changed_sleep_keeps_the_sleeping_runs_wake_up_time_as_dbos_recovery_does(dbos_kit: ScenarioKit, tmp_path: Path) -> None:
    """Two runs of the two-second code: ``cool-before`` waits in the recv (before the sleep), ``cool-sleeping``
    was approved and sleeps. The code now sleeps an hour. DBOS keeps the wake-up time it recorded when the
    sleep started, so impact names ``cool-sleeping`` in a note (it keeps two seconds) and says ``cool-before``
    issues the sleep next. DBOS's recovery agrees: ``cool-sleeping`` wakes at its recorded time and finishes,
    ``cool-before``, given its decision, starts an hour-long sleep."""
    cooling = write(dbos_kit, edit_once(dbos_kit.v1, RECV, RECV + COOL_OFF))
    system_db = dbos_kit.root / "cooling.sqlite3"
    run_recorder(dbos_kit.root, system_db, tmp_path / "cooling-effects.log", "cool-off")
    for recorded in (dbos_kit.root / "histories").glob("*.json"):
        recorded.unlink()
    files = import_runs(dbos_kit.root, system_db, "histories")
    assert sorted(files) == ["cool-before", "cool-sleeping"]
    assert cool_off_sleeps(system_db, "cool-sleeping") == [2] and cool_off_sleeps(system_db, "cool-before") == []
    write(dbos_kit, cooling.replace("DBOS.sleep(2)", "DBOS.sleep(3600)"))

    _, document, workflow = impact_json(dbos_kit)
    line = cooling.splitlines().index(COOL_OFF.rstrip("\n")) + 1
    assert [note for note in document["summary"]["notes"] if "already sleeping on it" in note] == [
        f"DBOS.sleep at {APP_FILE}:{line} (function id {COOL_OFF_ID}) now sleeps 3600 s, recorded 2 s: this run is "
        "already sleeping on it and keeps the recorded duration (the engine fires it when it was due); runs that "
        "reach it later sleep the new one; already sleeping on it: cool-sleeping"]
    predicted = (predicted_sleep(document, workflow, "cool-sleeping"), predicted_sleep(document, workflow, "cool-before"))

    # DBOS's recovery on a copy of the system database, once the sleeping run's recorded wake-up time passed.
    [wake_at] = [event["wake_at"] for event in json.loads(files["cool-sleeping"].read_text())["events"]
                 if event.get("function_id") == COOL_OFF_ID]
    time.sleep(max(0.0, wake_at - time.time()))
    copy = tmp_path / "recovery.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{system_db}{suffix}").exists():
            shutil.copyfile(f"{system_db}{suffix}", f"{copy}{suffix}")
    lines = run_recorder(dbos_kit.root, copy, tmp_path / "recovery-effects.log", "recover-sleeping",
                         "cool-sleeping", "cool-before=approve")
    statuses = {outcome["run"]: outcome["status"] for outcome in map(json.loads, lines)}
    assert statuses == {"cool-sleeping": "SUCCESS", "cool-before": "PENDING"}
    # The sleeping run kept its two seconds (it woke when they were due), the other sleeps the new hour.
    durations = {2: "recorded", 3600: "new"}
    engine = tuple(durations[slept] for [slept] in (cool_off_sleeps(copy, "cool-sleeping"), cool_off_sleeps(copy, "cool-before")))
    assert (predicted, engine) == (("recorded", "new"),) * 2, workflow["resume"]


def test_a_negated_guard_sends_the_parked_runs_down_the_old_path_as_dbos_recovery_does(dbos_kit: ScenarioKit) -> None:
    """The guard impact writes for a step inserted after the recv, negated by hand (``if not DBOS.patch(...)``):
    DBOS answers the check True past the parked runs' history, so they skip the inserted step. impact judges the
    path by the block the command after the check comes from (or the block the answer runs under the test), not
    by the answer: ``old``, as DBOS's recovery does."""
    code, changed, _unguarded, guarded = _changes(dbos_kit.v1)["step inserted after the recv"]
    write(dbos_kit, code)
    fixed = run_replaytest(dbos_kit.root, "impact", "--base", dbos_kit.base, "--fix")
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    _, _, workflow = impact_json(dbos_kit, "--base", dbos_kit.base)
    predicted = {run: predicted_resume(workflow, run) for run in dbos_kit.in_flight}
    assert (predicted, dbos_outcome(dbos_kit, changed)) == (dict.fromkeys(dbos_kit.in_flight, guarded),) * 2, workflow
    text = (dbos_kit.root / dbos_kit.code_file).read_text(encoding="utf-8")
    assert text.count("if DBOS.patch(") == 1, text
    write(dbos_kit, text.replace("if DBOS.patch(", "if not DBOS.patch("))
    _, _, workflow = impact_json(dbos_kit, "--base", dbos_kit.base)
    predicted = {run: predicted_resume(workflow, run) for run in dbos_kit.in_flight}
    assert (predicted, dbos_outcome(dbos_kit, changed)) == (dict.fromkeys(dbos_kit.in_flight, "old"),) * 2, workflow
