"""Runs the dispatch desk for real on a SQLite system database: ``narrate-1`` (writes a stream) and
``follow-1`` (reads it inside a workflow).

``python record_dispatch_desk.py SYSTEM_DB EFFECTS``"""

from __future__ import annotations

import os
import sys

SYSTEM_DB, EFFECTS = sys.argv[1:3]
os.environ["DISPATCH_EFFECTS"] = EFFECTS
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, SetWorkflowID  # noqa: E402

from dispatch_desk import app  # noqa: E402

DBOS(config={"name": "dispatch", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
with SetWorkflowID("narrate-1"):
    assert app.narrate(["depot", "bridge", "door"]) == 3
with SetWorkflowID("follow-1"):
    assert app.follow("narrate-1") == ["depot", "bridge", "door"]
DBOS.destroy()
