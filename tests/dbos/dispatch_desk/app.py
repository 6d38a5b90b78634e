"""A dispatch desk on DBOS, for a part of its API the other desks leave out: a workflow that writes a
stream, and one that reads it (``DBOS.read_stream``) from inside a workflow."""

from __future__ import annotations

from dbos import DBOS

@DBOS.workflow()
def narrate(stops: list) -> int:
    for stop in stops:
        DBOS.write_stream("route", stop)
    DBOS.close_stream("route")
    return len(stops)


@DBOS.workflow()
def follow(narrator: str) -> list:
    return list(DBOS.read_stream(narrator, "route"))
