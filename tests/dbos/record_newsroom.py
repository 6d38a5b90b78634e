"""Runs the newsroom for real on a SQLite system database: ``brief-markets`` and ``brief-weather``
(ordinary workflows) and ``live-elections`` (streams what it reads), each to completion.

``python record_newsroom.py SYSTEM_DB EFFECTS``"""

from __future__ import annotations

import os
import sys

SYSTEM_DB, EFFECTS = sys.argv[1:3]
os.environ["NEWSROOM_EFFECTS"] = EFFECTS
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, SetWorkflowID  # noqa: E402

from dbos_newsroom import app  # noqa: E402

DBOS(config={"name": "newsroom", "system_database_url": f"sqlite:///{SYSTEM_DB}", "application_version": "v1"})
DBOS.launch()
with SetWorkflowID("brief-markets"):
    app.brief("markets")
with SetWorkflowID("live-elections"):
    app.live_brief("elections")
with SetWorkflowID("brief-weather"):
    app.brief("weather")
# The stream really was written: the editor's screen reads it back.
streamed = [item["source"] for item in DBOS.read_stream("live-elections", "reading")]
assert streamed == app.SOURCES["elections"], streamed
DBOS.destroy()
