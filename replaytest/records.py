"""``Record`` and ``FrozenRecord``: what ``@dataclass`` and ``@dataclass(frozen=True)`` generate, written once.

The dataclasses a lint run builds at import (the model, the configuration, the profiles, the plugins: about 30
classes) cost the pre-commit hook about 0.015 s a run, most of it compiling each class's generated ``__init__``,
``__repr__``, ``__eq__``, ``__hash__`` and frozen ``__setattr__``/``__delattr__`` from source (``exec``) on
every start. Those classes keep ``@dataclass`` (so ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` answer as before) but with ``init=False, repr=False, eq=False``; each writes its own
``__init__`` (compiled into the module's bytecode, like any method), and inherits here:

* ``__eq__``: equal to another instance of exactly its class when all fields are equal (as generated);
* ``__repr__``: ``Name(field=value, ...)`` (as generated);
* ``__hash__``: ``FrozenRecord``: the hash of the fields' tuple (as ``frozen=True`` generates); ``Record``:
  unhashable (as ``eq=True`` without ``frozen`` leaves it);
* ``FrozenRecord``: assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``; its
  ``__init__`` fills the instance's ``__dict__`` directly.

The field order comes from the class's ``__dataclass_fields__`` on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, ClassVar


def _fields_of(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """A getter of the instance's field values as a tuple, made once per class."""
    getter = cls.__dict__.get("_record_values")
    if getter is None:
        names = tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        single = attrgetter(*names)
        getter = single if len(names) > 1 else (lambda item: (single(item),))
        type.__setattr__(cls, "_record_values", getter)
    return getter


class Record:
    """Base of a mutable dataclass declared with ``@dataclass(init=False, repr=False, eq=False)``."""

    __slots__ = ()
    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        values = _fields_of(self.__class__)
        return values(self) == values(other)

    @recursive_repr()
    def __repr__(self) -> str:
        names = self.__dataclass_fields__  # type: ignore[attr-defined]
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({inside})"


class FrozenRecord(Record):
    """Base of a frozen dataclass declared with ``@dataclass(init=False, repr=False, eq=False)``."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(_fields_of(self.__class__)(self))

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
