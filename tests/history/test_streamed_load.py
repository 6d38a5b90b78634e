"""The loader parses a history's events one at a time (``strict_json.stream_object``): every strict-JSON
problem inside an event is still found and named with its JSON path, a problem of higher precedence later
in the file still wins over an earlier schema error, a byte order mark is still accepted, and a loaded
history drops its text and reads the file again only when asked for it, refusing a file that changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_samples import VALID

from replaytest.history import HistoryError, load_history
from replaytest.replay.adapter import LoadedHistory

TEXT = json.dumps(VALID, indent=2)


def _edited(old: str, new: str, count: int = 1) -> str:
    assert TEXT.count(old) >= count, old
    return TEXT.replace(old, new, count)


STRICT_PROBLEMS = [
    # A key twice inside the second event.
    (_edited('"name": "fetch orders"', '"name": "fetch orders", "name": "fetch orders"'),
     "$.events[1].name", "duplicate key (JSON objects must not repeat a key)"),
    # A number that overflows to infinity inside an event's result.
    (_edited('"id": 7', '"id": 7e999'), "$.events[1].result[0].id", "number is too large (it overflows to infinity)"),
    # A lone surrogate in an event's name.
    (_edited('"name": "charge"', '"name": "char\\ud800ge"'), "$.events[6].name",
     "string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not valid Unicode"),
    # NaN in an event.
    (_edited('"duration_s": 86400', '"duration_s": NaN'), None, "invalid JSON: NaN is not a JSON value"),
    # An unknown event kind first, a duplicate key in a later event: the strict problem is named, as a
    # whole-document parse names it before any schema check.
    (_edited('"kind": "model"', '"kind": "sleep"').replace('"name": "approved"', '"name": "approved", "name": "x"'),
     "$.events[4].name", "duplicate key (JSON objects must not repeat a key)"),
    # A duplicate top-level key after the events.
    (TEXT[: TEXT.rindex("}")] + ', "result": "again"}', "$.result", "duplicate key (JSON objects must not repeat a key)"),
]


@pytest.mark.parametrize(("text", "json_path", "message"), STRICT_PROBLEMS, ids=[case[2][:24] + str(i) for i, case in enumerate(STRICT_PROBLEMS)])
def test_strict_problems_inside_events_are_named(tmp_path: Path, text: str, json_path: str | None, message: str) -> None:
    target = tmp_path / "run.json"
    target.write_text(text, encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert (caught.value.path, caught.value.json_path, caught.value.message) == (target, json_path, message)


def test_nesting_deeper_than_the_limit_inside_an_event_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "deep.json"
    # The event is at depth 2 ($ is 0, the events array 1): 399 nested arrays in its result reach 401.
    target.write_text(_edited('"result": "look up orders"', '"result": ' + "[" * 399 + "]" * 399), encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert caught.value.message == "nested deeper than 400 levels"
    assert caught.value.json_path is not None and caught.value.json_path.startswith("$.events[0].result[0][0]")


def test_a_history_one_level_shallower_loads(tmp_path: Path) -> None:
    target = tmp_path / "deep.json"
    target.write_text(_edited('"result": "look up orders"', '"result": ' + "[" * 398 + "]" * 398), encoding="utf-8")
    assert load_history(target).events[0].kind == "model"


def test_a_byte_order_mark_is_accepted_and_trailing_data_is_not(tmp_path: Path) -> None:
    target = tmp_path / "bom.json"
    target.write_bytes(b"\xef\xbb\xbf" + TEXT.encode("utf-8"))
    assert [event.seq for event in load_history(target).events] == [1, 2, 3, 4, 5, 6, 7]
    target.write_text(TEXT + "\n{}", encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert caught.value.message.endswith("invalid JSON: Extra data")


def test_a_loaded_history_keeps_no_bytes_and_reads_its_text_again_only_if_unchanged(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text(TEXT, encoding="utf-8")
    loaded = LoadedHistory.read(target)
    assert not hasattr(loaded, "data")
    assert (loaded.size, loaded.head) == (len(TEXT), TEXT.encode("utf-8"))
    assert loaded.history().events[6].error is not None
    # The History is built: the text was dropped, and comes back from the unchanged file.
    assert loaded.text() == TEXT
    again = LoadedHistory.read(target)
    again.history()
    target.write_text(TEXT.replace("Ann", "Bob"), encoding="utf-8")  # the same size, other bytes
    with pytest.raises(OSError, match="changed since it was read for this replay"):
        again.text()
