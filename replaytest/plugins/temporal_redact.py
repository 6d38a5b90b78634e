"""Redacting Temporal history JSON (``temporal workflow show --output json`` / ``import temporal``):
``redact_temporal_document``.

Every ``json/plain`` payload (base64 ``data`` with base64 ``metadata.encoding``) is decoded, redacted
like a neutral history's payload (key patterns, value patterns, JSON paths with ``$`` the whole
document, e.g. ``$.events[0].workflowExecutionStartedEventAttributes.input.payloads[0].data.email``) and
encoded again the way temporalio's JSON converter writes it. Every other string (failure messages and
stack traces, workflow ids, memo and search-attribute keys' values, unknown fields) is scrubbed by value
patterns, with the same pseudonyms as the payloads (one keyed hash per history). A payload under a
sensitive key (``memo.fields.customer_email``) is redacted whole. Binary, protobuf and encrypted
payloads cannot be read and are counted.

The document records the JSON paths it changed in a top-level ``redacted`` list, beside ``events``
(temporalio reads only ``events``), as neutral histories do.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replaytest.fileio import read_regular
from replaytest.history.errors import HistoryError
from replaytest.history.io import parse_json, write_text_atomically
from replaytest.history.redact import RedactionSession, Redactor
from replaytest.history.strict_json import MAX_DEPTH, join_path
from replaytest.plugins.temporal_history import decode_json_payload


@dataclass
class TemporalRedaction:
    """What redaction did to one Temporal history."""

    paths: list[str] = field(default_factory=list)
    opaque_payloads: int = 0
    session: RedactionSession | None = None

    @property
    def replaced(self) -> int:
        return len(self.paths)


def redact_temporal_document(document: Any, redactor: Redactor) -> tuple[Any, TemporalRedaction]:
    """A redacted copy of a Temporal history document (the input is not modified)."""
    session = redactor.session()
    outcome = TemporalRedaction(session=session)
    redacted = _walk(document, "$", (), False, session, outcome, 0)
    outcome.paths = list(dict.fromkeys(session.paths))
    if isinstance(redacted, dict) and outcome.paths:
        previous = redacted.get("redacted")
        known = [item for item in previous if isinstance(item, str)] if isinstance(previous, list) else []
        redacted["redacted"] = sorted({*known, *outcome.paths})
    return redacted, outcome


def redact_text(value: str, outcome: TemporalRedaction) -> str:
    """A string outside the document (a file name, say) scrubbed with the document's pseudonyms."""
    assert outcome.session is not None
    return outcome.session.text(value)


def _walk(value: Any, path: str, steps: Sequence[Any], sensitive: bool, session: RedactionSession,
          outcome: TemporalRedaction, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return session.scrub(value, path, True, steps)
    if isinstance(value, dict):
        if _is_payload(value):
            return _payload(value, path, steps, sensitive, session, outcome)
        if path == "$":
            items = {key: item for key, item in value.items() if key != "redacted"}
            kept = {"redacted": value["redacted"]} if "redacted" in value else {}
        else:
            items, kept = value, {}
        out = {}
        for key, item in items.items():
            child = sensitive or (isinstance(key, str) and session.redactor.key_matches(key))
            out[key] = _walk(item, join_path(path, key), (*steps, key), child, session, outcome, depth + 1)
        out.update(kept)
        return out
    if isinstance(value, list):
        return [_walk(item, f"{path}[{index}]", (*steps, index), sensitive, session, outcome, depth + 1)
                for index, item in enumerate(value)]
    if isinstance(value, str):
        if sensitive:
            return session.scrub(value, path, True, steps)
        new = session.text(value)
        if new != value:
            session.paths.append(path)
        return new
    return value


def _is_payload(node: dict[str, Any]) -> bool:
    metadata = node.get("metadata")
    return isinstance(metadata, dict) and "encoding" in metadata and set(node) <= {"metadata", "data", "externalPayloads"}


def _payload(payload: dict[str, Any], path: str, steps: Sequence[Any], sensitive: bool, session: RedactionSession,
             outcome: TemporalRedaction) -> dict[str, Any]:
    readable, value = decode_json_payload(payload)
    if not readable:
        outcome.opaque_payloads += 1
        return payload
    before = len(session.paths)
    redacted = session.scrub(value, f"{path}.data", sensitive, (*steps, "data"))
    if len(session.paths) == before:
        return payload
    # Same bytes temporalio's JSONPlainPayloadConverter writes, so the workflow decodes what it expects.
    data = json.dumps(redacted, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return {**payload, "data": base64.b64encode(data).decode("ascii")}


def redact_temporal_file(source: Path, target: Path, redactor: Redactor) -> int:
    """Redact the Temporal history JSON ``source`` into ``target`` (may be the same path: written
    atomically, keeping the file's mode); returns how many values were replaced."""
    try:
        document = parse_json(read_regular(source), source)
    except OSError as error:
        raise HistoryError(source, None, f"cannot be read: {error.strerror or error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("events"), list):
        raise HistoryError(source, "$.events", "not a Temporal history: expected an object with an events array")
    redacted, outcome = redact_temporal_document(document, redactor)
    write_text_atomically(target, json.dumps(redacted, indent=2, ensure_ascii=False) + "\n")
    return outcome.replaced
