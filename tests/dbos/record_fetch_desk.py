"""Runs the fetch desk (the ``fetch_desk`` package in the working directory) for real on a SQLite system
database: ``python record_fetch_desk.py SYSTEM_DB EFFECTS`` completes run ``fd-1`` and leaves ``fd-2``
(``review_agent``) pending in ``DBOS.recv``, as after a crash."""

from __future__ import annotations

import json
import os
import sys
import time

SYSTEM_DB, EFFECTS = sys.argv[1:3]
os.environ["FETCH_DESK_EFFECTS"] = EFFECTS
sys.path.insert(0, os.getcwd())

from dbos import DBOS, SetWorkflowID  # noqa: E402
from fetch_desk import app  # noqa: E402

from replaytest.plugins.dbos.prompts import with_prompts  # noqa: E402

DBOS(config={"name": "fetch-desk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
with SetWorkflowID("fd-1"), with_prompts(app.fetch_agent):
    handle = DBOS.start_workflow(app.fetch_agent, "my invoice was charged twice")
print(json.dumps(handle.get_result()))
with SetWorkflowID("fd-2"), with_prompts(app.review_agent):
    DBOS.start_workflow(app.review_agent, "my invoice was charged twice")
deadline = time.monotonic() + 10
while not any(step["function_name"] == "DBOS.sleep" for step in DBOS.list_workflow_steps("fd-2")):
    if time.monotonic() > deadline:
        raise SystemExit("fd-2 never reached DBOS.recv")
    time.sleep(0.05)
sys.stdout.flush()
os._exit(0)
