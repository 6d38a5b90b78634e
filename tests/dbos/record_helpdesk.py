"""Runs the helpdesk workflow for real on a SQLite system database (DBOS pickles its values).

``python record_helpdesk.py SYSTEM_DB``: run ``ticket-42``, an urgent invoice ticket from an enterprise
customer, which the step escalates, and ``ticket-43`` from an address with no account."""

from __future__ import annotations

import os
import sys

SYSTEM_DB = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, DBOSConfig, SetWorkflowID  # noqa: E402

from helpdesk import app  # noqa: E402

config: DBOSConfig = {"name": "helpdesk", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"}
DBOS(config=config)
DBOS.launch()
with SetWorkflowID("ticket-42"):
    print(app.handle_ticket("ticket-42", "URGENT: invoice charged twice", "dana.whitfield@acme.com"))
with SetWorkflowID("ticket-43"):
    print(app.handle_ticket("ticket-43", "where is my invoice", "lee.moreau@startup.io"))
sys.stdout.flush()
os._exit(0)
