"""Checkpoint values decode to JSON without imports or unpickling, and replay rebuilds the types the
current code already has."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import pickle
import sys
import uuid
from typing import NamedTuple

import pydantic
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from replaytest.plugins.langgraph.values import ValueRefused, decode_typed, normal_form, revive


@dataclasses.dataclass
class Quote:
    item: str
    price: float


class Colour(enum.Enum):
    RED = "red"


class Point(NamedTuple):
    x: int
    y: int


class Order(pydantic.BaseModel):
    item: str
    quantity: int


def stored(value: object) -> tuple[str, bytes]:
    return JsonPlusSerializer().dumps_typed(value)


VALUES = [
    datetime.datetime(2026, 11, 30, 17, 5, tzinfo=datetime.timezone.utc),
    datetime.date(2026, 11, 30),
    datetime.timedelta(hours=3, seconds=4),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    decimal.Decimal("19.99"),
    {1, 2, 3},
    Quote("lamp", 40.0),
    Colour.RED,
    Point(1, 2),
    Order(item="lamp", quantity=2),
    {"nested": [Quote("desk", 250.0), {"when": datetime.date(2026, 1, 2)}]},
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_stored_values_decode_to_json_and_revive_as_the_same_value(value: object) -> None:
    decoded = decode_typed(*stored(value))
    json.dumps(decoded, allow_nan=False)  # plain JSON
    assert revive(decoded) == value


def test_decoding_imports_nothing_a_value_names() -> None:
    decoded = decode_typed(*stored(Quote("lamp", 1.0)))
    assert decoded == {"$type": f"{__name__}.Quote", "$ext": "kwargs", "$value": {"item": "lamp", "price": 1.0}}
    # A class from a module the code has not imported stays a dict: nothing is imported to find it.
    thing = {"$type": "some_unimported_module.Thing", "$ext": "kwargs", "$value": {"a": 1}}
    assert revive(thing) == thing
    assert "some_unimported_module" not in sys.modules
    # Only classes of the kinds a saver writes are rebuilt, never a function a history names.
    assert revive({"$type": "os.system", "$ext": "arg", "$value": "echo hi"}) == {
        "$type": "os.system", "$ext": "arg", "$value": "echo hi",
    }


def test_pickled_and_encrypted_values_are_refused() -> None:
    with pytest.raises(ValueRefused, match="pickle"):
        decode_typed("pickle", pickle.dumps({"a": 1}))
    with pytest.raises(ValueRefused, match="msgpack\\+aes"):
        decode_typed("msgpack+aes", b"\x00")


def test_normal_form_compares_live_values_with_recorded_ones() -> None:
    assert normal_form((1, Quote("a", 2.0))) == decode_typed(*stored([1, Quote("a", 2.0)]))
