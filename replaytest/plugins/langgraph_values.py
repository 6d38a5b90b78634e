"""Checkpoint values of LangGraph savers, decoded without importing or unpickling anything.

Savers store each value as ``(type, bytes)`` written by LangGraph's ``JsonPlusSerializer``: ``null``,
``bytes``, ``bytearray``, ``json`` and ``msgpack``; ``pickle`` only when a saver was built with
``pickle_fallback=True``, and ``msgpack+aes`` style names when encrypted. ``decode_typed`` turns the
readable ones into JSON values: msgpack extension values (datetimes, UUIDs, sets, dataclasses, pydantic
models, …), which LangGraph itself revives by importing the named module, become tagged objects
``{"$type": "module.Name", "$ext": kind, "$value": …}`` instead. Pickled and encrypted values are refused
with ``ValueRefused`` naming the type; nothing is ever unpickled.

``revive`` does the opposite for replay, where the current code is already imported: a tagged object
becomes the standard-library value it stood for, or an instance of a class the current code has
already imported (dataclass, pydantic model, named tuple, enum); nothing is imported to find a class
(``recorded_classes``, shared with DBOS replay).
``normal_form`` encodes a live value the way a saver would and decodes it back, so a replayed return
value compares with a recorded one.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import json
import math
import pathlib
import uuid
from collections import deque
from typing import Any

from replaytest.plugins.langgraph_internals import EXT_KINDS
from replaytest.plugins.recorded_classes import imported_attribute

TYPE_KEY = "$type"
EXT_KEY = "$ext"
VALUE_KEY = "$value"
METHOD_KEY = "$method"


class ValueRefused(Exception):
    """A stored value replaytest will not decode (pickle, encrypted, unknown serializer type)."""


def decode_typed(type_name: str | None, data: bytes | None) -> Any:
    """A saver's ``(type, bytes)`` as a JSON value (see the module docstring)."""
    if type_name in (None, "null") or data is None:
        return None
    if type_name in ("bytes", "bytearray"):
        return _tagged("builtins." + type_name, "arg", base64.b64encode(bytes(data)).decode("ascii"))
    if type_name == "json":
        return _jsonable(json.loads(data))
    if type_name == "msgpack":
        import ormsgpack

        return _jsonable(ormsgpack.unpackb(data, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS))
    if type_name == "pickle":
        raise ValueRefused(
            "value stored with pickle (a saver built with pickle_fallback=True); replaytest never unpickles: "
            "store JSON/msgpack-serialisable values, or export them yourself"
        )
    raise ValueRefused(f"value stored with serializer type {type_name!r} (encrypted or unknown); cannot decode it")


def _tagged(type_name: str, ext: str, value: Any, method: str | None = None) -> dict[str, Any]:
    tagged = {TYPE_KEY: type_name, EXT_KEY: ext, VALUE_KEY: value}
    if method:
        tagged[METHOD_KEY] = method
    return tagged


def _ext_hook(code: int, data: bytes) -> Any:
    import ormsgpack

    kind = EXT_KINDS.get(code)
    if kind is None or kind == "numpy":
        return {TYPE_KEY: "?", EXT_KEY: kind or f"ext-{code}", VALUE_KEY: None}
    parts = ormsgpack.unpackb(data, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)
    module, name, value = parts[0], parts[1], parts[2]
    method = parts[3] if len(parts) > 3 and isinstance(parts[3], str) else None
    return _tagged(f"{module}.{name}", kind, value, method)


def _jsonable(value: Any) -> Any:
    """Plain JSON: string keys, lists for tuples, finite floats as they are, others as text."""
    if isinstance(value, dict):
        return {key if isinstance(key, str) else json.dumps(_jsonable(key)): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return _tagged("builtins.float", "arg", repr(value))
    if isinstance(value, bytes):
        return _tagged("builtins.bytes", "arg", base64.b64encode(value).decode("ascii"))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def normal_form(value: Any) -> Any:
    """``value`` as a saver would store it, decoded back (for comparing live values with recorded ones)."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    try:
        return decode_typed(*JsonPlusSerializer().dumps_typed(value))
    except Exception:  # a value the saver could not have stored either: compare its text
        return repr(value)


# Standard-library types revived by constructing them from their recorded form (never by importing).
_STDLIB: dict[str, Any] = {
    "datetime.datetime": datetime.datetime,
    "datetime.date": datetime.date,
    "datetime.time": datetime.time,
    "datetime.timedelta": datetime.timedelta,
    "datetime.timezone": datetime.timezone,
    "uuid.UUID": uuid.UUID,
    "decimal.Decimal": decimal.Decimal,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "collections.deque": deque,
    "pathlib.PosixPath": pathlib.PosixPath,
    "pathlib.WindowsPath": pathlib.PureWindowsPath,
    "pathlib.Path": pathlib.Path,
}


def revive(value: Any) -> Any:
    """A decoded value as the current code expects it (see the module docstring); unknown tags stay dicts."""
    if isinstance(value, list):
        return [revive(item) for item in value]
    if not isinstance(value, dict):
        return value
    if TYPE_KEY in value and EXT_KEY in value and VALUE_KEY in value:
        revived = _revive_tagged(value)
        if revived is not _UNREVIVED:
            return revived
    return {key: revive(item) for key, item in value.items()}


_UNREVIVED = object()
# The only named methods a recorded value may be revived through (what the serializer writes).
_ALTERNATE_CONSTRUCTORS = frozenset({"fromisoformat", "fromordinal", "fromtimestamp"})


def _revive_tagged(tagged: dict[str, Any]) -> Any:
    type_name, ext, raw = tagged[TYPE_KEY], tagged[EXT_KEY], tagged[VALUE_KEY]
    if type_name in ("builtins.bytes", "builtins.bytearray"):
        data = base64.b64decode(raw)
        return data if type_name == "builtins.bytes" else bytearray(data)
    if type_name == "builtins.float":
        return float(raw)
    cls = _STDLIB.get(type_name) or _imported_class(type_name)
    if cls is None:
        return _UNREVIVED
    payload = revive(raw)
    try:
        if ext == "method" and tagged.get(METHOD_KEY) in _ALTERNATE_CONSTRUCTORS:
            return getattr(cls, tagged[METHOD_KEY])(payload)
        if ext == "arg":
            return cls(payload)
        if ext == "args":
            return cls(*payload)
        if ext in ("kwargs", "pydantic-v1"):
            return cls(**payload)
        if ext == "pydantic-v2":
            return getattr(cls, "model_validate")(payload)
    except Exception:  # the class changed since the value was recorded: hand the code its recorded form
        return _UNREVIVED
    return _UNREVIVED


def _imported_class(type_name: str) -> type | None:
    """A class the current code has already imported (dataclass, pydantic model, named tuple, enum)."""
    found = imported_attribute(type_name)
    cls = found.value if found is not None else None
    if not isinstance(cls, type):
        return None
    if (
        dataclasses.is_dataclass(cls)
        or issubclass(cls, enum.Enum)
        or hasattr(cls, "model_validate")
        or (issubclass(cls, tuple) and hasattr(cls, "_fields"))
    ):
        return cls
    return None
