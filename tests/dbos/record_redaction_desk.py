"""Runs the redaction desk for real on a SQLite system database: ``python record_redaction_desk.py SYSTEM_DB
EFFECTS`` completes ``desk-done`` and exits while ``desk-waiting`` waits in ``DBOS.recv`` (PENDING, as after
a crash)."""

from __future__ import annotations

import os
import sys
import time

SYSTEM_DB, EFFECTS = sys.argv[1:3]
os.environ["REDACTION_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())  # the redaction_desk package of the project being recorded

from dbos import DBOS, SetWorkflowID  # noqa: E402
from redaction_desk import app  # noqa: E402

DBOS(config={"name": "redaction-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
with SetWorkflowID("desk-done"):
    app.redaction_desk("ann", False)
with SetWorkflowID("desk-waiting"):
    DBOS.start_workflow(app.redaction_desk, "bob", True)
for _ in range(400):  # wait until the run waits in recv: its timeout sleep is the row written last
    if any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps("desk-waiting")):
        break
    time.sleep(0.05)
os._exit(0)  # no shutdown: desk-waiting stays PENDING in recv
