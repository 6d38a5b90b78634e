"""The restricted pickle decoder and typed JSON: what DBOS payloads become in a history, what is refused,
and that decoding never imports, constructs or calls anything user-defined."""

from __future__ import annotations

import base64
import collections
import datetime
import decimal
import fractions
import json
import os
import pathlib
import pickle
import sys
import uuid

import pytest

from replaytest.plugins.dbos.values import PickleRefused, Rebuilder, RebuildError, decode_pickle, rebuild, to_typed

from dbos_shop.models import Carrier, Parcel  # a plain module: importing it registers nothing with DBOS

CALLS: list[str] = []


class Tripwire:
    """Records every way pickle could run its code: construction, state, reduction."""

    def __new__(cls, *args: object) -> Tripwire:
        CALLS.append("new")
        return super().__new__(cls)

    def __init__(self, *args: object) -> None:
        CALLS.append("init")

    def __setstate__(self, state: object) -> None:
        CALLS.append("setstate")
        self.__dict__.update(state)  # type: ignore[arg-type]


class Launcher:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("echo replaytest-must-not-run",))


def pickled(value: object, protocol: int = pickle.DEFAULT_PROTOCOL) -> str:
    return base64.b64encode(pickle.dumps(value, protocol=protocol)).decode("ascii")


VALUES = [
    None, True, 3, 2.5, "text", [1, "a"], {"a": 1}, (1, 2), {1, 2}, frozenset({"x"}), b"\x00\xff", bytearray(b"ab"),
    {1: "int key"}, {"$type": "not a marker"}, complex(1, 2), datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    datetime.date(2026, 1, 2), datetime.timedelta(days=1, seconds=3), decimal.Decimal("10.25"), uuid.UUID(int=7),
    collections.OrderedDict(a=1), collections.defaultdict(list, k=[1]), collections.deque([1, 2]), collections.Counter("aab"),
    ValueError("bad", 3), Parcel("o1", Carrier.COURIER, [1.5]), Carrier.POST,
]  # fmt: skip


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_values_survive_decoding_as_json_and_rebuilding(value: object, protocol: int) -> None:
    typed = decode_pickle(pickled(value, protocol))
    text = json.dumps(typed, allow_nan=False)  # plain JSON, nothing else
    rebuilt = rebuild(json.loads(text))
    if isinstance(value, BaseException):
        assert type(rebuilt) is type(value) and rebuilt.args == value.args
    else:
        assert rebuilt == value and type(rebuilt) is type(value)


def test_a_user_class_becomes_inert_data_without_running_its_code() -> None:
    CALLS.clear()
    value = Tripwire()
    value.note = "kept"  # type: ignore[attr-defined]
    CALLS.clear()
    typed = decode_pickle(pickled(value))
    assert CALLS == []
    assert typed == {"$type": "object", "class": f"{__name__}.Tripwire", "state": {"note": "kept"}}


def test_classes_rebuild_from_the_current_code_when_replay_asks() -> None:
    CALLS.clear()
    rebuilt = rebuild({"$type": "object", "class": f"{__name__}.Tripwire", "state": {"note": "kept"}})
    assert isinstance(rebuilt, Tripwire) and rebuilt.note == "kept"  # type: ignore[attr-defined]
    assert CALLS == ["new", "setstate"]  # what unpickling does: no __init__


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(fractions.Fraction(1, 3), "fractions.Fraction"), (pathlib.PurePosixPath("/etc"), "pathlib"), (Launcher(), "system")],
)
def test_refused_types_are_named(value: object, type_name: str) -> None:
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(pickled(value))
    assert type_name in refused.value.type_name


def test_a_function_call_of_a_non_class_is_refused() -> None:
    text = pickled(collections.OrderedDict())  # then swap the class for a lower-case callable name
    raw = base64.b64decode(text).replace(b"\x8c\x0bcollections\x94\x8c\x0bOrderedDict", b"\x8c\x10dbos_shop.models\x94\x8c\x0bmake_parcel")
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(base64.b64encode(raw).decode())
    assert refused.value.type_name == "dbos_shop.models.make_parcel"


def test_garbage_is_refused_not_crashed() -> None:
    for text in ("not base64!", base64.b64encode(b"\x80\x05junk").decode()):
        with pytest.raises(PickleRefused):
            decode_pickle(text)


def test_rebuilding_refuses_standard_library_and_main_classes() -> None:
    with pytest.raises(RebuildError, match="standard-library"):
        rebuild({"$type": "object", "class": "subprocess.Popen", "call_args": ["ls"]})
    with pytest.raises(RebuildError, match="run as a script"):
        rebuild({"$type": "object", "class": "__main__.Note"})
    with pytest.raises(RebuildError, match="only for exceptions and enums"):
        rebuild({"$type": "object", "class": "dbos_shop.models.Parcel", "call_args": ["o1"]})


def test_portable_json_values_pass_through_escaped() -> None:
    assert to_typed({"a": [1, None]}) == {"a": [1, None]}
    assert rebuild(to_typed({"$type": "x"})) == {"$type": "x"}


UNIMPORTED = "billing_rules_never_imported.Refund"  # no such module is loaded (nor exists)


def test_classes_of_unimported_modules_reach_the_code_as_plain_data_with_a_note() -> None:
    rebuilder = Rebuilder()
    as_state = rebuilder.rebuild({"$type": "object", "class": UNIMPORTED, "state": {"amount": {"$type": "decimal.Decimal", "value": "9.50"}}})
    assert as_state == {"amount": decimal.Decimal("9.50")}
    with_slots = rebuilder.rebuild({"$type": "object", "class": UNIMPORTED, "state": [None, {"amount": 3}]})
    assert with_slots == {"amount": 3}
    items_only = rebuilder.rebuild({"$type": "object", "class": "ledger_never_imported.Lines", "list_items": [1, 2]})
    assert items_only == [1, 2]
    odd = rebuilder.rebuild({"$type": "object", "class": UNIMPORTED, "new_args": ["eur"], "state": {"amount": 1}})
    assert odd == {"$type": "object", "class": UNIMPORTED, "new_args": ["eur"], "state": {"amount": 1}}
    assert "billing_rules_never_imported" not in sys.modules and "ledger_never_imported" not in sys.modules
    assert rebuilder.note() == (
        "4 recorded objects of classes the workflow code has not imported (billing_rules_never_imported.Refund, "
        "ledger_never_imported.Lines) reached the code as dicts (replay imports no module a history names)"
    )


def test_an_unimported_exception_is_raised_as_a_stand_in_of_the_same_name() -> None:
    rebuilder = Rebuilder()
    error = rebuilder.rebuild({"$type": "exception", "class": "card_gateway_never_imported.CardDeclined", "args": ["over limit"]})
    assert isinstance(error, Exception) and type(error).__name__ == "CardDeclined" and error.args == ("over limit",)
    assert "card_gateway_never_imported" not in sys.modules
    assert rebuilder.note() == (
        "1 recorded exception of a class the workflow code has not imported (card_gateway_never_imported.CardDeclined) "
        "was raised as a stand-in Exception of the same name (replay imports no module a history names)"
    )


def test_an_imported_module_without_the_class_is_an_error_but_an_unimported_submodule_is_not() -> None:
    with pytest.raises(RebuildError, match="the current code has no dbos_shop.models.Invoice"):
        rebuild({"$type": "object", "class": "dbos_shop.models.Invoice"})
    # dbos_shop is imported; dbos_shop.never_written is not a module anyone imported
    assert Rebuilder().rebuild({"$type": "object", "class": "dbos_shop.never_written.Refund", "state": {"a": 1}}) == {"a": 1}
    with pytest.raises(RebuildError, match="replay imports no module a history names"):
        rebuild({"$type": "type", "name": UNIMPORTED})


def test_every_class_rebuilt_leaves_no_note() -> None:
    rebuilder = Rebuilder()
    assert rebuilder.rebuild(decode_pickle(pickled(Parcel("o1", Carrier.POST, [])))) == Parcel("o1", Carrier.POST, [])
    assert rebuilder.note() is None


def test_a_recorded_error_of_an_unimported_class_pickled_as_a_call_is_raised_as_a_stand_in() -> None:
    rebuilder = Rebuilder()
    error = rebuilder.error({"$type": "object", "class": "card_gateway_never_imported.CardDeclined", "call_args": ["over limit"]})
    assert isinstance(error, Exception) and type(error).__name__ == "CardDeclined" and error.args == ("over limit",)
    assert "card_gateway_never_imported" not in sys.modules
    assert rebuilder.stand_in_errors == {"card_gateway_never_imported.CardDeclined": 1} and not rebuilder.as_data
    imported = rebuilder.error(decode_pickle(pickled(ValueError("bad"))))
    assert type(imported) is ValueError
