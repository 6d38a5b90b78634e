"""The validating loader: accepted input, and exact file + JSON path + message for malformed input."""

from __future__ import annotations

import copy
import json
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest
from history_samples import VALID

from replaytest.history import HistoryError, history_from_dict, history_to_dict, load_history


def _mutated(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    change(data)
    return data


def _set(path: tuple, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _delete(path: tuple) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return change


MALFORMED = [
    (_set(("events", 3, "kind"), "sleep"), "$.events[3].kind", "expected one of step, model, timer, signal, marker, side-effect, child-workflow, continue-as-new, got \"sleep\""),
    (_set(("events", 0, "seq"), "1"), "$.events[0].seq", "expected an integer, got string"),
    (_set(("events", 1, "seq"), 5), "$.events[1].seq", "expected 2 (events are numbered 1, 2, 3, … in order), got 5"),
    (_set(("events", 0, "seq"), True), "$.events[0].seq", "expected an integer, got boolean"),
    (_delete(("events", 2, "name")), "$.events[2]", "missing required key 'name'"),
    (_set(("events", 2, "name"), 3), "$.events[2].name", "expected a string, got integer"),
    (_set(("events", 0, "args_digest"), "md5:abc"), "$.events[0].args_digest", "expected 'sha256:' and 64 lowercase hex digits, got \"md5:abc\""),
    (_set(("events", 0, "prompt"), {"name": "planner"}), "$.events[0].prompt", "missing required key 'version'"),
    (_set(("events", 0, "prompt"), "planner"), "$.events[0].prompt", "expected an object, got string"),
    (_set(("events", 1, "result_ref"), "sha256:" + "0" * 64), "$.events[1].result", "an event has either result or result_ref, not both"),
    (_set(("events", 3, "duration_s"), -1), "$.events[3].duration_s", "expected a non-negative number, got -1"),
    (_set(("events", 3, "duration_s"), "1d"), "$.events[3].duration_s", "expected a non-negative number, got \"1d\""),
    (_delete(("events", 5, "patch_id")), "$.events[5]", "a 'patched' marker needs a patch_id"),
    (_set(("events", 6, "error"), {"type": "X"}), "$.events[6].error", "missing required key 'message'"),
    (_set(("events", 6, "error"), {"type": "X", "message": "m", "stack": []}), "$.events[6].error.stack", "unknown key; expected one of type, message"),
    (_set(("events", 4), [1, 2]), "$.events[4]", "expected an object, got array"),
    (_set(("events",), {}), "$.events", "expected an array, got object"),
    (_set(("status",), "done"), "$.status", "expected one of completed, failed, running, parked, got \"done\""),
    (_delete(("status",)), "$", "missing required key 'status'"),
    (_set(("workflow",), "support_agent"), "$.workflow", "expected an object, got string"),
    (_set(("workflow", "type"), ""), "$.workflow.type", "expected a non-empty string"),
    (_delete(("workflow", "id")), "$.workflow", "missing required key 'id'"),
    (_set(("workflow", "region"), "eu"), "$.workflow.region", "unknown key; expected one of type, id, run_id, engine, protocol_version"),
    (_set(("prompt_versions", "planner"), 1), "$.prompt_versions.planner", "expected a string, got integer"),
    (_set(("prompt_versions", "my prompt"), None), '$.prompt_versions["my prompt"]', "expected a string, got null"),
    (_set(("code_version",), 3), "$.code_version", "expected a string, got integer"),
    (_set(("evnets",), []), "$.evnets", "unknown key; expected one of format, format_version, workflow, code_version, prompt_versions, prompt_manifest, status, waiting, input, events, result, error, redacted, graph, nested_namespaces"),
    (_set(("graph",), "nodes"), "$.graph", "expected an object, got string"),
    (_set(("error",), "boom"), "$.error", "expected an object, got string"),
    (_set(("waiting",), {"kind": "signal", "name": "approved"}), "$.waiting", "only a parked history waits; this one is completed"),
    (_set(("nested_namespaces",), {"0": "agent:1"}), "$.nested_namespaces", "expected an array, got object"),
    (_set(("nested_namespaces",), [{"nested": 1, "namespace": "a:1"}, {"nested": 0, "namespace": "a:2"}]),
     "$.nested_namespaces[1].nested", "expected a nested run number (an integer from 0, increasing)"),
    (_set(("nested_namespaces",), [{"nested": 0}]), "$.nested_namespaces[0]", "missing required key 'namespace'"),
    (_set(("format_version",), 2), "$.format_version", "format_version 2 was written by a newer replaytest (this one reads up to 1); upgrade replaytest"),
    (_set(("format_version",), "1"), "$.format_version", "expected an integer, got string"),
    (_set(("format_version",), 0), "$.format_version", "expected 1, got 0"),
    (_set(("format",), "temporal"), "$.format", "not a replaytest history: format is \"temporal\", expected 'replaytest-history'"),
    (_delete(("format",)), "$.format", "not a replaytest history: format is missing, expected 'replaytest-history'"),
]


@pytest.mark.parametrize(("change", "json_path", "message"), MALFORMED, ids=[case[1] + ":" + case[2][:30] for case in MALFORMED])
def test_malformed_history_names_file_path_and_problem(tmp_path: Path, change, json_path: str, message: str) -> None:
    target = tmp_path / "run.json"
    target.write_text(json.dumps(_mutated(change)), encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert caught.value.path == target
    assert caught.value.json_path == json_path
    assert caught.value.message == message
    assert str(caught.value) == f"{target}: {json_path}: {message}"


def test_valid_history_loads_with_unknown_event_fields_kept(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text(json.dumps(VALID), encoding="utf-8")
    history = load_history(target)
    assert history.workflow.type == "support_agent"
    assert [event.kind for event in history.events] == ["model", "step", "step", "timer", "signal", "marker", "step"]
    assert history.events[0].prompt is not None and history.events[0].prompt.name == "planner"
    assert history.events[6].extra == {"x-importer": {"attempt": 3}}
    assert history.events[6].error is not None and history.events[6].error.message == "card declined"
    assert history.source == target


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    target = tmp_path / "broken.json"
    target.write_text('{\n  "format": "replaytest-history",\n  "events": [1,, 2]\n}\n', encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    assert str(caught.value) == f"{target}: line 3, column 16: invalid JSON: Expecting value"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"a": NaN}', "invalid JSON: NaN is not a JSON value"),
        (b"\xff\xfe{}", "is UTF-16 (or another wide encoding); history files are UTF-8 JSON"),
        (b"\xff{}", "is not UTF-8 (byte 0): invalid start byte"),
        (b"[" * 100000 + b"]" * 100000, "invalid JSON: nested too deeply"),
        (b"[]", None),
    ],
)
def test_non_json_input_is_a_history_error(tmp_path: Path, raw: bytes, message: str | None) -> None:
    target = tmp_path / "odd.json"
    target.write_bytes(raw)
    with pytest.raises(HistoryError) as caught:
        load_history(target)
    if message is not None:
        assert caught.value.message == message
    else:
        assert caught.value.json_path == "$"


def test_missing_file_is_a_history_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="cannot be read"):
        load_history(tmp_path / "absent.json")


def test_dict_source_without_file_omits_the_file_part() -> None:
    data = _mutated(_set(("status",), 1))
    with pytest.raises(HistoryError) as caught:
        history_from_dict(data)
    assert str(caught.value) == "$.status: expected one of completed, failed, running, parked, got 1"


def test_python_values_that_are_not_json_are_rejected_with_their_path() -> None:
    data = _mutated(_set(("input", "customer", "tags"), {"a", "b"}))
    with pytest.raises(HistoryError) as caught:
        history_from_dict(data, "mem")
    assert caught.value.json_path == "$.input.customer.tags"
    assert caught.value.message == "expected a JSON value, got Python set"


def test_shipped_schema_agrees_with_loader_vocabulary() -> None:
    from replaytest.history import EVENT_KINDS, STATUSES

    schema = json.loads(files("replaytest.history").joinpath("schema.json").read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert tuple(schema["$defs"]["event"]["properties"]["kind"]["enum"]) == EVENT_KINDS
    assert tuple(schema["properties"]["status"]["enum"]) == STATUSES
    assert set(schema["properties"]) == {"format", "format_version", "workflow", "code_version", "prompt_versions", "prompt_manifest", "status", "waiting", "input", "events", "result", "error", "redacted", "graph", "nested_namespaces"}


def test_schema_accepts_the_valid_history_and_rejects_what_the_loader_rejects() -> None:
    schema = json.loads(files("replaytest.history").joinpath("schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator.validate(VALID)
    for change, json_path, message in MALFORMED:
        if "events are numbered" in message or "increasing" in message:
            continue  # seq == position + 1, and numbers in increasing order, are beyond what a schema can say
        assert not validator.is_valid(_mutated(change)), f"schema accepts what the loader rejects at {json_path}: {message}"


def test_prompt_versions_keys_must_be_strings() -> None:
    data = _mutated(_set(("prompt_versions",), {1: "sha256:x"}))
    with pytest.raises(HistoryError) as caught:
        history_from_dict(data)
    assert (caught.value.json_path, caught.value.message) == ("$.prompt_versions", "object key 1 is not a string")


def _parked_on(waiting: dict[str, Any]) -> dict[str, Any]:
    data = _mutated(_set(("status",), "parked"))
    data.pop("result", None)
    data["waiting"] = waiting
    return data


def test_a_parked_runs_timer_keeps_the_duration_it_was_started_with() -> None:
    """The journal exports the pending timer's duration, so a replay can tell a run sleeping on a changed timer."""
    history = history_from_dict(_parked_on({"kind": "timer", "name": "cool off", "duration_s": 3600}))
    assert history.waiting is not None and history.waiting.duration_s == 3600
    assert history_to_dict(history)["waiting"] == {"kind": "timer", "name": "cool off", "duration_s": 3600}
    assert "duration_s" not in history_to_dict(history_from_dict(_parked_on({"kind": "signal", "name": "approved"})))["waiting"]


@pytest.mark.parametrize(("waiting", "message"), [
    ({"kind": "signal", "name": "approved", "duration_s": 60}, "only a timer has a duration"),
    ({"kind": "timer", "name": "cool off", "duration_s": -1}, "expected a non-negative number, got -1"),
])
def test_a_waiting_duration_only_a_timer_has_and_never_negative(waiting: dict[str, Any], message: str) -> None:
    data = _parked_on(waiting)
    with pytest.raises(HistoryError) as caught:
        history_from_dict(data)
    assert (caught.value.json_path, caught.value.message) == ("$.waiting.duration_s", message)
    schema = json.loads(files("replaytest.history").joinpath("schema.json").read_text(encoding="utf-8"))
    assert not jsonschema.Draft202012Validator(schema).is_valid(data)


def test_the_nested_runs_an_import_found_round_trip_and_their_absence_is_kept() -> None:
    """``nested_namespaces``: the nested runs a LangGraph import found (even none); absent: not looked for."""
    found = [{"nested": 0, "namespace": "agent:1"}, {"nested": 2, "namespace": "agent:1|2"}]
    data = copy.deepcopy(VALID) | {"nested_namespaces": found}
    history = history_from_dict(data)
    assert history.nested_namespaces == ((0, "agent:1"), (2, "agent:1|2"))
    assert history_to_dict(history)["nested_namespaces"] == found
    assert history_from_dict(copy.deepcopy(VALID) | {"nested_namespaces": []}).nested_namespaces == ()
    assert history_from_dict(copy.deepcopy(VALID)).nested_namespaces is None
    assert "nested_namespaces" not in history_to_dict(history_from_dict(copy.deepcopy(VALID)))
