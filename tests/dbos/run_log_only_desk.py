"""Runs the log-only desk for real on a SQLite system database:
``python run_log_only_desk.py SYSTEM_DB EFFECTS start`` starts ``dispatch-1`` (it crashes in ``ship`` when
``LOG_ONLY_CRASH`` is set); ``... recover`` launches DBOS on the same database, which recovers the pending
run, and waits for it. Both print the run's result and recorded steps as one ``RESULT`` JSON line."""

from __future__ import annotations

import json
import os
import sys

SYSTEM_DB, EFFECTS, MODE = sys.argv[1:4]
os.environ["LOG_ONLY_EFFECTS"] = EFFECTS
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, SetWorkflowID  # noqa: E402

from log_only_desk import app  # noqa: E402

DBOS(config={"name": "log-only-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()  # recovers the runs this executor left pending
if MODE == "start":
    with SetWorkflowID("dispatch-1"):
        result = app.dispatch("1")
else:
    result = DBOS.retrieve_workflow("dispatch-1").get_result()
steps = [(step["function_id"], step["function_name"], step["output"]) for step in DBOS.list_workflow_steps("dispatch-1")]
print("RESULT " + json.dumps({"result": result, "steps": steps}), flush=True)
DBOS.destroy()
