"""The payloads of AWS durable executions as JSON data: ``decode_payload`` and ``encode_payload``.

The SDK checkpoints each operation's result as text in its own typed envelope (``serdes``): JSON
primitives and lists of primitives as plain JSON, everything else as ``{"t": tag, "v": value}`` with
tags for str/int/float/bool/None, lists, tuples, dicts, bytes (base64), UUID, Decimal, datetime/date
(ISO text) and a map/parallel ``BatchResult`` (``br``). Importing unwraps the envelope into the JSON value
the neutral history stores, parsing strictly (``history.strict_json``) and evaluating nothing; values JSON
has no type for (bytes, UUID, Decimal, dates, tuples) become their JSON form and the decode says so, since
replay then hands the code that form back. Replay wraps a value again the way the SDK does, so the SDK
decodes it itself. Execution input and output are plain JSON text (``json.dumps`` of the handler's event
and return value). Nothing is ever unpickled: text that is not JSON is a ``PayloadError`` naming where.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from replaytest.history.strict_json import StrictJSONError, loads_strict

# The SDK's type tags (serdes.TypeTag) whose values JSON holds as they are.
_PLAIN_TAGS = {"n", "s", "i", "f", "b"}
_CONTAINER_TAGS = {"l", "m"}
# Tags decoded to their JSON form: the value replay hands back is that form, not the recorded type.
_LOSSY_TAGS = {"B": "bytes", "u": "UUID", "d": "Decimal", "dt": "datetime", "D": "date", "t": "tuple"}
BATCH_RESULT_TAG = "br"
PLAIN_JSON_TAG = "json"  # not an SDK tag: an object checkpointed as plain JSON, without the envelope


class PayloadError(ValueError):
    """A payload that is not JSON text or not a well-formed envelope; the message names its place."""


@dataclass(frozen=True)
class Decoded:
    """One payload's JSON value; ``tag`` is the envelope's top-level tag (``br`` for a map/parallel batch
    result, which replay must wrap again as one), ``lossy`` names the types that became their JSON form."""

    value: Any
    tag: str | None = None
    lossy: tuple[str, ...] = ()


def parse_json(text: Any, where: str) -> Any:
    """Strict JSON of a payload text (None when absent or empty)."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise PayloadError(f"{where}: a payload must be JSON text, found {type(text).__name__}")
    try:
        return loads_strict(text)
    except StrictJSONError as error:
        at = f" at {error.json_path}" if error.json_path else ""
        raise PayloadError(f"{where}: the payload is not JSON{at}: {error.message}") from None
    except RecursionError:
        raise PayloadError(f"{where}: the payload is nested too deeply") from None


def decode_payload(text: Any, where: str) -> Decoded:
    """The JSON value of an operation's checkpointed payload, its envelope unwrapped."""
    data = parse_json(text, where)
    if data is None or isinstance(data, (str, int, float, bool, list)):
        return Decoded(data)
    if not (isinstance(data, dict) and set(data) == {"t", "v"}):
        # A step configured with a plain JSON serializer (``StepConfig(serdes=...)``) checkpoints an object
        # as it is; replay writes it back the same way.
        return Decoded(data, PLAIN_JSON_TAG)
    lossy: set[str] = set()
    try:
        value = _unwrap(data, where, lossy)
    except RecursionError:
        raise PayloadError(f"{where}: the payload is nested too deeply") from None
    return Decoded(value, BATCH_RESULT_TAG if data["t"] == BATCH_RESULT_TAG else None, tuple(sorted(lossy)))


def _unwrap(node: Any, where: str, lossy: set[str]) -> Any:
    if not (isinstance(node, dict) and set(node) == {"t", "v"}):
        return node  # the SDK's decoder passes a value without an envelope through as it is
    tag, value = node["t"], node["v"]
    if tag in _PLAIN_TAGS:
        return value
    if tag == "l" or tag == "t":
        if not isinstance(value, list):
            raise PayloadError(f"{where}: envelope tag {tag!r} holds {type(value).__name__}, not a list")
        if tag == "t":
            lossy.add("tuple")
        return [_unwrap(item, where, lossy) for item in value]
    if tag in ("m", BATCH_RESULT_TAG):
        if not isinstance(value, dict):
            raise PayloadError(f"{where}: envelope tag {tag!r} holds {type(value).__name__}, not an object")
        return {key: _unwrap(item, where, lossy) for key, item in value.items()}
    if tag in _LOSSY_TAGS:
        if not isinstance(value, str):
            raise PayloadError(f"{where}: envelope tag {tag!r} holds {type(value).__name__}, not text")
        lossy.add(_LOSSY_TAGS[tag])
        return value
    raise PayloadError(f"{where}: unknown envelope tag {tag!r}")


def encode_payload(value: Any, tag: str | None = None) -> str:
    """A JSON value as the SDK checkpoints it (its default serializer's envelope), so the SDK decodes it."""
    if tag == PLAIN_JSON_TAG or (tag is None and (value is None or isinstance(value, (str, int, float, bool)))):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    wrapped = _wrap(value)
    if tag == BATCH_RESULT_TAG:
        wrapped = {"t": BATCH_RESULT_TAG, "v": wrapped["v"]}
    return json.dumps(wrapped, separators=(",", ":"), ensure_ascii=False)


def _wrap(value: Any) -> dict[str, Any]:
    if value is None:
        return {"t": "n", "v": None}
    if isinstance(value, bool):
        return {"t": "b", "v": value}
    if isinstance(value, int):
        return {"t": "i", "v": value}
    if isinstance(value, float):
        return {"t": "f", "v": value}
    if isinstance(value, str):
        return {"t": "s", "v": value}
    if isinstance(value, list):
        return {"t": "l", "v": [_wrap(item) for item in value]}
    if isinstance(value, dict):
        return {"t": "m", "v": {str(key): _wrap(item) for key, item in value.items()}}
    raise PayloadError(f"a history value of type {type(value).__name__} is not JSON")
