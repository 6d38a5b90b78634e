"""Canonical digests of call arguments: ``args_digest(args, kwargs) -> "sha256:<hex>"``.

The digest is taken over canonical JSON of ``{"args": [...], "kwargs": {...}}``: keys sorted, no
whitespace, UTF-8 without ``\\u`` escapes. Values that JSON has no form for are encoded as tagged
objects that depend only on the value, never on memory addresses or hash seeds:

- tuples are lists; sets and frozensets are ``{"$set": [...]}`` sorted by their canonical text;
- bytes are ``{"$bytes": "<hex>"}``; NaN and infinities are ``{"$float": "nan" | "inf" | "-inf"}``;
- dicts with non-string keys are ``{"$dict": [[key, value], ...]}`` sorted by canonical key text;
- enums are their value; dataclasses are ``{"$dataclass": "<module.qualname>", "fields": {...}}``;
- datetime/date/time are ``{"$datetime": iso}`` (``$date``, ``$time``); Decimal, UUID and paths are
  ``{"$decimal": str}``, ``{"$uuid": str}``, ``{"$path": str}``;
- objects with ``model_dump()`` (pydantic v2) are encoded through it.

Anything else raises ``DigestError`` naming the type: a ``repr`` would usually embed an address and
make the digest differ per process, which is worse than refusing.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import json
import math
import pathlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

DIGEST_PREFIX = "sha256:"


class DigestError(TypeError):
    """An argument has no canonical form (see the module docstring for what is supported)."""


# One encoder for every digest: ``json.dumps`` with non-default options builds a new encoder per call,
# which is a measurable share of replaying a long history (every command is digested).
_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Canonical JSON text of ``value`` after encoding non-JSON values as described above."""
    return _CANONICAL_ENCODER.encode(_encode(value))


def sha256_text(text: str) -> str:
    """``sha256:<hex>`` of ``text`` encoded as UTF-8 (prompt versions use this too)."""
    return DIGEST_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


# Types ``_encode`` returns unchanged and the encoder writes as they are (floats are not here: a NaN must
# become a tagged object, not an encoder error).
_PLAIN_SCALARS = frozenset((str, int, bool, type(None)))


def args_digest(args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> str:
    """The digest recorded as an event's ``args_digest``; equal arguments give equal digests everywhere."""
    positional = list(args)
    named = dict(kwargs or {})
    payload = {"args": positional, "kwargs": named}
    plain = _PLAIN_SCALARS
    if all(type(item) in plain for item in positional) and all(
        type(key) is str and type(item) in plain for key, item in named.items()
    ):
        # Flat scalar arguments (most steps): the canonical text without the recursive walk.
        return sha256_text(_CANONICAL_ENCODER.encode(payload))
    return sha256_text(canonical_json(payload))


def _encode(value: Any) -> Any:
    # Fast path for plain JSON values, which are nearly all arguments (replay digests every command).
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float and math.isfinite(value):
        return value
    if kind is list or kind is tuple:
        return [_encode(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: _encode(item) for key, item in value.items()}
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return _encode(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return {"$float": "nan"}
        if math.isinf(value):
            return {"$float": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, (list, tuple)):
        return [_encode(item) for item in value]
    if isinstance(value, Mapping):
        if all(isinstance(key, str) for key in value):
            return {key: _encode(item) for key, item in value.items()}
        pairs = [[_encode(key), _encode(item)] for key, item in value.items()]
        pairs.sort(key=lambda pair: json.dumps(pair[0], sort_keys=True, ensure_ascii=False))
        return {"$dict": pairs}
    if isinstance(value, (set, frozenset)):
        items = [_encode(item) for item in value]
        items.sort(key=lambda item: json.dumps(item, sort_keys=True, ensure_ascii=False))
        return {"$set": items}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, datetime.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"$time": value.isoformat()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    if isinstance(value, pathlib.PurePath):
        return {"$path": value.as_posix()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {
            "$dataclass": f"{kind.__module__}.{kind.__qualname__}",
            "fields": {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _encode(dump(mode="json"))
    raise DigestError(
        f"cannot digest a {type(value).__module__}.{type(value).__qualname__}: pass JSON-like values, "
        "dataclasses or enums to steps (see replaytest.history.digest)"
    )
