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

``Rebuilder`` (one per replayed history) turns typed JSON back into Python values. A class named by an
``"object"`` entry is rebuilt only when the current code has already imported its module
(``recorded_classes``): a history never makes replay import a module. Only classes outside the standard
library are rebuilt, an instance by ``cls.__new__`` plus its recorded state (as pickle does), and a
recorded call only for exceptions and enums. An object whose module is not imported reaches the code as
plain data (its recorded state as a dict), an exception as a stand-in ``Exception`` of the same name;
``Rebuilder.note`` names those classes for the replay result. Anything else is a ``RebuildError`` naming
the type.
"""

from __future__ import annotations

import _compat_pickle
import base64
import binascii
import codecs
import collections
import datetime
import decimal
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


class Rebuilder:
    """Rebuilds the typed JSON of one history, counting the recorded classes it left as plain data
    because the current code has not imported their modules (``note`` says so once per history)."""

    def __init__(self) -> None:
        self.as_data: collections.Counter[str] = collections.Counter()
        self.stand_in_errors: collections.Counter[str] = collections.Counter()

    def rebuild(self, typed: Any) -> Any:
        """The Python value typed JSON describes (``RebuildError`` names what cannot be rebuilt)."""
        if isinstance(typed, list):
            return [self.rebuild(item) for item in typed]
        if not isinstance(typed, dict):
            return typed
        kind = typed.get(TYPE_KEY)
        if kind is None:
            return {key: self.rebuild(item) for key, item in typed.items()}
        builder = _BUILDERS.get(kind)
        if builder is None:
            raise RebuildError(f"unknown typed value {kind!r}")
        return builder(self, typed)

    def note(self) -> str | None:
        """What reached the code other than as recorded, or ``None`` when every class was rebuilt."""
        parts = []
        if self.as_data:
            count = sum(self.as_data.values())
            parts.append(
                f"{count} recorded object{'s' if count != 1 else ''} of {_classes(self.as_data)} the workflow code "
                f"has not imported ({', '.join(sorted(self.as_data))}) reached the code as {'dicts' if count != 1 else 'a dict'}"
            )
        if self.stand_in_errors:
            count = sum(self.stand_in_errors.values())
            parts.append(
                f"{count} recorded exception{'s' if count != 1 else ''} of {_classes(self.stand_in_errors)} the workflow "
                f"code has not imported ({', '.join(sorted(self.stand_in_errors))}) "
                f"{'were' if count != 1 else 'was'} raised as a stand-in Exception of the same name"
            )
        if not parts:
            return None
        return "; ".join(parts) + " (replay imports no module a history names)"

    def error(self, typed: Any) -> Any:
        """A recorded exception (it is raised, so it cannot reach the code as a dict): as ``rebuild``,
        except that an ``object`` entry of a class whose module is not imported — how pickle records
        most exceptions — becomes a stand-in ``Exception`` of that name with the recorded arguments."""
        name = typed.get("class") if isinstance(typed, dict) and typed.get(TYPE_KEY) == "object" else None
        if not isinstance(name, str) or _imported_class(name) is not None:
            return self.rebuild(typed)
        self.stand_in_errors[name] += 1
        error = _stand_in_exception(name)(*self.rebuild(typed.get("call_args", typed.get("new_args", []))))
        state = self.rebuild(typed.get("state"))
        if isinstance(state, dict):
            error.__dict__.update(state)
        return error

    # -- builders ------------------------------------------------------------------------------------

    def items(self, typed: Mapping[str, Any]) -> list[Any]:
        return [self.rebuild(item) for item in typed.get("items", [])]

    def pair_items(self, typed: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        return [(_hashable(self.rebuild(key)), self.rebuild(value)) for key, value in typed.get("items", [])]

    def object(self, typed: Mapping[str, Any]) -> Any:
        name = typed.get("class", "?")
        cls = _imported_class(name)
        if cls is None:
            self.as_data[name] += 1
            return self._plain(typed)
        if "call_args" in typed:
            import enum

            if not (issubclass(cls, (BaseException, enum.Enum))):
                raise RebuildError(f"{name} was pickled as a constructor call; replay redoes that only for exceptions and enums")
            instance: Any = cls(*self.rebuild(typed["call_args"]))
        else:
            instance = cls.__new__(cls, *self.rebuild(typed.get("new_args", [])))
        if "state" in typed:
            _set_state(instance, self.rebuild(typed["state"]))
        for item in self.rebuild(typed.get("list_items", [])):
            instance.append(item)
        for key, value in typed.get("dict_items", []):
            instance[_hashable(self.rebuild(key))] = self.rebuild(value)
        return instance

    def _plain(self, typed: Mapping[str, Any]) -> Any:
        """An object whose class is not imported, as plain data: its recorded state when that is the
        instance dict (plain classes and dataclasses, with slots merged in), its items when it only has
        items; otherwise the recorded entry itself, values rebuilt."""
        recorded = {key: typed[key] for key in ("new_args", "call_args", "state", "list_items", "dict_items") if key in typed}
        state = self.rebuild(recorded.get("state"))
        if isinstance(state, list) and len(state) == 2 and all(part is None or isinstance(part, dict) for part in state):
            state = {**(state[0] or {}), **(state[1] or {})}  # (dict, slots), as pickle records it
        if set(recorded) == {"state"} and isinstance(state, dict):
            return state
        if set(recorded) == {"dict_items"}:
            return dict(self.pair_items({"items": recorded["dict_items"]}))
        if set(recorded) == {"list_items"}:
            return self.rebuild(recorded["list_items"])
        return {key: self.rebuild(value) for key, value in typed.items()}

    def exception(self, typed: Mapping[str, Any]) -> BaseException:
        name = typed.get("class", "?")
        module, _, attr = name.rpartition(".")
        cls: Any = _ALLOWED.get((module, attr)) or _imported_class(name)
        if cls is None:
            self.stand_in_errors[name] += 1
            cls = _stand_in_exception(name)
        if not issubclass(cls, BaseException):
            raise RebuildError(f"{name} is not an exception class")
        return cls(*self.rebuild(typed.get("args", [])))  # type: ignore[no-any-return]

    def defaultdict(self, typed: Mapping[str, Any]) -> Any:
        factory_name = typed.get("factory", "None")
        factory = None if factory_name == "None" else _ALLOWED.get(tuple(factory_name.rsplit(".", 1))) or _required_class(factory_name)  # type: ignore[arg-type]
        return collections.defaultdict(factory, self.pair_items(typed))


def rebuild(typed: Any) -> Any:
    """The Python value typed JSON describes (a fresh ``Rebuilder``; see there)."""
    return Rebuilder().rebuild(typed)


def _classes(counts: Mapping[str, int]) -> str:
    return "classes" if len(counts) != 1 else "a class"


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _imported_class(name: str) -> type | None:
    """The class ``name`` in a module the current code has already imported; ``None`` when its module is
    not imported (nothing is imported to find it). ``RebuildError`` for names replay never rebuilds and for
    an imported module that no longer has the class."""
    from replaytest.plugins.recorded_classes import imported_attribute

    if name.partition(".")[0] == "__main__":
        raise RebuildError(
            f"{name} was pickled by an application run as a script (__main__); no other process can "
            "import it — run the application as a module (python -m app) so its classes have an importable name"
        )
    module_name = name.rpartition(".")[0]
    if module_name.partition(".")[0] in _STDLIB and tuple(name.rsplit(".", 1)) not in _ALLOWED:
        raise RebuildError(f"{name} is a standard-library type replay does not rebuild")
    found = imported_attribute(name)
    if found is None:
        return None
    if found.value is None:
        raise RebuildError(f"the current code has no {name} (module {found.module_name} is imported, {found.qualname} is not in it)")
    if not isinstance(found.value, type):
        raise RebuildError(f"{name} is not a class")
    return found.value


def _required_class(name: str) -> type:
    """A class a value cannot stand without (a ``type`` value, a ``defaultdict`` factory)."""
    cls = _imported_class(name)
    if cls is None:
        raise RebuildError(
            f"{name}: the workflow code has not imported its module, and replay imports no module a history "
            "names; import it in the workflow's module (or list that module in DBOSReplayConfig.modules)"
        )
    return cls


def _stand_in_exception(name: str) -> type[Exception]:
    """An ``Exception`` subclass with the recorded class's name, for a class whose module is not imported:
    the workflow's ``except Exception`` and the failure's type name behave as recorded."""
    module_name, _, qualname = name.rpartition(".")
    short = qualname.rpartition(".")[2] or name
    return type(short, (Exception,), {"__module__": module_name, "__qualname__": qualname, "__doc__": f"Stands in for {name}."})


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


def _timezone(typed: Mapping[str, Any]) -> datetime.timezone:
    offset = datetime.timedelta(seconds=typed["offset_seconds"])
    return datetime.timezone.utc if offset == datetime.timedelta(0) else datetime.timezone(offset)


_BUILDERS: dict[str, Callable[[Rebuilder, Mapping[str, Any]], Any]] = {
    "dict": lambda r, t: dict(r.pair_items(t)),
    "tuple": lambda r, t: tuple(r.items(t)),
    "set": lambda r, t: {_hashable(i) for i in r.items(t)},
    "frozenset": lambda r, t: frozenset(_hashable(i) for i in r.items(t)),
    "bytes": lambda r, t: base64.b64decode(t["base64"]),
    "bytearray": lambda r, t: bytearray(base64.b64decode(t["base64"])),
    "complex": lambda r, t: complex(t["real"], t["imag"]),
    "float": lambda r, t: float(t["value"]),
    "datetime.datetime": lambda r, t: datetime.datetime.fromisoformat(t["iso"]),
    "datetime.date": lambda r, t: datetime.date.fromisoformat(t["iso"]),
    "datetime.time": lambda r, t: datetime.time.fromisoformat(t["iso"]),
    "datetime.timedelta": lambda r, t: datetime.timedelta(days=t["days"], seconds=t["seconds"], microseconds=t["microseconds"]),
    "datetime.timezone": lambda r, t: _timezone(t),
    "decimal.Decimal": lambda r, t: decimal.Decimal(t["value"]),
    "uuid.UUID": lambda r, t: uuid.UUID(hex=t["hex"]),
    "collections.OrderedDict": lambda r, t: collections.OrderedDict(r.pair_items(t)),
    "collections.defaultdict": Rebuilder.defaultdict,
    "collections.Counter": lambda r, t: collections.Counter(dict(r.pair_items(t))),
    "collections.deque": lambda r, t: collections.deque(r.items(t), t.get("maxlen")),
    "exception": Rebuilder.exception,
    "object": Rebuilder.object,
    "type": lambda r, t: _ALLOWED.get(tuple(t["name"].rsplit(".", 1))) or _required_class(t["name"]),  # type: ignore[arg-type]
}
