"""Recognising a neutral history from a file's first bytes, and reading which engine recorded it.

Neutral histories of every engine share one format, so the replay side dispatches them on
``workflow.engine`` (absent means ``journal``, the format's default). The writer puts ``workflow``
right after ``format`` and ``format_version``, so the first bytes of a file nearly always hold it; a
hand-ordered file whose ``workflow`` object lies past them reads as ``UNKNOWN_ENGINE`` and the caller
loads the whole file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from replaytest.history.model import FORMAT

DEFAULT_ENGINE = "journal"
UNKNOWN_ENGINE = ""  # neutral, but the head does not show the engine

_FORMAT_RE = re.compile(rb'"format"\s*:\s*"' + FORMAT.encode("ascii") + rb'"')
_WORKFLOW_RE = re.compile(r'"workflow"\s*:\s*(?=\{)')
_DECODER = json.JSONDecoder()


def neutral_engine(head: bytes) -> str | None:
    """``None`` if ``head`` is not the start of a neutral history; else its ``workflow.engine``
    (``DEFAULT_ENGINE`` when the workflow object has none; ``UNKNOWN_ENGINE`` when the head ends first)."""
    if not _FORMAT_RE.search(head):
        return None
    text = head.decode("utf-8", errors="ignore")
    for match in _WORKFLOW_RE.finditer(text):
        try:
            workflow, _ = _DECODER.raw_decode(text, match.end())
        except ValueError:
            continue  # cut off by the end of the head, or a "workflow" string inside a payload
        if isinstance(workflow, dict) and "type" in workflow:
            return _engine(workflow)
    return UNKNOWN_ENGINE


def _engine(workflow: dict[str, Any]) -> str:
    engine = workflow.get("engine", DEFAULT_ENGINE)
    return engine if isinstance(engine, str) and engine else UNKNOWN_ENGINE
