"""Runs the shop application for real on a system database (SQLite or Postgres) and leaves one run pending.

``python record.py SYSTEM_DB_URL APP_DB_URL EFFECTS [--portable]`` (both databases SQLite or Postgres):
completed runs ``order-ok`` (recv times out),
``order-declined`` (the card step fails, a message arrives); with pickle also ``parcel-1`` (async, a
pickled dataclass), ``report-day`` (class method, start_workflow, events, send/recv), ``restock-1`` (a
configured instance's method), ``bill-1`` (a step
result the importer refuses) and ``keep-note`` (a ``__main__`` class); then ``order-pending`` waits in
``recv`` and the process exits without letting it finish, as a crash would."""

from __future__ import annotations

import os
import sys
import time

SYSTEM_DB_URL, APP_DB_URL, EFFECTS = sys.argv[1:4]
PORTABLE = "--portable" in sys.argv
os.environ["SHOP_APP_DB"] = APP_DB_URL
os.environ["SHOP_EFFECTS"] = EFFECTS
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbos import DBOS, DBOSConfig, DBOSPortableJSONSerializer, SetWorkflowID  # noqa: E402

from dbos_shop import app  # noqa: E402

# enable_patching: DBOS.patch needs it before 3.4 (3.4 only warns that it is no longer needed).
config: DBOSConfig = {
    "name": "shop", "system_database_url": SYSTEM_DB_URL, "application_version": "v1", "enable_patching": True,
}
if PORTABLE:
    config["serializer"] = DBOSPortableJSONSerializer()
DBOS(config=config)
DBOS.launch()

with SetWorkflowID("order-ok"):
    app.place_order("ok", 20.0, 0.2)
with SetWorkflowID("order-declined"):
    declined = DBOS.start_workflow(app.place_order, "declined", 500.0, 60)
while DBOS.get_workflow_status("order-declined") is None or not any(
    step["function_name"] == "DBOS.sleep" and step["function_id"] > 5 for step in DBOS.list_workflow_steps("order-declined")
):
    time.sleep(0.05)  # wait until it is in recv
DBOS.send("order-declined", "approved by ops", topic="approval")
declined.get_result()
if not PORTABLE:
    with SetWorkflowID("report-day"):
        app.Reports.daily("monday")
    with SetWorkflowID("restock-1"):
        app.berlin.restock("book")
    with SetWorkflowID("bill-1"):
        app.split_bill(3)  # its step returns a fractions.Fraction, which the importer refuses

    class Note:  # pickled as __main__.Note: this file runs as a script
        pass

    with SetWorkflowID("keep-note"):
        app.keep(Note())
with SetWorkflowID("order-pending"):
    DBOS.start_workflow(app.place_order, "pending", 30.0, 600)
while not any(step["function_name"] == "DBOS.sleep" and step["function_id"] > 5 for step in DBOS.list_workflow_steps("order-pending")):
    time.sleep(0.05)
if not PORTABLE:
    import asyncio

    async def pack() -> None:
        with SetWorkflowID("parcel-1"):
            await app.pack_parcel("p1")

    # Last, on a loop never closed: before 3.4 DBOS makes its executor the loop's default one, and
    # closing the loop would shut it down (waiting for order-pending, which waits ten minutes).
    asyncio.new_event_loop().run_until_complete(pack())
sys.stdout.flush()
os._exit(0)  # no shutdown: order-pending stays PENDING in recv, as after a crash
