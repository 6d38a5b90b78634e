"""An engine's raw fields (``redact.RAW_FIELDS``) are never redacted, whatever is selected, while the same
value in a payload is: every listed path of every engine, and a Restate journal entry whose protocol bytes
read as a card number, which still decodes to the recorded message after ``replaytest redact``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import Redactor, history_from_dict, redact_history
from replaytest.history.io import history_to_dict
from replaytest.history.redact import DEFAULT_KEY_NAMES, RAW_FIELDS, parse_json_path
from replaytest.plugins.restate import values

# Hex of protocol bytes holding the text "1000007": "31303030303037", all digits, a 14-digit run that passes
# the Luhn check, so the card-number rule rewrites it wherever it is a value.
KEY = "1000007"
HEX = KEY.encode("ascii").hex()

# Every key name on the way to a raw field, and the raw fields' own names.
RAW_KEYS = sorted({segment[1] for paths in RAW_FIELDS.values() for path in paths for segment in parse_json_path(path)
                   if segment[0] == "key"})
RAW_NAMES = sorted({parse_json_path(path)[-1][1] for paths in RAW_FIELDS.values() for path in paths})

REDACTORS = {
    "defaults": Redactor.build(DEFAULT_KEY_NAMES),
    # Every key on the way to a raw field taken for a sensitive one, with a literal replacement.
    "key names": Redactor.build([*DEFAULT_KEY_NAMES, *RAW_KEYS], replacement="[gone]"),
    # Only the raw fields' names: each is a sensitive key met below a node that is not sensitive.
    "raw names": Redactor.build([*DEFAULT_KEY_NAMES, *RAW_NAMES], replacement="[gone]"),
    # Every event field and the input selected, pseudonyms: containers are walked, leaves replaced.
    "every event field": Redactor.build(DEFAULT_KEY_NAMES, ["$.events[*].*", "$.input"]),
    # The same with a literal replacement, which would replace a selected container whole.
    "literal": Redactor.build(DEFAULT_KEY_NAMES, ["$.events[*].*", "$.input"], replacement="[gone]"),
}


def _document(engine: str) -> dict[str, Any]:
    return {
        "format": "replaytest-history", "format_version": 1,
        "workflow": {"type": "orders", "id": "run-1", "run_id": "r-1", "engine": engine},
        "status": "completed", "input": {"note": HEX},
        "events": [{"seq": 1, "kind": "step", "name": "reserve", "result": {"note": HEX}}],
    }


def _place(document: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at ``path`` (``[*]`` taken as the first element), making what is missing on the way."""
    steps = [0 if segment[0] == "wild" else segment[1] for segment in parse_json_path(path)]
    node: Any = document
    for step, following in zip(steps, steps[1:]):
        if isinstance(node, list):
            node = node[step]
            continue
        node = node.setdefault(step, [{}] if following == 0 else {})
    node[steps[-1]] = value


def _at(document: dict[str, Any], path: str) -> Any:
    node: Any = document
    for segment in parse_json_path(path):
        node = node[0 if segment[0] == "wild" else segment[1]]
    return node


RAW_PATHS = [(engine, path) for engine, paths in RAW_FIELDS.items() for path in paths]


@pytest.mark.parametrize("redactor_name", sorted(REDACTORS))
@pytest.mark.parametrize(("engine", "path"), RAW_PATHS, ids=[f"{engine}:{path}" for engine, path in RAW_PATHS])
def test_a_raw_field_keeps_a_value_that_is_redacted_in_a_payload(engine: str, path: str, redactor_name: str) -> None:
    document = _document(engine)
    _place(document, path, HEX)
    history = history_from_dict(document)
    redacted, _ = redact_history(history, REDACTORS[redactor_name])
    out = history_to_dict(redacted)
    assert _at(out, path) == HEX
    # The payloads holding the same value are redacted (by pseudonym, or whole by the literal).
    assert out["events"][0]["result"] != {"note": HEX}
    assert not isinstance(out["input"], dict) or out["input"].get("note") != HEX
    assert path.replace("[*]", "[0]") not in out.get("redacted", [])


def test_the_same_field_of_another_engine_is_a_value() -> None:
    # Raw fields are per engine: a "rest" a journal-runtime step records is its own value.
    document = _document("journal")
    _place(document, "$.events[*].journal[*].rest", HEX)
    out = history_to_dict(redact_history(history_from_dict(document), REDACTORS["defaults"])[0])
    assert out["events"][0]["journal"][0]["rest"] != HEX


def _call_entry() -> dict[str, Any]:
    """A stored Restate call command to the ledger object, keyed ``KEY``, with a JSON argument."""
    body = (values.length_field(1, b"ledger") + values.length_field(2, b"add") + values.length_field(5, KEY.encode())
            + values.length_field(3, b'{"note": "' + HEX.encode() + b'"}'))
    return {**values.split_entry("Command: Call", body), "index": 4}


def test_redact_leaves_a_restate_call_message_whole_and_redacts_its_argument(tmp_path: Path) -> None:
    entry = _call_entry()
    assert HEX in entry["rest"]  # the key's bytes are in the message, as hex
    document = _document("restate")
    document["input"] = {"argument": {"json": {"note": HEX}, "style": "compact"}}
    document["events"][0]["journal"] = [entry]
    source = tmp_path / "run.json"
    source.write_text(json.dumps(document))
    result = CliRunner().invoke(cli, ["redact", "--out", str(tmp_path / "clean"), str(source)])
    assert result.exit_code == 0, result.output
    out = json.loads((tmp_path / "clean" / "run.json").read_text())
    (stored,) = out["events"][0]["journal"]
    assert {key: stored[key] for key in ("type", "index", "rest")} == {key: entry[key] for key in ("type", "index", "rest")}
    assert values.string_fields(bytes.fromhex(stored["rest"]))[5] == KEY
    assert stored["payloads"][0]["field"] == 3 and stored["payloads"][0]["json"]["note"] != HEX
    assert out["input"]["argument"] == {"json": {"note": out["input"]["argument"]["json"]["note"]}, "style": "compact"}
    assert out["input"]["argument"]["json"]["note"] != HEX
    # The message the replayer rebuilds is the recorded one, but for the redacted argument.
    message = values.join_entry(stored)
    assert message[:2] == values.ENTRY_TYPES["Command: Call"].code.to_bytes(2, "big")
    assert message[8:].startswith(bytes.fromhex(entry["rest"]))
    assert "$.events[0].journal[0].payloads[0].json.note" in out["redacted"]
    assert not [path for path in out["redacted"] if ".rest" in path or path == "$.workflow.id"]
