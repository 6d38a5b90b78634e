"""Runs the dispute desk of the project in the working directory for real on a SQLite system database.

``python impact_dbos_recorder.py SYSTEM_DB EFFECTS record``: starts the five disputes, waits until each
waits in ``DBOS.recv``, sends the reviewer's decision to the three that get one, waits for them to
finish and exits without shutting down (the other two stay PENDING in recv, as after a crash).
``python impact_dbos_recorder.py SYSTEM_DB EFFECTS fresh RUN_ID DECISION AMOUNT``: a new run of the code
as it is now (a dispute of AMOUNT on INV-200), decided at once; prints its output as JSON (give it a new SYSTEM_DB: on the recorded one DBOS
would first recover the pending disputes under that code).
``python impact_dbos_recorder.py SYSTEM_DB EFFECTS recover RUN_ID=DECISION ...``: DBOS's own recovery of the
runs left PENDING on SYSTEM_DB (give it a copy of the recorded one) under the code as it is now: ``launch()``
recovers them, each gets its decision by ``DBOS.send`` and its outcome is awaited; prints one JSON line per
run, ``{"run": ..., "output": ...}`` or ``{"run": ..., "error_type": ..., "error": ...}``.
``python impact_dbos_recorder.py SYSTEM_DB EFFECTS cool-off``: for code that sleeps right after the recv, two
disputes: ``cool-before`` left waiting in recv (before the sleep), ``cool-sleeping`` approved and left
sleeping (both PENDING, as after a crash).
``python impact_dbos_recorder.py SYSTEM_DB EFFECTS recover-sleeping RUN[=DECISION] ...``: DBOS's own
recovery of those runs (each sent its decision, when given one) until each finished or started a sleep
after the recv; prints one JSON line per run, ``{"run": ..., "status": ...}``, and exits without shutting
down (a run that sleeps on stays PENDING)."""

from __future__ import annotations

import json
import os
import sys
import time

SYSTEM_DB, EFFECTS, MODE = sys.argv[1:4]
os.environ["DISPUTE_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the dispute desk of the project being recorded

from dbos import DBOS, SetWorkflowID  # noqa: E402
from dbos_dispute_desk import app  # noqa: E402

RUNS = [
    ("dispute-1", {"invoice_id": "INV-101", "text": "I was charged twice this month", "amount": 120.0}, "approve"),
    ("dispute-2", {"invoice_id": "INV-102", "text": "charged twice for the annual plan", "amount": 900.0}, "approve"),
    ("dispute-3", {"invoice_id": "INV-103", "text": "the support line never answered", "amount": 60.0}, "reject"),
    ("dispute-4", {"invoice_id": "INV-104", "text": "charged twice after cancelling", "amount": 300.0}, None),
    ("dispute-5", {"invoice_id": "INV-105", "text": "the service was down for a week", "amount": 1500.0}, None),
]


def waits_in_recv(run_id: str) -> bool:
    """The recv's timeout sleep is the row DBOS writes last before it waits."""
    return any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps(run_id))


def sleeps_after_recv(run_id: str, since_ms: int = 0) -> bool:
    """A sleep after the recv's own timeout sleep (function id 4) started (at or after ``since_ms``)."""
    return any(step["function_name"] == "DBOS.sleep" and step["function_id"] > 4 and (step.get("started_at_epoch_ms") or 0) >= since_ms
               for step in DBOS.list_workflow_steps(run_id))


def until(ready, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not happen in {timeout_s} s")
        time.sleep(0.05)


DBOS(config={"name": "dispute-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
if MODE == "fresh":
    run_id, decision, amount = sys.argv[4:7]
    with SetWorkflowID(run_id):
        handle = DBOS.start_workflow(app.resolve_dispute, {"invoice_id": "INV-200", "text": "charged twice", "amount": float(amount)})
    until(lambda: waits_in_recv(run_id), f"{run_id} waiting for its review")
    DBOS.send(run_id, decision, topic="review")
    print(json.dumps(handle.get_result()))
elif MODE == "recover":
    for run_id, decision in (argument.split("=", 1) for argument in sys.argv[4:]):
        try:
            DBOS.send(run_id, decision, topic="review")
            outcome = {"run": run_id, "output": DBOS.retrieve_workflow(run_id).get_result()}
        except Exception as error:  # the recovered run failed: DBOS's own error, as the workflow recorded it
            outcome = {"run": run_id, "error_type": type(error).__name__, "error": str(error)}
        print(json.dumps(outcome))
elif MODE == "cool-off":
    for run_id, dispute, _ in RUNS[3:]:
        with SetWorkflowID(run_id.replace("dispute-4", "cool-before").replace("dispute-5", "cool-sleeping")):
            DBOS.start_workflow(app.resolve_dispute, dispute)
    for run_id in ("cool-before", "cool-sleeping"):
        until(lambda: waits_in_recv(run_id), f"{run_id} waiting for its review")
    DBOS.send("cool-sleeping", "approve", topic="review")
    until(lambda: sleeps_after_recv("cool-sleeping"), "cool-sleeping sleeping after its review")
elif MODE == "recover-sleeping":
    launched_ms = int(time.time() * 1000)
    runs = []
    for argument in sys.argv[4:]:
        run_id, _, decision = argument.partition("=")
        if decision:
            DBOS.send(run_id, decision, topic="review")
        runs.append(run_id)
    for run_id in runs:
        until(lambda: DBOS.retrieve_workflow(run_id).get_status().status in ("SUCCESS", "ERROR")
              or sleeps_after_recv(run_id, launched_ms), f"{run_id} finishing or sleeping")
        print(json.dumps({"run": run_id, "status": DBOS.retrieve_workflow(run_id).get_status().status}))
else:
    handles = {}
    for run_id, dispute, _ in RUNS:
        with SetWorkflowID(run_id):
            handles[run_id] = DBOS.start_workflow(app.resolve_dispute, dispute)
    for run_id, _, decision in RUNS:
        until(lambda: waits_in_recv(run_id), f"{run_id} waiting for its review")
        if decision is not None:
            DBOS.send(run_id, decision, topic="review")
            print(json.dumps({run_id: handles[run_id].get_result()}))
sys.stdout.flush()
os._exit(0)  # no shutdown: the undecided disputes stay PENDING in recv, as after a crash
