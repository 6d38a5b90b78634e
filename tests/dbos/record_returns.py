"""Runs the returns workflow for real on a SQLite system database, one run per workflow id given.

``python record_returns.py SYSTEM_DB ID:ITEM:REASON…``: each argument is split at its *last* two colons,
so an id may hold colons itself (``order:1:lamp:damaged`` is the run ``order:1``)."""

from __future__ import annotations

import os
import sys

SYSTEM_DB = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, DBOSConfig, SetWorkflowID  # noqa: E402
from returns_desk import app  # noqa: E402

config: DBOSConfig = {"name": "returns", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"}
DBOS(config=config)
DBOS.launch()
for argument in sys.argv[2:]:
    workflow_id, item, reason = argument.rsplit(":", 2)
    with SetWorkflowID(workflow_id):
        print(app.process_return(workflow_id, item, reason))
sys.stdout.flush()
os._exit(0)
