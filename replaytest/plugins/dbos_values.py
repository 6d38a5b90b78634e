"""DBOS payloads as data: a restricted pickle decoder, the typed JSON it writes, and rebuilding values.

DBOS stores step results, workflow inputs and outputs either as portable JSON or (its default) as
base64 pickle. A written history never holds pickle, so the importer turns pickle into *typed JSON*:

* JSON values stay as they are; a dict whose keys are not all strings, or that has a ``"$type"`` key of
  its own, becomes ``{"$type": "dict", "items": [[key, value], ...]}``;
* ``tuple``/``set``/``frozenset``/``bytes``/``bytearray``/``complex``/non-finite floats, ``datetime``
  types, ``Decimal``, ``UUID`` and the ``collections`` containers become ``{"$type": NAME, ...}``;
* instances of any other class become inert data: ``{"$type": "object", "class": "module.Name",
  "new_args": [...], "call_args": [...], "state": ..., "list_items": [...], "dict_items": [...]}`` —
  what pickle would have done to rebuild it, recorded rather than done.

``decode_pickle`` reads pickle with a ``pickle.Unpickler`` whose ``find_class`` hands out only the
real builtins/datetime/decimal/uuid/collections types listed below and, for every other name, a
placeholder class that records what pickle asks of it. Nothing user-defined is imported, constructed
or called while decoding. Refused (``PickleRefused``, naming the type): standard-library names outside
the allowlist (``os.system``, ``pathlib.PosixPath``, ``fractions.Fraction``), calls of names that are
not classes by convention (a lower-case callable, e.g. ``numpy.core.multiarray._reconstruct``),
persistent ids and out-of-band buffers.

``rebuild`` (used by the replayer) turns typed JSON back into Python values. Classes named by
``"object"`` entries are imported from the *current* code; only classes outside the standard library
are rebuilt, an instance by ``cls.__new__`` plus its recorded state (as pickle does), and a recorded
call only for exceptions and enums. Anything else is a ``RebuildError`` naming the type.
"""

from __future__ import annotations

import _compat_pickle
import base64
import binascii
import codecs
import collections
import datetime
import decimal
import importlib
import io
import math
import pickle
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any

TYPE_KEY = "$type"

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "copyreg", "__builtin__"}

# The real types pickle may rebuild while decoding: plain values and containers whose construction
# runs no user code. Exceptions of ``builtins`` are added below.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("builtins", name): getattr(__import__("builtins"), name)
    for name in (
        "set", "frozenset", "list", "dict", "tuple", "bytes", "bytearray", "complex", "int", "float", "str",
        "bool", "slice", "range", "object", "NotImplemented", "Ellipsis",
    )
}  # fmt: skip
_ALLOWED.update(
    {
        ("datetime", "datetime"): datetime.datetime,
        ("datetime", "date"): datetime.date,
        ("datetime", "time"): datetime.time,
        ("datetime", "timedelta"): datetime.timedelta,
        ("datetime", "timezone"): datetime.timezone,
        ("decimal", "Decimal"): decimal.Decimal,
        ("uuid", "UUID"): uuid.UUID,
        ("uuid", "SafeUUID"): uuid.SafeUUID,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "defaultdict"): collections.defaultdict,
        ("collections", "deque"): collections.deque,
        ("collections", "Counter"): collections.Counter,
        ("_codecs", "encode"): codecs.encode,  # how protocols 0-2 write bytes: encode(text, "latin1")
    }
)
for _name in dir(__import__("builtins")):
    _value = getattr(__import__("builtins"), _name)
    if isinstance(_value, type) and issubclass(_value, BaseException):
        _ALLOWED[("builtins", _name)] = _value


class PickleRefused(Exception):
    """A pickled payload names a type the restricted decoder will not accept."""

    def __init__(self, type_name: str, reason: str) -> None:
        self.type_name = type_name
        self.reason = reason
        super().__init__(f"{type_name}: {reason}")


class RebuildError(Exception):
    """A recorded value whose type the current code cannot rebuild."""


class _Inert:
    """What pickle builds for a class outside the allowlist: a record of the calls pickle made."""

    _replaytest_class = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> _Inert:
        instance = object.__new__(cls)
        instance.__dict__["_replaytest"] = {"new_args": list(args), "new_kwargs": dict(kwargs)}
        return instance

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.__dict__["_replaytest"]["state"] = state

    def append(self, item: Any) -> None:
        self.__dict__["_replaytest"].setdefault("list_items", []).append(item)

    def extend(self, items: Any) -> None:
        self.__dict__["_replaytest"].setdefault("list_items", []).extend(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__dict__["_replaytest"].setdefault("dict_items", []).append([key, value])


class _Called:
    """The result of pickle calling a placeholder class (REDUCE): class name and arguments."""

    def __init__(self, class_name: str, args: tuple[Any, ...]) -> None:
        self.class_name = class_name
        self.args = args
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state


def _reconstructor(cls: Any, base: Any, state: Any) -> Any:
    """``copyreg._reconstructor`` (pickle protocols 0 and 1) for placeholder classes only."""
    if isinstance(cls, type) and issubclass(cls, _Inert) and base is object and state is None:
        return _Inert.__new__(cls)
    if cls is uuid.UUID and base is object and state is None:  # the one allowlisted class pickled this way
        return object.__new__(cls)
    raise PickleRefused("copyreg._reconstructor", "only plain objects can be rebuilt this way")


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        # Protocols 0-2 spell Python 2 names (``__builtin__.set``); pickle maps them the same way.
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if (module, name) == ("copyreg", "_reconstructor"):
            return _reconstructor
        qualified = f"{module}.{name}"
        if module.partition(".")[0] in _STDLIB:
            raise PickleRefused(qualified, "a standard-library type outside the decoder's allowlist")
        if not name.rpartition(".")[2][:1].isupper():
            # REDUCE calls the global; by convention only classes are capitalised, and a function
            # call cannot be recorded as data the replayer could redo safely.
            return _refusing_callable(qualified)
        return _Recorder(name.rpartition(".")[2], (_Inert,), {"_replaytest_class": qualified})

    def persistent_load(self, pid: Any) -> Any:
        raise PickleRefused("persistent id", "pickles that reference external objects are not decoded")


def _refusing_callable(qualified: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PickleRefused(qualified, "rebuilt by calling a function, which the decoder never does")

    return refuse


class _Recorder(type):
    """The metaclass of placeholder classes: NEWOBJ (``cls.__new__(cls, *args)``) makes an ``_Inert``
    recording its arguments; REDUCE (calling the class) records the call instead of making it."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _Called(cls._replaytest_class, args)  # type: ignore[attr-defined]


def decode_pickle(text: str) -> Any:
    """Typed JSON for a DBOS ``py_pickle`` payload (base64 pickle); ``PickleRefused`` names a refused type."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise PickleRefused("payload", f"not base64: {error}") from None
    try:
        value = _RestrictedUnpickler(io.BytesIO(raw), buffers=()).load()
    except PickleRefused:
        raise
    except Exception as error:  # truncated data, unknown opcode, a refused construction
        raise PickleRefused("payload", f"not a pickle the decoder can read: {type(error).__name__}: {error}") from None
    return to_typed(value)


def to_typed(value: Any) -> Any:
    """Typed JSON for a decoded value (real allowlisted values and inert records)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {TYPE_KEY: "float", "value": repr(value)}
    if isinstance(value, list):
        return [to_typed(item) for item in value]
    if isinstance(value, collections.OrderedDict):
        return {TYPE_KEY: "collections.OrderedDict", "items": _pairs(value)}
    if isinstance(value, collections.defaultdict):
        factory = value.default_factory
        return {TYPE_KEY: "collections.defaultdict", "factory": _type_name(factory), "items": _pairs(value)}
    if isinstance(value, collections.Counter):
        return {TYPE_KEY: "collections.Counter", "items": _pairs(value)}
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value) and TYPE_KEY not in value:
            return {key: to_typed(item) for key, item in value.items()}
        return {TYPE_KEY: "dict", "items": _pairs(value)}
    if isinstance(value, collections.deque):
        return {TYPE_KEY: "collections.deque", "items": [to_typed(item) for item in value], "maxlen": value.maxlen}
    if isinstance(value, tuple):
        return {TYPE_KEY: "tuple", "items": [to_typed(item) for item in value]}
    if isinstance(value, (set, frozenset)):
        kind = "set" if isinstance(value, set) else "frozenset"
        return {TYPE_KEY: kind, "items": sorted((to_typed(item) for item in value), key=repr)}
    if isinstance(value, (bytes, bytearray)):
        kind = "bytes" if isinstance(value, bytes) else "bytearray"
        return {TYPE_KEY: kind, "base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, complex):
        return {TYPE_KEY: "complex", "real": value.real, "imag": value.imag}
    if isinstance(value, datetime.datetime):
        return {TYPE_KEY: "datetime.datetime", "iso": value.isoformat()}
    if isinstance(value, datetime.date):
        return {TYPE_KEY: "datetime.date", "iso": value.isoformat()}
    if isinstance(value, datetime.time):
        return {TYPE_KEY: "datetime.time", "iso": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {TYPE_KEY: "datetime.timedelta", "days": value.days, "seconds": value.seconds, "microseconds": value.microseconds}
    if isinstance(value, datetime.timezone):
        offset = value.utcoffset(None)
        return {TYPE_KEY: "datetime.timezone", "offset_seconds": offset.total_seconds(), "name": value.tzname(None)}
    if isinstance(value, decimal.Decimal):
        return {TYPE_KEY: "decimal.Decimal", "value": str(value)}
    if isinstance(value, uuid.UUID):
        return {TYPE_KEY: "uuid.UUID", "hex": value.hex}
    if isinstance(value, BaseException):
        return {TYPE_KEY: "exception", "class": _type_name(type(value)), "args": [to_typed(a) for a in value.args]}
    if isinstance(value, _Called):
        typed: dict[str, Any] = {TYPE_KEY: "object", "class": value.class_name, "call_args": to_typed(list(value.args))}
        if value.state is not None:
            typed["state"] = to_typed(value.state)
        return typed
    if isinstance(value, _Inert):
        record = value.__dict__["_replaytest"]
        typed = {TYPE_KEY: "object", "class": type(value)._replaytest_class}
        if record.get("new_args"):
            typed["new_args"] = to_typed(record["new_args"])
        for key in ("state", "list_items", "dict_items"):
            if key in record:
                typed[key] = to_typed(record[key])
        return typed
    if isinstance(value, type):
        return {TYPE_KEY: "type", "name": _type_name(value)}
    raise PickleRefused(_type_name(type(value)), "not representable as data")


def _pairs(mapping: Mapping[Any, Any]) -> list[list[Any]]:
    return [[to_typed(key), to_typed(item)] for key, item in mapping.items()]


def _type_name(cls: Any) -> str:
    if cls is None:
        return "None"
    if isinstance(cls, type) and issubclass(cls, _Inert):
        return str(cls._replaytest_class)
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', getattr(cls, '__name__', '?'))}"


def classes_in(typed: Any) -> list[str]:
    """Every class an ``"object"`` entry names (to warn about ``__main__`` classes at import)."""
    found: list[str] = []
    stack = [typed]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get(TYPE_KEY) in ("object", "exception") and isinstance(item.get("class"), str):
                found.append(item["class"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# --- rebuilding at replay ---------------------------------------------------------------------------


def rebuild(typed: Any) -> Any:
    """The Python value typed JSON describes; classes come from the current code (``RebuildError``)."""
    if isinstance(typed, list):
        return [rebuild(item) for item in typed]
    if not isinstance(typed, dict):
        return typed
    kind = typed.get(TYPE_KEY)
    if kind is None:
        return {key: rebuild(item) for key, item in typed.items()}
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise RebuildError(f"unknown typed value {kind!r}")
    return builder(typed)


def _items(typed: Mapping[str, Any]) -> list[Any]:
    return [rebuild(item) for item in typed.get("items", [])]


def _pair_items(typed: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    return [(_hashable(rebuild(key)), rebuild(value)) for key, value in typed.get("items", [])]


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _import_class(name: str) -> type:
    module_name, _, qualname = name.rpartition(".")
    # Nested classes: try the longest importable module prefix.
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name, qualname = ".".join(parts[:split]), ".".join(parts[split:])
        if module_name.partition(".")[0] in _STDLIB and (module_name, qualname) not in _ALLOWED:
            raise RebuildError(f"{name} is a standard-library type replay does not rebuild")
        if module_name == "__main__":
            raise RebuildError(
                f"{name} was pickled by an application run as a script (__main__); no other process can "
                "import it — run the application as a module (python -m app) so its classes have an importable name"
            )
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        try:
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            raise RebuildError(f"the current code has no {name}") from None
        if not isinstance(obj, type):
            raise RebuildError(f"{name} is not a class")
        return obj
    raise RebuildError(f"cannot import the module of {name}")


def _object(typed: Mapping[str, Any]) -> Any:
    name = typed.get("class", "?")
    cls = _import_class(name)
    if "call_args" in typed:
        import enum

        if not (issubclass(cls, (BaseException, enum.Enum))):
            raise RebuildError(f"{name} was pickled as a constructor call; replay redoes that only for exceptions and enums")
        instance: Any = cls(*rebuild(typed["call_args"]))
    else:
        instance = cls.__new__(cls, *rebuild(typed.get("new_args", [])))
    if "state" in typed:
        _set_state(instance, rebuild(typed["state"]))
    for item in rebuild(typed.get("list_items", [])):
        instance.append(item)
    for key, value in typed.get("dict_items", []):
        instance[_hashable(rebuild(key))] = rebuild(value)
    return instance


def _set_state(instance: Any, state: Any) -> None:
    """What pickle's BUILD does: ``__setstate__``, else the instance dict and slots."""
    setstate = getattr(instance, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if isinstance(state, list) and len(state) == 2:  # (dict, slots) arrives as a list through JSON
        state, slots = state
    if isinstance(state, dict):
        instance.__dict__.update(state)
    if isinstance(slots, dict):
        for key, value in slots.items():
            setattr(instance, key, value)


def _exception(typed: Mapping[str, Any]) -> BaseException:
    name = typed.get("class", "?")
    module, _, attr = name.rpartition(".")
    cls: Any = _ALLOWED.get((module, attr)) or _import_class(name)
    if not issubclass(cls, BaseException):
        raise RebuildError(f"{name} is not an exception class")
    return cls(*rebuild(typed.get("args", [])))


def _defaultdict(typed: Mapping[str, Any]) -> Any:
    factory_name = typed.get("factory", "None")
    factory = None if factory_name == "None" else _ALLOWED.get(tuple(factory_name.rsplit(".", 1))) or _import_class(factory_name)  # type: ignore[arg-type]
    return collections.defaultdict(factory, _pair_items(typed))


def _timezone(typed: Mapping[str, Any]) -> datetime.timezone:
    offset = datetime.timedelta(seconds=typed["offset_seconds"])
    return datetime.timezone.utc if offset == datetime.timedelta(0) else datetime.timezone(offset)


_BUILDERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "dict": lambda t: dict(_pair_items(t)),
    "tuple": lambda t: tuple(_items(t)),
    "set": lambda t: {_hashable(i) for i in _items(t)},
    "frozenset": lambda t: frozenset(_hashable(i) for i in _items(t)),
    "bytes": lambda t: base64.b64decode(t["base64"]),
    "bytearray": lambda t: bytearray(base64.b64decode(t["base64"])),
    "complex": lambda t: complex(t["real"], t["imag"]),
    "float": lambda t: float(t["value"]),
    "datetime.datetime": lambda t: datetime.datetime.fromisoformat(t["iso"]),
    "datetime.date": lambda t: datetime.date.fromisoformat(t["iso"]),
    "datetime.time": lambda t: datetime.time.fromisoformat(t["iso"]),
    "datetime.timedelta": lambda t: datetime.timedelta(days=t["days"], seconds=t["seconds"], microseconds=t["microseconds"]),
    "datetime.timezone": _timezone,
    "decimal.Decimal": lambda t: decimal.Decimal(t["value"]),
    "uuid.UUID": lambda t: uuid.UUID(hex=t["hex"]),
    "collections.OrderedDict": lambda t: collections.OrderedDict(_pair_items(t)),
    "collections.defaultdict": _defaultdict,
    "collections.Counter": lambda t: collections.Counter(dict(_pair_items(t))),
    "collections.deque": lambda t: collections.deque(_items(t), t.get("maxlen")),
    "exception": _exception,
    "object": _object,
    "type": lambda t: _ALLOWED.get(tuple(t["name"].rsplit(".", 1))) or _import_class(t["name"]),  # type: ignore[arg-type]
}
