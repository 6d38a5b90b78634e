"""``replaytest.records``: a record answers as the dataclass it stands for — fields (names, types, defaults,
factories), parameters, ``__init__``, equality, hash, repr, ``replace``, ``asdict``, ``__match_args__`` and the
frozen class's refusal to change — and the classes a lint run builds are records."""

from __future__ import annotations

import dataclasses

import pytest

from replaytest.records import FrozenRecord, Record, factory, field_names, replace


@dataclasses.dataclass(frozen=True)
class FrozenDataclass:
    name: str
    line: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, str] = dataclasses.field(default_factory=dict)


class FrozenKind(FrozenRecord):
    name: str
    line: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, str] = factory(dict)

    def __init__(self, name: str, line: int = 0, tags: tuple[str, ...] = (), extra: dict[str, str] | None = None) -> None:
        self.__dict__.update(name=name, line=line, tags=tags, extra={} if extra is None else extra)


@dataclasses.dataclass
class MutableDataclass:
    items: list[int]
    count: int = 0


class MutableKind(Record):
    items: list[int]
    count: int = 0

    def __init__(self, items: list[int], count: int = 0) -> None:
        self.items = items
        self.count = count


def _field_view(cls: type) -> list[tuple]:
    return [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash, f.kw_only)
            for f in dataclasses.fields(cls)]


@pytest.mark.parametrize(("record", "dataclass"), [(FrozenKind, FrozenDataclass), (MutableKind, MutableDataclass)])
def test_fields_and_parameters_are_the_dataclass_ones(record: type, dataclass: type) -> None:
    assert dataclasses.is_dataclass(record)
    assert _field_view(record) == _field_view(dataclass)
    assert repr(record.__dataclass_params__).split("(", 1)[1] == repr(dataclass.__dataclass_params__).split("(", 1)[1]
    assert record.__match_args__ == dataclass.__match_args__
    assert field_names(record) == tuple(f.name for f in dataclasses.fields(dataclass))
    assert not dataclasses.is_dataclass(Record) and not dataclasses.is_dataclass(FrozenRecord)


def test_a_frozen_record_behaves_as_the_frozen_dataclass() -> None:
    record, dataclass = FrozenKind("a", 3, ("x",)), FrozenDataclass("a", 3, ("x",))
    assert repr(record) == repr(dataclass).replace("FrozenDataclass", "FrozenKind")
    assert record == FrozenKind("a", 3, ("x",)) and record != FrozenKind("a", 4, ("x",))
    assert record != dataclass  # another class is never equal, as between two dataclasses
    assert FrozenKind("a").extra == {} and FrozenKind("a").extra is not FrozenKind("a").extra
    assert not hasattr(FrozenKind, "extra")  # no class attribute for a factory's field, as a dataclass keeps none
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.line = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del record.name
    hashable_record, hashable_dataclass = FrozenKind("a", 3, ("x",), {}), FrozenDataclass("a", 3, ("x",), {})
    with pytest.raises(TypeError):
        hash(hashable_record)  # a dict field: unhashable, as the dataclass is
    with pytest.raises(TypeError):
        hash(hashable_dataclass)
    plain = dataclasses.replace(record, extra=None)  # type: ignore[arg-type]
    assert plain.extra == {}  # our __init__ makes the factory's value for None
    assert {FrozenKind("b", 1, (), None).name} == {"b"}
    assert replace(record, line=7) == FrozenKind("a", 7, ("x",)) == dataclasses.replace(record, line=7)
    assert dataclasses.asdict(record) == dataclasses.asdict(dataclass)
    with pytest.raises(TypeError):
        replace(record, nothing=1)


def test_a_frozen_record_hashes_as_the_dataclass_does() -> None:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int

    class PointRecord(FrozenRecord):
        x: int
        y: int

        def __init__(self, x: int, y: int) -> None:
            self.__dict__.update(x=x, y=y)

    assert hash(PointRecord(1, 2)) == hash(Point(1, 2)) == hash((1, 2))
    assert len({PointRecord(1, 2), PointRecord(1, 2), PointRecord(2, 1)}) == 2


def test_a_mutable_record_is_unhashable_and_compares_by_fields() -> None:
    record = MutableKind([1], 2)
    record.count = 3
    assert record == MutableKind([1], 3)
    assert repr(record) == "MutableKind(items=[1], count=3)"
    with pytest.raises(TypeError):
        hash(record)
    assert replace(record, count=4) == MutableKind([1], 4)


def test_replace_hands_other_dataclasses_to_dataclasses_replace() -> None:
    assert replace(FrozenDataclass("a"), line=2) == FrozenDataclass("a", 2)


def test_the_classes_a_lint_run_builds_are_records() -> None:
    from replaytest.config import Config
    from replaytest.lint.model import Diagnostic, ModuleSummary, Span
    from replaytest.lint.profile import FrameworkProfile
    from replaytest.plugins import FrameworkPlugin

    for cls in (Config, Diagnostic, ModuleSummary, Span, FrameworkProfile, FrameworkPlugin):
        assert issubclass(cls, FrozenRecord), cls
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
    config = Config(select=("RT1",))
    assert dataclasses.replace(config, ignore=("RT101",)) == Config(select=("RT1",), ignore=("RT101",))
    assert [f.name for f in dataclasses.fields(Span)] == ["line", "column", "end_line", "end_column"]


def _records_of_the_package() -> list[type]:
    import importlib
    import pkgutil

    import replaytest

    for module in pkgutil.walk_packages(replaytest.__path__, "replaytest."):
        try:
            importlib.import_module(module.name)
        except ImportError:  # an engine's plugin whose library this environment lacks
            continue
    found, stack = [], [Record]
    while stack:
        for cls in stack.pop().__subclasses__():
            stack.append(cls)
            if cls.__module__.startswith("replaytest.") and cls.__module__ != "replaytest.records":
                found.append(cls)
    return found


def test_every_record_of_the_package_takes_its_fields_in_order_and_keeps_each_one() -> None:
    """A record's ``__init__`` is written by hand: it must take exactly its fields, in declaration order, with
    their defaults (None standing for a factory), and store each argument in its own field — what the generated
    ``__init__`` of the dataclass did. A field added to the class but not to ``__init__`` fails here."""
    import inspect

    records = _records_of_the_package()
    assert len(records) >= 30
    for cls in records:
        names = field_names(cls)
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [parameter.name for parameter in parameters] == list(names), cls
        defaults = {f.name: f for f in dataclasses.fields(cls)}
        for parameter in parameters:
            declared = defaults[parameter.name]
            if declared.default_factory is not dataclasses.MISSING:
                assert parameter.default is None, (cls, parameter.name)
            elif declared.default is not dataclasses.MISSING:
                assert parameter.default == declared.default, (cls, parameter.name)
            else:
                assert parameter.default is inspect.Parameter.empty, (cls, parameter.name)
        markers = {name: object() for name in names}
        made = cls(**markers)
        assert all(getattr(made, name) is marker for name, marker in markers.items()), cls
        required = {name: markers[name] for name in names if defaults[name].default is dataclasses.MISSING
                    and defaults[name].default_factory is dataclasses.MISSING}
        bare = cls(**required)
        for name in names:
            if defaults[name].default_factory is not dataclasses.MISSING:
                assert getattr(bare, name) == defaults[name].default_factory(), (cls, name)
