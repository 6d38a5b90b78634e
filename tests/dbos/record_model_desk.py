"""Runs the model desk (the ``model_desk`` package in the working directory) for real on a SQLite system
database: ``python record_model_desk.py SYSTEM_DB EFFECTS`` starts ``md-1`` and exits while it waits in
``DBOS.recv`` (PENDING, as after a crash); ``--resume`` instead launches DBOS on that database (which
recovers the pending run under the code as it is now), sends the review and prints how the run ended;
``--complete`` starts ``md-1``, sends the review and waits for the end. ``--no-prompt-calls`` turns the
per-call prompt recording off (``record_calls(False)``)."""

from __future__ import annotations

import json
import os
import sys
import time

SYSTEM_DB, EFFECTS = sys.argv[1:3]
os.environ["MODEL_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())

from dbos import DBOS, SetWorkflowID  # noqa: E402
from model_desk import app  # noqa: E402

from replaytest.plugins.dbos.prompts import record_calls, with_prompts  # noqa: E402

if "--no-prompt-calls" in sys.argv:
    record_calls(False)
DBOS(config={"name": "model-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()


def finish() -> None:
    DBOS.send("md-1", "refund approved", topic="review")
    try:
        outcome = {"output": DBOS.retrieve_workflow("md-1").get_result()}
    except Exception as error:
        outcome = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(outcome))
    sys.stdout.flush()
    os._exit(0)


if "--resume" in sys.argv:
    finish()
with SetWorkflowID("md-1"), with_prompts(app.support_agent):
    DBOS.start_workflow(app.support_agent, "my invoice was charged twice")
deadline = time.monotonic() + 10
while not any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps("md-1")):
    if time.monotonic() > deadline:
        raise SystemExit("md-1 never reached DBOS.recv")
    time.sleep(0.05)
if "--complete" in sys.argv:
    finish()
sys.stdout.flush()
os._exit(0)  # no shutdown: md-1 stays PENDING in recv
