"""Runs the fetch desk (the ``fetch_desk`` package in the working directory) for real on a SQLite system
database to its end: ``python record_fetch_desk.py SYSTEM_DB EFFECTS`` completes run ``fd-1``."""

from __future__ import annotations

import json
import os
import sys

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
sys.stdout.flush()
os._exit(0)
