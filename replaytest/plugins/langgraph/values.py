"""Checkpoint values of LangGraph savers, decoded without importing or unpickling anything.

Savers store each value as ``(type, bytes)`` written by LangGraph's ``JsonPlusSerializer``: ``null``,
``bytes``, ``bytearray``, ``json`` and ``msgpack``; ``pickle`` only when a saver was built with
``pickle_fallback=True``, and ``msgpack+aes`` style names when encrypted. ``decode_typed`` turns the
readable ones into JSON values: msgpack extension values (datetimes, UUIDs, sets, dataclasses, pydantic
models, …), which LangGraph itself revives by importing the named module, become tagged objects
``{"$type": "module.Name", "$ext": kind, "$value": …}`` instead. Pickled and encrypted values are refused
with ``ValueRefused`` naming the type; nothing is ever unpickled.

Stored bytes may be broken or hostile (histories are imported from production databases and shared), so
msgpack is decoded here by a small iterative decoder rather than by a C library: every declared length is
checked against the bytes left before anything is allocated, and each value is decoded within a
``DecodeBudget`` (bytes read and produced, values built, nesting depth). Bytes that are not msgpack raise
``MalformedValue`` (what is wrong, at which byte); a value over budget raises ``BudgetExceeded`` naming the
budget. Neither ever becomes a ``RecursionError`` or an unbounded allocation.

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
import struct
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from replaytest.plugins.langgraph.internals import EXT_KINDS
from replaytest.plugins.recorded_classes import imported_attribute

TYPE_KEY = "$type"
EXT_KEY = "$ext"
VALUE_KEY = "$value"
METHOD_KEY = "$method"


class ValueRefused(Exception):
    """A stored value replaytest will not decode (pickle, encrypted, unknown serializer type, malformed, over budget)."""


class MalformedValue(ValueRefused):
    """Stored bytes that are not what their serializer type says (truncated, corrupt, a bad extension payload)."""


class BudgetExceeded(ValueRefused):
    """A stored value larger or deeper than its ``DecodeBudget`` allows."""


@dataclass(frozen=True)
class DecodeBudget:
    """Bounds for decoding one stored value. The defaults are far above what a LangGraph checkpoint of a
    long conversation holds and far below what would exhaust a CI machine's memory or Python's stack."""

    max_stored_bytes: int = 32 * 1024 * 1024  # the stored value's own size (checked before it is read)
    max_produced_bytes: int = 64 * 1024 * 1024  # text and binary produced (binary grows by a third as base64)
    max_nodes: int = 1_000_000  # values built (scalars, lists, maps, extension values)
    max_depth: int = 200  # nesting of lists, maps and extension values; later stages recurse over values


DEFAULT_BUDGET = DecodeBudget()


def decode_typed(type_name: str | None, data: bytes | None, budget: DecodeBudget = DEFAULT_BUDGET) -> Any:
    """A saver's ``(type, bytes)`` as a JSON value (see the module docstring)."""
    if type_name in (None, "null") or data is None:
        return None
    if type_name in ("bytes", "bytearray", "json", "msgpack") and len(data) > budget.max_stored_bytes:
        raise BudgetExceeded(
            f"stored value of {len(data):,} bytes is over the decode budget of {budget.max_stored_bytes:,} bytes "
            "(max_stored_bytes)"
        )
    if type_name in ("bytes", "bytearray"):
        return _tagged("builtins." + type_name, "arg", base64.b64encode(bytes(data)).decode("ascii"))
    if type_name == "json":
        return _decode_json(bytes(data), budget)
    if type_name == "msgpack":
        return _MsgpackDecoder(bytes(data), budget).decode()
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


def _decode_json(data: bytes, budget: DecodeBudget) -> Any:
    try:
        value = json.loads(data)
    except RecursionError:  # the C scanner recurses once per bracket
        raise BudgetExceeded(f"JSON nests deeper than the decode budget of {budget.max_depth} levels (max_depth)") from None
    except ValueError as error:  # also UnicodeDecodeError, and integers over Python's digit limit
        raise MalformedValue(f"malformed JSON: {error}") from None
    _check_shape(value, budget)
    return _jsonable(value)


def _check_shape(value: Any, budget: DecodeBudget) -> None:
    """Count the values and levels of a decoded JSON value without recursing (see ``DecodeBudget``)."""
    nodes = 0
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        nodes += 1
        if nodes > budget.max_nodes:
            raise BudgetExceeded(f"JSON holds more than the decode budget of {budget.max_nodes:,} values (max_nodes)")
        if isinstance(item, (dict, list)):
            if depth > budget.max_depth:
                raise BudgetExceeded(
                    f"JSON nests deeper than the decode budget of {budget.max_depth} levels (max_depth)"
                )
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)


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


# msgpack format bytes (https://github.com/msgpack/msgpack/blob/master/spec.md) with fixed-size payloads:
# the struct format of the value that follows.
_FIXED = {
    0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q",
    0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
}
_STR = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}
_BIN = {0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
_ARRAY = {0xDC: ">H", 0xDD: ">I"}
_MAP = {0xDE: ">H", 0xDF: ">I"}
_EXT = {0xC7: ">B", 0xC8: ">H", 0xC9: ">I"}
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_NO_KEY = object()


class _Frame:
    """A container being filled: a list (``items``), a map (``mapping``, ``key`` awaiting its value) or an
    extension value (one payload value that must end exactly at ``end``)."""

    __slots__ = ("kind", "remaining", "items", "mapping", "key", "end", "code", "start")

    def __init__(self, kind: str, remaining: int, start: int, end: int = 0, code: int = 0) -> None:
        self.kind = kind
        self.remaining = remaining
        self.items: list[Any] = []
        self.mapping: dict[str, Any] = {}
        self.key: Any = _NO_KEY
        self.start = start
        self.end = end
        self.code = code


class _MsgpackDecoder:
    """One msgpack value to JSON, iteratively, within a budget (see the module docstring). Extension
    payloads (themselves msgpack) are decoded in place: a frame bounds reads to the payload's bytes."""

    def __init__(self, data: bytes, budget: DecodeBudget) -> None:
        self.data = data
        self.budget = budget
        self.pos = 0
        self.limit = len(data)  # end of the innermost extension payload being read, else of the data
        self.produced = 0
        self.stack: list[_Frame] = []
        self.ext_ends: list[int] = []  # where each extension payload being read ends, innermost last

    def decode(self) -> Any:
        stack, max_nodes, nodes = self.stack, self.budget.max_nodes, 0
        while True:
            start = self.pos
            value = self._item()
            if value is _NO_KEY:  # a non-empty container was opened: read its first item
                continue
            while True:  # the finished value goes into its container, which may be finished in turn
                nodes += 1
                if nodes > max_nodes:
                    raise BudgetExceeded(
                        f"msgpack value holds more than the decode budget of {max_nodes:,} values "
                        f"(max_nodes; at byte {start})"
                    )
                if not stack:
                    if self.pos != len(self.data):
                        raise MalformedValue(
                            f"malformed msgpack: {len(self.data) - self.pos} byte(s) left over after the value "
                            f"ended at byte {self.pos}"
                        )
                    return value
                frame = stack[-1]
                if frame.kind == "array":  # the common case, without a call
                    frame.items.append(value)
                    frame.remaining -= 1
                    if frame.remaining:
                        break
                    value = frame.items
                else:
                    done, value = self._add(frame, value)
                    if not done:
                        break
                stack.pop()
                start = frame.start
                if frame.kind == "ext":
                    self.ext_ends.pop()
                    self.limit = self.ext_ends[-1] if self.ext_ends else len(self.data)

    def _produce(self, size: int, at: int) -> None:
        self.produced += size
        if self.produced > self.budget.max_produced_bytes:
            raise BudgetExceeded(
                f"msgpack value decodes to more than the decode budget of {self.budget.max_produced_bytes:,} bytes "
                f"of text and binary (max_produced_bytes; at byte {at})"
            )

    def _take(self, size: int, what: str, at: int) -> bytes:
        if size > self.limit - self.pos:
            within = "its extension payload" if self.ext_ends else "the value"
            raise MalformedValue(
                f"malformed msgpack: {what} at byte {at} needs {size:,} byte(s), {within} has "
                f"{max(self.limit - self.pos, 0):,} left (truncated, or a corrupt length)"
            )
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def _number(self, fmt: str, what: str, at: int) -> Any:
        return struct.unpack(fmt, self._take(struct.calcsize(fmt), what, at))[0]

    def _item(self) -> Any:
        """The next complete scalar (or empty container) at ``pos``, or ``_NO_KEY`` after opening a container."""
        at = self.pos
        if at >= self.limit:
            self._take(1, "a value", at)  # raises: nothing left
        code = self.data[at]
        self.pos = at + 1
        if code <= 0x7F:
            return code
        if code >= 0xE0:
            return code - 0x100
        if 0xA0 <= code <= 0xBF:
            return self._text(code & 0x1F, at)
        if 0x90 <= code <= 0x9F:
            return self._open("array", code & 0x0F, at)
        if 0x80 <= code <= 0x8F:
            return self._open("map", code & 0x0F, at)
        if code == 0xC0:
            return None
        if code in (0xC2, 0xC3):
            return code == 0xC3
        if code in _FIXED:
            number = self._number(_FIXED[code], "a number", at)
            if isinstance(number, float) and not math.isfinite(number):
                return _tagged("builtins.float", "arg", repr(number))
            return number
        if code in _STR:
            return self._text(self._number(_STR[code], "a string length", at), at)
        if code in _BIN:
            data = self._take(self._number(_BIN[code], "a binary length", at), "binary data", at)
            encoded = base64.b64encode(data).decode("ascii")
            self._produce(len(encoded), at)
            return _tagged("builtins.bytes", "arg", encoded)
        if code in _ARRAY:
            return self._open("array", self._number(_ARRAY[code], "an array length", at), at)
        if code in _MAP:
            return self._open("map", self._number(_MAP[code], "a map length", at), at)
        if code in _EXT or code in _FIXEXT:
            size = _FIXEXT[code] if code in _FIXEXT else self._number(_EXT[code], "an extension length", at)
            ext_type = self._number(">b", "an extension type", at)
            return self._extension(ext_type, size, at)
        raise MalformedValue(f"malformed msgpack: byte 0x{code:02x} at byte {at} starts no msgpack value")

    def _text(self, size: int, at: int) -> str:
        end = self.pos + size
        if end > self.limit:
            self._take(size, "a string", at)  # raises: truncated
        raw = self.data[self.pos : end]
        self.pos = end
        self._produce(size, at)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise MalformedValue(f"malformed msgpack: the string at byte {at} is not UTF-8 ({error.reason})") from None

    def _open(self, kind: str, count: int, at: int) -> Any:
        if count == 0:
            return [] if kind == "array" else {}
        # Every item takes at least one byte: a declared count the bytes left cannot hold is refused
        # before anything is allocated for it.
        needed = count if kind == "array" else 2 * count
        if needed > self.limit - self.pos:
            raise MalformedValue(
                f"malformed msgpack: the {kind} at byte {at} declares {count:,} item(s), more than the "
                f"{max(self.limit - self.pos, 0):,} byte(s) left can hold (truncated, or a corrupt length)"
            )
        self._push(_Frame(kind, needed, at), at)
        return _NO_KEY

    def _push(self, frame: _Frame, at: int) -> None:
        if len(self.stack) >= self.budget.max_depth:
            raise BudgetExceeded(
                f"msgpack value nests deeper than the decode budget of {self.budget.max_depth} levels "
                f"(max_depth; at byte {at})"
            )
        self.stack.append(frame)

    def _extension(self, ext_type: int, size: int, at: int) -> Any:
        kind = EXT_KINDS.get(ext_type)
        if kind is None or kind == "numpy":  # not a kind replaytest revives: named, never decoded
            self._take(size, "an extension payload", at)
            return {TYPE_KEY: "?", EXT_KEY: kind or f"ext-{ext_type}", VALUE_KEY: None}
        if size > self.limit - self.pos:
            self._take(size, "an extension payload", at)  # raises: truncated
        if size == 0:
            raise MalformedValue(f"malformed msgpack: the extension value (type {ext_type}) at byte {at} is empty")
        self._push(_Frame("ext", 1, at, end=self.pos + size, code=ext_type), at)
        self.limit = self.pos + size
        self.ext_ends.append(self.limit)
        return _NO_KEY

    def _add(self, frame: _Frame, value: Any) -> tuple[bool, Any]:
        """Put a finished ``value`` into a map or extension ``frame``; (True, the frame's value) once the
        frame is complete."""
        frame.remaining -= 1
        if frame.kind == "map":
            if frame.key is _NO_KEY:
                frame.key = value if isinstance(value, str) else json.dumps(value)
                if not isinstance(value, str):
                    self._produce(len(frame.key), frame.start)
                return False, None
            frame.mapping[frame.key] = value
            frame.key = _NO_KEY
            return (True, frame.mapping) if frame.remaining == 0 else (False, None)
        return True, self._revived_form(frame, value)

    def _revived_form(self, frame: _Frame, parts: Any) -> dict[str, Any]:
        """An extension value's payload ``[module, name, value, method?]`` as a tagged object."""
        if self.pos != frame.end:
            raise MalformedValue(
                f"malformed msgpack: the extension value (type {frame.code}) at byte {frame.start} holds "
                f"{frame.end - self.pos} byte(s) after its payload"
            )
        if not (isinstance(parts, list) and len(parts) >= 3 and isinstance(parts[0], str) and isinstance(parts[1], str)):
            raise MalformedValue(
                f"malformed msgpack: the extension value (type {frame.code}) at byte {frame.start} is not "
                f"[module, name, value, ...] as LangGraph writes it"
            )
        method = parts[3] if len(parts) > 3 and isinstance(parts[3], str) else None
        return _tagged(f"{parts[0]}.{parts[1]}", EXT_KINDS[frame.code], parts[2], method)


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
