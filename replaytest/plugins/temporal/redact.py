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

The walk over the document and every value rule are ``history.redact``'s (the one redactor of every
importer); this module only says where Temporal keeps values (``_Payloads``). The document records the JSON paths it changed in a top-level ``redacted`` list, beside ``events``
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
from replaytest.plugins.temporal.history import decode_json_payload


@dataclass
class TemporalRedaction:
    """What redaction did to one Temporal history."""

    paths: list[str] = field(default_factory=list)
    opaque_payloads: int = 0
    session: RedactionSession | None = None

    @property
    def replaced(self) -> int:
        return len(self.paths)


class _Payloads:
    """Temporal's encoded values (``history.redact.EncodedValues``): ``{"metadata": {"encoding": …},
    "data": base64}`` nodes; ``json/plain`` ones are decoded, redacted and encoded again, others counted."""

    def __init__(self, outcome: TemporalRedaction) -> None:
        self.outcome = outcome

    def holds(self, node: dict[str, Any]) -> bool:
        metadata = node.get("metadata")
        return isinstance(metadata, dict) and "encoding" in metadata and set(node) <= {"metadata", "data", "externalPayloads"}

    def redact(self, node: dict[str, Any], path: str, steps: Sequence[Any], sensitive: bool, session: RedactionSession) -> Any:
        readable, value = decode_json_payload(node)
        if not readable:
            self.outcome.opaque_payloads += 1
            return node
        before = len(session.paths)
        redacted = session.scrub(value, f"{path}.data", sensitive, (*steps, "data"))
        if len(session.paths) == before:
            return node
        # Same bytes temporalio's JSONPlainPayloadConverter writes, so the workflow decodes what it expects.
        data = json.dumps(redacted, separators=(",", ":"), sort_keys=True).encode("utf-8")
        return {**node, "data": base64.b64encode(data).decode("ascii")}


def redact_temporal_document(document: Any, redactor: Redactor) -> tuple[Any, TemporalRedaction]:
    """A redacted copy of a Temporal history document (the input is not modified)."""
    outcome = TemporalRedaction()
    session = outcome.session = redactor.session(encoded=_Payloads(outcome))
    if isinstance(document, dict):
        # The top-level ``redacted`` list is this module's own record, not part of the history.
        body = {key: item for key, item in document.items() if key != "redacted"}
        redacted = session.scrub(body, "$")
        if "redacted" in document:
            redacted["redacted"] = document["redacted"]
    else:
        redacted = session.scrub(document, "$")
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
