"""Runs the refund desk for real on a SQLite system database: ``python record_refund_desk.py SYSTEM_DB
EFFECTS`` starts ``refund-7`` and exits while it waits in ``DBOS.recv`` (PENDING, as after a crash).
``python record_refund_desk.py SYSTEM_DB EFFECTS --resume`` instead launches DBOS on that database (which
recovers the pending run under the code as it is now), sends the approval and prints how the run ended."""

from __future__ import annotations

import json
import os
import sys
import time

SYSTEM_DB, EFFECTS = sys.argv[1:3]
RESUME = "--resume" in sys.argv
os.environ["REFUND_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the refund_desk package of the project being recorded or resumed

from dbos import DBOS, SetWorkflowID  # noqa: E402
from refund_desk import app  # noqa: E402

# enable_patching: DBOS.patch (the guarded variants resumed here) needs it before 3.4 (3.4 only warns that it is
# no longer needed).
DBOS(config={"name": "refund-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1",
             "enable_patching": True})
DBOS.launch()
if RESUME:
    DBOS.send("refund-7", "approved", topic="approval")
    handle = DBOS.retrieve_workflow("refund-7")
    try:
        outcome = {"output": handle.get_result()}
    except Exception as error:
        outcome = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(outcome))
    sys.stdout.flush()
    os._exit(0)
with SetWorkflowID("refund-7"):
    DBOS.start_workflow(app.handle_refund_request, "7", "Please refund my order, the kettle arrived broken")
for _ in range(200):  # wait until the run waits in recv: its timeout sleep is the row written last
    steps = DBOS.list_workflow_steps("refund-7")
    if any(step["function_name"] == "DBOS.sleep" for step in steps):
        break
    time.sleep(0.05)
os._exit(0)  # no shutdown: refund-7 stays PENDING in recv, as after a crash
