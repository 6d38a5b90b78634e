"""Hypothesis: whatever a history file contains, loading it either succeeds, and then saving and loading
again gives the identical history, or raises ``HistoryError`` naming the JSON path of the problem (a
path that exists in the document, up to a key that is missing)."""

from __future__ import annotations

import copy
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from history_samples import VALID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaytest.history import HistoryError, history_from_dict, load_history
from replaytest.history.io import dumps_history, parse_json, save_history

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


_TOKEN = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def _json_path_tokens(json_path: str) -> list[Any]:
    """``$.events[3]["x y"]`` -> ["events", 3, "x y"]; fails the test on anything else."""
    assert json_path.startswith("$"), f"not a JSON path: {json_path!r}"
    tokens: list[Any] = []
    position = 1
    while position < len(json_path):
        match = _TOKEN.match(json_path, position)
        assert match is not None, f"malformed JSON path {json_path!r} at {position}"
        name, index, quoted = match.groups()
        tokens.append(name if name is not None else int(index) if index is not None else json.loads(quoted))
        position = match.end()
    return tokens


def assert_names_a_real_location(error: HistoryError, data: Any) -> None:
    """The error's JSON path leads into ``data``: every step exists, except possibly a last missing key."""
    assert error.json_path is not None, f"rejection without a JSON path: {error}"
    node = data
    tokens = _json_path_tokens(error.json_path)
    for depth, token in enumerate(tokens):
        last = depth == len(tokens) - 1
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and isinstance(token, int) and 0 <= token < len(node):
            node = node[token]
        else:
            assert last and isinstance(node, dict), f"{error.json_path} leaves the document at {token!r}: {error}"
            # A missing last key is a field that should be there; an unknown key is one that is there.
            assert not error.message.startswith("unknown key"), f"{error.json_path} names no key of the document"


def _assert_kept(loaded: Any, saved: Any, where: str = "$") -> None:
    """Everything the loaded document holds is in the saved one, unchanged. A save may add the contract's
    defaults (``workflow.engine``, ``prompt_versions``, ``input``) and leave out null optional fields."""
    if isinstance(loaded, dict):
        assert isinstance(saved, dict), f"{where}: saved as {type(saved).__name__}"
        for key, value in loaded.items():
            if value is None:
                continue
            assert key in saved, f"{where}.{key}: lost on save"
            _assert_kept(value, saved[key], f"{where}.{key}")
    elif isinstance(loaded, list):
        assert isinstance(saved, list) and len(saved) == len(loaded), f"{where}: list changed on save"
        for index, (item, kept) in enumerate(zip(loaded, saved)):
            _assert_kept(item, kept, f"{where}[{index}]")
    else:
        assert saved == loaded and type(saved) is type(loaded), f"{where}: {loaded!r} saved as {saved!r}"


def assert_round_trip_identical(history: Any, folder: Path, loaded: Any = None) -> None:
    """load -> save -> load gives the identical history: the saved file holds the document that was
    loaded (``loaded``), loading it gives the same JSON text, and saving again writes the same bytes."""
    text = dumps_history(history)
    if loaded is not None:
        _assert_kept(loaded, json.loads(text))
    saved = save_history(history, folder / "saved.json")
    first = (folder / "saved.json").read_bytes()
    again = load_history(folder / "saved.json")
    assert dumps_history(saved) == dumps_history(again) == text
    save_history(again, folder / "saved.json")
    assert (folder / "saved.json").read_bytes() == first


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          deadline=None)
@given(mutated_histories())
def test_mutated_history_loads_or_raises_history_error(tmp_path: Path, data: Any) -> None:
    try:
        history = history_from_dict(data, "fuzz.json")
    except HistoryError as error:
        assert str(error).startswith("fuzz.json: $")
        assert_names_a_real_location(error, data)
        return
    assert history.workflow.type == data["workflow"]["type"] and len(history.events) == len(data["events"])
    assert_round_trip_identical(history, tmp_path, data)


def test_the_round_trip_check_compares_content(tmp_path: Path) -> None:
    # Guard for the property above: the valid sample round-trips, and a changed history would not compare equal.
    history = history_from_dict(copy.deepcopy(VALID), "fuzz.json")
    assert_round_trip_identical(history, tmp_path, VALID)
    changed = copy.deepcopy(VALID)
    changed["events"][0]["result"] = "something else"
    assert dumps_history(history_from_dict(changed, "x.json")) != dumps_history(history)
    with pytest.raises(AssertionError, match="lost on save"):
        _assert_kept(VALID, {**VALID, "events": [*VALID["events"][:2],
                                                 {k: v for k, v in VALID["events"][2].items() if k != "idempotency_key"},
                                                 *VALID["events"][3:]]})


def test_the_location_check_rejects_a_wrong_path() -> None:
    with pytest.raises(AssertionError):
        assert_names_a_real_location(HistoryError("f.json", "$.events[99].kind", "x"), VALID)
    with pytest.raises(AssertionError):
        assert_names_a_real_location(HistoryError("f.json", None, "x"), VALID)
    assert_names_a_real_location(HistoryError("f.json", "$.events[1].missing", "x"), VALID)
    with pytest.raises(AssertionError):
        assert_names_a_real_location(HistoryError("f.json", "$.events[1].namex", "unknown key; expected one of"), VALID)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_random_json_is_rejected_as_history_error(data: Any) -> None:
    try:
        history_from_dict(data, "fuzz.json")
    except HistoryError as error:
        assert_names_a_real_location(error, data)
        return
    raise AssertionError("random JSON was accepted as a history")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda text: text.encode("utf-8")))
def test_random_bytes_parse_or_raise_history_error(raw: bytes) -> None:
    try:
        data = parse_json(raw, "fuzz.json")
    except HistoryError as error:
        # Not JSON at all: the file as a whole is the problem, with a line and column or the reason.
        assert error.json_path is None and error.path == "fuzz.json"
        assert "JSON" in error.message or "UTF-8" in error.message, error
        return
    try:
        history_from_dict(data, "fuzz.json")
    except HistoryError as error:
        assert_names_a_real_location(error, data)
        return
    raise AssertionError(f"random bytes were accepted as a history: {raw!r}")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_histories())
def test_mutated_history_file_round_trip(tmp_path: Path, data: Any) -> None:
    target = tmp_path / "fuzz.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    try:
        history = load_history(target)
    except HistoryError as error:
        assert error.path == target
        assert_names_a_real_location(error, data)
        return
    assert_round_trip_identical(history, tmp_path, data)


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
