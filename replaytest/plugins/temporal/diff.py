"""Temporal history JSON as a neutral ``History`` for ``replaytest diff``: ``read_temporal_history``.

Only what ``diff`` compares is kept: one event per command-created event (activities, timers, markers
and patches, child workflows, signals, updates, the close event), its kind and name, and for activities
and child workflows a digest of the recorded input payloads (so ``diff`` without ``--ignore-args`` sees
changed arguments). Kinds keep Temporal's names (``activity``, ``timer``, ``patch``, ``complete`` …);
the result is for comparison, not a history to save or replay.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from replaytest.fileio import read_regular
from replaytest.history.errors import HistoryError
from replaytest.history.io import parse_json
from replaytest.history.model import Event, History, WorkflowInfo
from replaytest.plugins.temporal.history import attributes, command_views, event_type, run_status, sequence_problem


def read_temporal_history(path: Path) -> History:
    """The command stream of a Temporal history file; ``HistoryError`` naming the file if it is not one."""
    try:
        document = parse_json(read_regular(path), path)
    except OSError as error:
        raise HistoryError(path, None, f"cannot be read: {error.strerror or error}") from None
    events = document.get("events") if isinstance(document, dict) else None
    if not isinstance(events, list) or not all(isinstance(event, dict) for event in events):
        raise HistoryError(path, "$.events", "not a Temporal history: expected an array of event objects")
    problem = sequence_problem([(event.get("eventId"), event.get("eventType")) for event in events])
    if problem is not None:
        raise HistoryError(path, f"$.events[{problem[0] - 1}]", f"malformed Temporal history: {problem[1]}")
    started = attributes(events[0])
    workflow_type = str((started.get("workflowType") or {}).get("name", "")) or "?"
    by_id = {str(event.get("eventId")): event for event in events}
    neutral: list[Event] = []
    for view in command_views(events):
        source = by_id.get(str(view.position), {})
        neutral.append(Event(
            seq=len(neutral) + 1, kind=view.kind, name=view.name, args_digest=_input_digest(attributes(source)),
            patch_id=str(view.detail.get("patch_id")) if view.kind == "patch" else None,
        ))
    status = run_status([event_type(event) for event in events])
    return History(workflow=WorkflowInfo(workflow_type, str(started.get("workflowId", "")) or path.stem, engine="temporal"),
                   status=status, events=tuple(neutral), source=path)


def _input_digest(attrs: Any) -> str | None:
    payloads = attrs.get("input") if hasattr(attrs, "get") else None
    if not payloads:
        return None
    return "sha256:" + hashlib.sha256(json.dumps(payloads, sort_keys=True).encode("utf-8")).hexdigest()
