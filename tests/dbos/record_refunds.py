"""Runs the refund application for real on a SQLite system database: ``python record_refunds.py SYSTEM_DB
EFFECTS`` completes the runs ``refund-1`` and ``refund-2``."""

from __future__ import annotations

import os
import sys

SYSTEM_DB, EFFECTS = sys.argv[1:3]
os.environ["REFUNDS_EFFECTS"] = EFFECTS
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, SetWorkflowID  # noqa: E402

from dbos_refunds import app  # noqa: E402

DBOS(config={"name": "refunds", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
for order_id in ("1", "2"):
    with SetWorkflowID(f"refund-{order_id}"):
        app.refund_order(order_id)
DBOS.destroy()
