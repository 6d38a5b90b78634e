"""``Record`` and ``FrozenRecord``: dataclasses whose generated code is written once, and ``replace``/``factory``.

A lint run imports about 30 classes that were plain ``@dataclass``/``@dataclass(frozen=True)`` (the model, the
configuration, the profiles, the plugins). Building them cost the pre-commit hook about 0.013 s a run (each
class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and frozen ``__setattr__``/``__delattr__`` compiled
from source on every start) and importing ``dataclasses`` (``inspect``, ``ast``, ``dis``, ``tokenize`` under
it) about 0.005 s more. Such a class now derives from ``Record`` (``FrozenRecord`` for a frozen one), declares
its fields as before (annotations, defaults; ``factory(dict)`` for ``field(default_factory=dict)``) and writes
its ``__init__`` (compiled into the module's bytecode, like any method). It inherits:

* ``__eq__``: equal to another instance of exactly its class when all fields are equal (as generated);
* ``__repr__``: ``Name(field=value, ...)`` (as generated);
* ``__hash__``: ``FrozenRecord``: the hash of the fields' tuple (as ``frozen=True`` generates); ``Record``:
  unhashable (as ``eq=True`` without ``frozen`` leaves it);
* ``FrozenRecord``: assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``; its
  ``__init__`` fills the instance's ``__dict__`` directly;
* ``__match_args__``, and ``__dataclass_fields__``/``__dataclass_params__`` made on first use by applying
  ``dataclasses.dataclass`` to a copy of the declarations: ``dataclasses.fields``, ``replace``, ``asdict``
  and ``is_dataclass`` answer exactly as for the dataclass the class was, without a run paying for it.

``replace`` here is ``dataclasses.replace`` for a record without importing ``dataclasses`` (any other object
goes to ``dataclasses.replace``); ``field_names`` lists a record's fields in order.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

if TYPE_CHECKING:
    from dataclasses import Field

T = TypeVar("T")
R = TypeVar("R")


class _Factory:
    """A field's default factory, as declared (``factory(dict)``); the class keeps no attribute for it."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def factory(make: Callable[[], T]) -> T:
    """``field(default_factory=make)`` of a record: the record's ``__init__`` calls ``make`` when not given."""
    return cast(T, _Factory(make))


class _DataclassMetadata:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a record class, made on first use (see the
    module docstring) and then kept on the class itself, where later lookups find it first."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: Any, owner: type) -> Any:
        if owner is Record or owner is FrozenRecord:
            raise AttributeError(self.attribute)
        import dataclasses

        names: tuple[str, ...] = owner._record_fields  # type: ignore[attr-defined]
        factories: dict[str, Callable[[], Any]] = owner._record_factories  # type: ignore[attr-defined]
        declared = owner.__dict__.get("__annotations__", {})
        namespace: dict[str, Any] = {"__module__": owner.__module__, "__qualname__": owner.__qualname__,
                                     "__annotations__": {name: declared[name] for name in names}}
        for name in names:
            if name in factories:
                namespace[name] = dataclasses.field(default_factory=factories[name])
            elif name in owner.__dict__:
                namespace[name] = owner.__dict__[name]
        shadow: Any = dataclasses.dataclass(frozen=issubclass(owner, FrozenRecord))(type(owner.__name__, (), namespace))
        type.__setattr__(owner, "__dataclass_fields__", shadow.__dataclass_fields__)  # type: ignore[attr-defined]
        type.__setattr__(owner, "__dataclass_params__", shadow.__dataclass_params__)  # type: ignore[attr-defined]
        return getattr(shadow, self.attribute)


class Record:
    """Base of a mutable record (what ``@dataclass`` made; see the module docstring)."""

    __slots__ = ()
    __hash__: ClassVar[None] = None  # type: ignore[assignment]
    _record_fields: ClassVar[tuple[str, ...]] = ()
    _record_factories: ClassVar[dict[str, Callable[[], Any]]] = {}
    _record_values: ClassVar[Any]  # the fields' values of an instance, as a tuple (attrgetter)
    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    else:
        __dataclass_fields__ = _DataclassMetadata("__dataclass_fields__")
        __dataclass_params__ = _DataclassMetadata("__dataclass_params__")

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        if cls.__module__ == __name__:
            return  # FrozenRecord: a base, not a record
        declared = cls.__dict__.get("__annotations__", {})
        names = tuple(name for name, kind in declared.items() if not str(kind).startswith(("ClassVar", "typing.ClassVar")))
        factories = {}
        for name in names:
            value = cls.__dict__.get(name)
            if isinstance(value, _Factory):
                factories[name] = value.make
                delattr(cls, name)  # as a dataclass keeps no class attribute for a factory's field
        cls._record_fields = names
        cls._record_factories = factories
        setattr(cls, "__match_args__", names)  # noqa: B010 - not declared on the base, as a dataclass has it
        getter = attrgetter(*names)
        cls._record_values = getter if len(names) > 1 else (lambda item: (getter(item),))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        values = self._record_values
        return bool(values(self) == values(other))

    @recursive_repr()
    def __repr__(self) -> str:
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_fields)
        return f"{self.__class__.__qualname__}({inside})"


class FrozenRecord(Record):
    """Base of a frozen record (what ``@dataclass(frozen=True)`` made; see the module docstring)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._record_values(self))

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")


def field_names(record: Record | type[Record]) -> tuple[str, ...]:
    """The fields of a record (class or instance), in declaration order."""
    return record._record_fields


def replace(obj: R, /, **changes: Any) -> R:
    """``dataclasses.replace(obj, **changes)``: for a record without importing ``dataclasses`` (every field of a
    record is an ``__init__`` argument); any other dataclass goes to ``dataclasses.replace``."""
    if not isinstance(obj, Record):
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for name in obj._record_fields:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)
