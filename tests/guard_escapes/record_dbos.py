"""Runs the escape workflow for real on a SQLite system database, once per effect name (inactive):
``python record_dbos.py SYSTEM_DB NAME...``."""

from __future__ import annotations

import os
import sys

SYSTEM_DB, NAMES = sys.argv[1], sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, SetWorkflowID  # noqa: E402

from escape_app import dbos_flow  # noqa: E402

DBOS(config={"name": "escapes", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
for name in NAMES:
    with SetWorkflowID(f"escape-{name}"):
        dbos_flow.escape_flow(name)
DBOS.destroy()
