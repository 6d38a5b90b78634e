"""``DBOS.patch`` as DBOS answers it, judged by DBOS's own recovery: the dispute desk's two runs parked in
``DBOS.recv`` are recovered for real (``DBOS.launch()`` on a copy of the recorded system database, the
same application version) under guarded code, and replaytest's verdict on each run must be the engine's.

DBOS records nothing at a pending recv's function id (only the recv's timeout ``DBOS.sleep``, one id
later, before it waits). A ``DBOS.patch`` check placed just before that recv therefore finds no row:
DBOS writes its marker there and answers True, the parked runs take the new path, and the new step lands
on the recorded sleep's id — ``DBOSUnexpectedStepError``. A check placed at an id the runs recorded (before
the invoice lookup) answers False, and the runs resume on the old path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import impact_dbos_kit
from impact_dbos_kit import recorded_steps, write
from impact_kit import ScenarioKit, clean_environment, divergence_facts, impact_json, replay_json, run_replaytest

# The guard just before the recv: its check sits where the parked runs recorded nothing.
AT_THE_RECV = (
    '    if DBOS.patch("fraud-check"):\n'
    '        record_audit(dispute["invoice_id"], category)\n'
    + impact_dbos_kit.RECV
)
# The guard before the lookup, wrapping it: its check sits on the lookup every run recorded.
AT_THE_LOOKUP = (
    '    if DBOS.patch("fraud-check"):\n'
    '        invoice = lookup_invoice(dispute["invoice_id"])\n'
    '        record_audit(dispute["invoice_id"], category)\n'
    "    else:\n"
    "    " + impact_dbos_kit.LOOKUP
)
DECISIONS = {"dispute-4": "approve", "dispute-5": "reject"}


def recover(kit: ScenarioKit) -> tuple[dict[str, dict], list[str], Path]:
    return impact_dbos_kit.recover(kit, DECISIONS)
SLEEP_ID = 4  # classify 1, lookup 2, recv 3 (no row while it waits), its timeout sleep 4


def test_a_patch_check_just_before_the_recv_breaks_the_parked_runs_in_replay_and_on_real_recovery(dbos_kit: ScenarioKit) -> None:
    source = write(dbos_kit, dbos_kit.v1.replace(impact_dbos_kit.RECV, AT_THE_RECV))
    audit_line = [n for n, line in enumerate(source.splitlines(), 1) if "record_audit(dispute" in line]
    patch_line = [n for n, line in enumerate(source.splitlines(), 1) if 'DBOS.patch("fraud-check")' in line]

    code, results = replay_json(dbos_kit, {"DISPUTE_DESK_EFFECTS": str(dbos_kit.root / "replay-effects.log")})
    assert code == 1
    replay_breaks = {run for run, result in results.items() if result["status"] != "passed"}
    assert replay_breaks == set(dbos_kit.in_flight)
    for run in dbos_kit.in_flight:
        result = results[run]
        assert divergence_facts(result) == ("command-mismatch", SLEEP_ID, "DBOS.sleep", "app.py", audit_line[0])
        message = result["divergence"]["message"]
        assert "where the running history recorded timer 'DBOS.sleep'" in message, message
        assert "real DBOS recovery would fail with DBOSUnexpectedStepError" in message, message
        # DBOS answers True where nothing is recorded: the decision says the run takes the new path.
        assert [(d["patch_id"], d["taken"], d["position"], d["source"]["line"]) for d in result["patch_decisions"]] == [
            ("fraud-check", True, 3, patch_line[0])
        ]
    for run in dbos_kit.finished:  # their recv is recorded at the check's id: the old path
        assert [(d["taken"], d["position"]) for d in results[run]["patch_decisions"]] == [(False, 3)]
    assert not (dbos_kit.root / "replay-effects.log").exists()

    outcomes, ran, system_db = recover(dbos_kit)
    recovery_breaks = {run for run, outcome in outcomes.items() if "error" in outcome}
    assert recovery_breaks == replay_breaks
    for run in DECISIONS:
        assert outcomes[run]["error_type"] == "DBOSUnexpectedStepError", outcomes[run]
        assert f"During execution of workflow {run} step {SLEEP_ID}, function DBOS.sleep was recorded when record_audit was expected" in outcomes[run]["error"]
        # DBOS wrote its marker at the recv's empty id, then refused the audit step on the sleep's.
        assert recorded_steps(system_db, run) == [
            (1, "classify_dispute"), (2, "lookup_invoice"), (3, "DBOS.patch-fraud-check"), (SLEEP_ID, "DBOS.sleep"),
        ]
    assert ran == []  # refused before its body ran; the recorded steps were not run again


def test_a_patch_check_on_a_recorded_operation_keeps_the_parked_runs_on_the_old_path_in_replay_and_on_real_recovery(
    dbos_kit: ScenarioKit,
) -> None:
    write(dbos_kit, dbos_kit.v1.replace(impact_dbos_kit.LOOKUP, AT_THE_LOOKUP))
    code, results = replay_json(dbos_kit, {"DISPUTE_DESK_EFFECTS": str(dbos_kit.root / "replay-effects.log")})
    assert (code, {run: result["status"] for run, result in results.items()}) == (0, dict.fromkeys(dbos_kit.run_ids, "passed"))
    for result in results.values():  # the check meets the recorded lookup at id 2: False, the old path
        assert [(d["patch_id"], d["taken"], d["position"]) for d in result["patch_decisions"]] == [("fraud-check", False, 2)]

    outcomes, ran, system_db = recover(dbos_kit)
    assert outcomes == {
        "dispute-4": {"output": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-104-300.00"}},
        "dispute-5": {"output": {"category": "service-complaint", "decision": "reject", "credit": None}},
    }
    # Only what comes after the recv ran; no audit, no marker.
    assert ran == ["credit INV-104 300.0", "notify customer-of-INV-104 approve", "notify customer-of-INV-105 reject"]
    for run in DECISIONS:
        names = [name for _, name in recorded_steps(system_db, run)]
        assert "record_audit" not in names and "DBOS.patch-fraud-check" not in names, names


def test_impact_widens_the_guard_it_writes_just_before_the_recv_until_real_recovery_keeps_the_parked_runs(
    dbos_kit: ScenarioKit,
) -> None:
    """The audit step inserted unguarded before the recv: the narrowest guard puts its check on the recv's empty
    id and must not be offered (the parked runs would fail as above). Widened to the whole body, the check
    sits on the classification every run recorded; that guard is verified, written with --fix, and DBOS's own
    recovery of the parked runs on the fixed code then completes them on the old path."""
    write(dbos_kit, dbos_kit.v1.replace(impact_dbos_kit.RECV, '    record_audit(dispute["invoice_id"], category)\n' + impact_dbos_kit.RECV))
    code, _, workflow = impact_json(dbos_kit, "--base", dbos_kit.base)
    assert code == 1
    guards = [group["guard"] for group in workflow["groups"]]
    assert len(guards) == 1, "one change, one group, one guard"
    guard = guards[0]
    assert guard["patch_id"] == "resolve-dispute-record-audit"
    assert guard["verified"] == {"histories": 5, "passed": 5, "ok": True, "failing": []}
    # The guard's check is the body's first statement: the whole body, old and new, under it.
    assert ('+    if DBOS.patch("resolve-dispute-record-audit"):\n+        category = classify_dispute(dispute["text"])\n'
            in guard["diff"]), guard["diff"]
    fixed = run_replaytest(dbos_kit.root, "impact", "--base", dbos_kit.base, "--fix")
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    assert "widened: the changed block alone did not verify (histories/dispute-4.json still failed: " in fixed.stdout
    assert "real DBOS recovery would fail with DBOSUnexpectedStepError" in fixed.stdout

    outcomes, ran, system_db = recover(dbos_kit)
    assert outcomes == {
        "dispute-4": {"output": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-104-300.00"}},
        "dispute-5": {"output": {"category": "service-complaint", "decision": "reject", "credit": None}},
    }
    assert ran == ["credit INV-104 300.0", "notify customer-of-INV-104 approve", "notify customer-of-INV-105 reject"]
    for run in DECISIONS:
        names = [name for _, name in recorded_steps(system_db, run)]
        assert "record_audit" not in names and not any(name.startswith("DBOS.patch-") for name in names), names


def test_a_renamed_step_keeps_its_recorded_name_and_real_recovery_completes_the_parked_runs(dbos_kit: ScenarioKit) -> None:
    """lookup_invoice renamed find_invoice: the guard keeps the recorded name through @DBOS.step(name=...); the
    parked runs recover on the fixed code without a patch."""
    renamed = dbos_kit.v1.replace("def lookup_invoice(", "def find_invoice(").replace("lookup_invoice(dispute", "find_invoice(dispute")
    write(dbos_kit, renamed)
    code, _, workflow = impact_json(dbos_kit, "--base", dbos_kit.base)
    assert code == 1
    [group] = workflow["groups"]
    guard = group["guard"]
    assert (guard["kind"], guard["patch_id"]) == ("keep-name", "lookup_invoice")
    assert '+@DBOS.step(name="lookup_invoice")' in guard["diff"]
    assert guard["verified"]["ok"] is True, guard["verification"]
    fixed = run_replaytest(dbos_kit.root, "impact", "--base", dbos_kit.base, "--fix")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # the exit code describes the code before the fix
    assert "applied 1 verified guard: dbos_dispute_desk/app.py" in fixed.stdout
    code, results = replay_json(dbos_kit)
    assert (code, {r["status"] for r in results.values()}) == (0, {"passed"})
    outcomes, ran, _ = recover(dbos_kit)
    assert outcomes == {
        "dispute-4": {"output": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-104-300.00"}},
        "dispute-5": {"output": {"category": "service-complaint", "decision": "reject", "credit": None}},
    }
    assert ran == ["credit INV-104 300.0", "notify customer-of-INV-104 approve", "notify customer-of-INV-105 reject"]


# Replays the histories in the working directory's project with a resume rehearsal; prints each run's.
REHEARSE = """import json, os, sys
from pathlib import Path
sys.path.insert(0, os.getcwd())
from replaytest.plugins.dbos.replayer import DBOSReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.report import rehearsal_data
from dbos_dispute_desk.replay import CONFIG
replayer = DBOSReplayer()
for path in sorted(Path("histories").glob("*.json")):
    result = replayer.replay(path, WorkflowSet((CONFIG,)), ReplayOptions(rehearse=True))
    print(json.dumps({"run": result.workflow_id, "status": result.status,
                      "rehearsal": None if result.rehearsal is None else rehearsal_data(result.rehearsal)}))
"""


def rehearsed(kit: ScenarioKit) -> dict[str, dict]:
    (kit.root / "rehearse.py").write_text(REHEARSE, encoding="utf-8")
    done = subprocess.run([sys.executable, "rehearse.py"], cwd=kit.root, capture_output=True, text=True, timeout=180,
                          env=clean_environment({"DISPUTE_DESK_EFFECTS": str(kit.root / "rehearsal-effects.log")}))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line.pop("run"): line for line in lines}


def test_the_rehearsal_of_a_parked_run_says_what_real_recovery_then_does(dbos_kit: ScenarioKit) -> None:
    """The audit after the recv, guarded: the rehearsal of each parked run (its recv answered with the message
    another run received) says DBOS.patch answers True at function id 5 and the audit step comes next at 6; DBOS's own
    recovery of those runs (the decision sent) writes the marker at 5 and runs the audit at 6."""
    source = write(dbos_kit, dbos_kit.v1.replace(impact_dbos_kit.RECV, impact_dbos_kit.RECV
                                                 + '    if DBOS.patch("audit-after-review"):\n' + "    " + impact_dbos_kit.AUDIT))
    patch_line = [n for n, line in enumerate(source.splitlines(), 1) if "DBOS.patch(" in line][0]
    results = rehearsed(dbos_kit)
    assert {run: result["status"] for run, result in results.items()} == dict.fromkeys(dbos_kit.run_ids, "passed")
    for run in dbos_kit.finished:
        assert results[run]["rehearsal"] is None  # finished runs are not resumed
    for run in dbos_kit.in_flight:
        rehearsal = results[run]["rehearsal"]
        assert rehearsal["outcome"] == "continues"
        # The finished runs replayed first in this process: the recv returns the decision dispute-1 received.
        assert rehearsal["delivered"] == "DBOS.recv answered with what another run of resolve_dispute received there"
        assert [(c["kind"], c["name"], c["position"]) for c in rehearsal["commands"]] == [
            ("marker", "patched", 5), ("step", "record_audit", 6),
        ]
        assert [(d["patch_id"], d["taken"], d["position"], d["source"]["line"]) for d in rehearsal["patch_decisions"]] == [
            ("audit-after-review", True, 5, patch_line),
        ]
        assert rehearsal["source"]["line"] == patch_line + 1
        assert rehearsal["driver"].startswith("dbos 3.4.0: its workflow wrappers")
    assert not (dbos_kit.root / "rehearsal-effects.log").exists()

    outcomes, ran, system_db = recover(dbos_kit)
    assert outcomes == {
        "dispute-4": {"output": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-104-300.00"}},
        "dispute-5": {"output": {"category": "service-complaint", "decision": "reject", "credit": None}},
    }
    assert "audit INV-104 approve" in ran and "audit INV-105 reject" in ran
    for run in DECISIONS:
        assert recorded_steps(system_db, run)[3:6] == [(SLEEP_ID, "DBOS.sleep"), (5, "DBOS.patch-audit-after-review"), (6, "record_audit")]
