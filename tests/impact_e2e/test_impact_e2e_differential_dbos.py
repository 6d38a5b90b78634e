"""The engine is the judge, run by run, on DBOS: for each kind of change a team makes, ``replaytest impact``
predicts what each of the dispute desk's two runs parked in ``DBOS.recv`` does when DBOS recovers it on the
changed code; then DBOS's own recovery (``DBOS.launch()`` on a copy of the recorded system database, the
decision sent) runs it. Then the guard impact offers is written with ``--fix``, impact predicts again, and
DBOS recovers the same runs (a fresh copy of the database) on the guarded code. Every prediction must be what
DBOS did: ``breaks`` (recovery failed), ``new`` (the changed operation ran past the recv) or ``old``.

The recovery sends each run the decision the rehearsal delivers (the one the first finished run received),
so both resume with the same message."""

from __future__ import annotations

import pytest
from impact_dbos_kit import APPROVED, CLASSIFY, LOOKUP, RECV, recorded_steps, recover, write
from impact_kit import ScenarioKit, edit_once, impact_json, predicted_resume, run_replaytest

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
