"""DBOS's workflow: a step, the effect named by the input, a step."""

from __future__ import annotations

from dbos import DBOS

from escape_app.moves import perform


@DBOS.step()
def stamp(text: str) -> str:
    return text


@DBOS.workflow()
def escape_flow(name: str) -> str:
    stamp(name)
    perform(name)
    return stamp(name)
