"""A DBOS workflow that reads ``datetime.now()`` only to fill log lines (``DBOS.logger`` and ``print``):
lint does not report it on DBOS, and ``tests/dbos/test_dbos_log_only_clock.py`` shows DBOS's own recovery
runs the same steps to the same result with another time logged. Step bodies append a line to the file
named by ``LOG_ONLY_EFFECTS`` when they really run; ``ship`` ends the process on its first run when
``LOG_ONLY_CRASH`` is set (a crash after ``fetch`` was recorded)."""

from __future__ import annotations

import os
from datetime import datetime

from dbos import DBOS


def effect(what: str) -> None:
    with open(os.environ["LOG_ONLY_EFFECTS"], "a", encoding="utf-8") as effects:
        effects.write(what + "\n")


@DBOS.step()
def fetch(order: str) -> str:
    effect(f"fetch {order}")
    return f"parcel-{order}"


@DBOS.step()
def ship(parcel: str) -> str:
    effect(f"ship {parcel}")
    if os.environ.pop("LOG_ONLY_CRASH", ""):
        os._exit(0)  # the process dies inside the step: DBOS has recorded fetch, not ship
    return f"shipped {parcel}"


@DBOS.workflow()
def dispatch(order: str) -> str:
    parcel = fetch(order)
    packed_at = datetime.now()
    DBOS.logger.info(f"packed {parcel} at {packed_at}")
    print(f"LOGGED {packed_at.isoformat()}", flush=True)
    return ship(parcel)
