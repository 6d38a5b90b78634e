"""Hypothesis: whatever a history file contains, loading it raises nothing but ``HistoryError``."""

from __future__ import annotations

import copy
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
from history_samples import VALID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaytest.history import HistoryError, History, history_from_dict, load_history
from replaytest.history.io import parse_json

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)),
    max_leaves=12,
)


def _locations(node: Any, path: tuple = ()) -> list[tuple]:
    """Every (container path, key) in the document, the root's children included."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((*path, key))
            found.extend(_locations(value, (*path, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((*path, index))
            found.extend(_locations(value, (*path, index)))
    return found


LOCATIONS = _locations(VALID)


@st.composite
def mutated_histories(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        locations = _locations(data)
        if not locations:
            break
        where = draw(st.sampled_from(locations))
        parent = data
        for key in where[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "wrap", "add-key"]))
        key = where[-1]
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "delete":
            del parent[key]
        elif action == "wrap":
            parent[key] = draw(st.sampled_from([[parent[key]], {"value": parent[key]}]))
        elif isinstance(parent[key], dict):
            parent[key][draw(st.text(max_size=8))] = draw(json_values)
    return data


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(mutated_histories())
def test_mutated_history_loads_or_raises_history_error(data: Any) -> None:
    try:
        history = history_from_dict(data, "fuzz.json")
    except HistoryError as error:
        assert str(error).startswith("fuzz.json: ")
        return
    assert isinstance(history, History)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_random_json_is_rejected_as_history_error(data: Any) -> None:
    try:
        history_from_dict(data, "fuzz.json")
    except HistoryError:
        return
    raise AssertionError("random JSON was accepted as a history")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda text: text.encode("utf-8")))
def test_random_bytes_parse_or_raise_history_error(raw: bytes) -> None:
    try:
        history_from_dict(parse_json(raw, "fuzz.json"), "fuzz.json")
    except HistoryError:
        return


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_histories())
def test_mutated_history_file_round_trip(tmp_path: Path, data: Any) -> None:
    target = tmp_path / "fuzz.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    try:
        load_history(target)
    except HistoryError as error:
        assert error.path == target


SCHEMA = jsonschema.Draft202012Validator(json.loads(files("replaytest.history").joinpath("schema.json").read_text(encoding="utf-8")))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(mutated_histories())
def test_loader_and_shipped_schema_agree(data: Any) -> None:
    try:
        history_from_dict(data, "fuzz.json")
    except HistoryError as error:
        if SCHEMA.is_valid(data):
            # The two rules a JSON Schema cannot state the loader's way: seq == position + 1, and
            # integers written as 2.0 (JSON Schema counts them as integers, the loader does not).
            assert "events are numbered" in error.message or error.message == "expected an integer, got number", error
        return
    assert SCHEMA.is_valid(data), next(iter(SCHEMA.iter_errors(data))).message
