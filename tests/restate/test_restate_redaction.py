"""Redacting a recorded Restate history changes payload values only: the journal's protocol fields stay
byte for byte as recorded, at import and with ``replaytest redact``, and the history replays green.

The recorded order (``restate_kit.DIGIT_KEY``) calls the ledger with a key whose hex, in the call's
``rest``, holds a Luhn-valid run of digits; the order's ``ref`` payload value is that run itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from redaction_kit import assert_same_verdicts, redact, redacted_paths
from restate_kit import DIGIT_KEY, DIGIT_RUN, Recording
from restate_shop import orders

from replaytest.history import Redactor
from replaytest.history.redact import DEFAULT_KEY_NAMES
from replaytest.plugins.restate import values
from replaytest.plugins.restate.replayer import RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

# What a journal entry holds besides its payloads' values: the protocol's side.
_PROTOCOL = ("type", "index", "rest")


def _protocol(document: dict[str, Any]) -> list[Any]:
    return [
        ([entry.get(key) for key in _PROTOCOL],
         [{key: item for key, item in payload.items() if key != "json"} for payload in entry["payloads"]])
        for event in document["events"] for entry in event["journal"]
    ]


def _ledger_call(document: dict[str, Any]) -> dict[str, Any]:
    (entry,) = [entry for event in document["events"] for entry in event["journal"] if entry["type"] == "Command: Call"
                and values.string_fields(bytes.fromhex(entry["rest"])).get(1) == "ledger"]
    return entry


def _replays_green(path: Path) -> None:
    result = RestateReplayer().replay(path, WorkflowSet((orders.orders, orders.ledger, orders.pricing)), ReplayOptions())
    assert (result.status, result.error, result.divergence) == ("passed", None, None), result


def test_the_recorded_call_bytes_hold_a_card_number_s_digits_between_hex_letters(recording: Recording) -> None:
    assert recording.digit_key is not None
    call = _ledger_call(json.loads(recording.digit_key.read_text()))
    assert DIGIT_KEY in values.string_fields(bytes.fromhex(call["rest"])).values()
    assert DIGIT_RUN in call["rest"]
    redactor = Redactor.build(DEFAULT_KEY_NAMES)
    # On its own the run is a card number; inside the entry's hex, between hex letters, it is not (and the
    # entry is protocol, a raw field, whatever the rules read in it).
    assert redactor.value(DIGIT_RUN)[0] != DIGIT_RUN
    assert redactor.value(call["rest"])[0] == call["rest"]
    _replays_green(recording.digit_key)


def _check_redacted(recorded: dict[str, Any], redacted: dict[str, Any]) -> None:
    assert _protocol(redacted) == _protocol(recorded)
    assert redacted["workflow"]["id"] == recorded["workflow"]["id"]
    order = redacted["input"]["argument"]["json"]
    assert order["customer"] == DIGIT_KEY and order["ref"] != DIGIT_RUN  # the same digits as a payload value
    assert "$.input.argument.json.ref" in redacted["redacted"]
    assert not [path for path in redacted["redacted"] if path.endswith((".rest", ".type", ".index", ".field", ".style"))]


def test_import_redaction_leaves_the_protocol_fields_and_the_history_replays_green(recording: Recording) -> None:
    assert recording.digit_key is not None and recording.digit_key_redacted is not None
    _check_redacted(json.loads(recording.digit_key.read_text()), json.loads(recording.digit_key_redacted.read_text()))
    _replays_green(recording.digit_key_redacted)


def test_redact_command_leaves_the_protocol_fields_and_the_history_replays_green(recording: Recording, tmp_path: Path) -> None:
    assert recording.digit_key is not None
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "redact", "--out", str(tmp_path / "clean"), str(recording.digit_key)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    redacted = tmp_path / "clean" / recording.digit_key.name
    _check_redacted(json.loads(recording.digit_key.read_text()), json.loads(redacted.read_text()))
    _replays_green(redacted)


def _replayer(*services: object):  # type: ignore[no-untyped-def]
    return lambda path: RestateReplayer().replay(path, WorkflowSet(services), ReplayOptions())


def test_redacted_invocations_replay_as_the_recorded_ones_with_unchanged_and_changed_code(
    recording: Recording, variant, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    """Every recorded invocation and the lottery draws, whose step names and branch come from the seeded
    ``ctx.random()`` / ``ctx.uuid()``: ``replaytest redact`` copies (and the draws redacted at import) get the
    verdicts of the recorded files, for the code that recorded them and for changed code."""
    assert recording.draws is not None and recording.draws_redacted is not None
    recorded = sorted(recording.histories.glob("*.json")) + sorted(recording.draws.glob("*.json"))
    redacted = redact(recorded, tmp_path / "clean" / "histories")
    assert any(redacted_paths(redacted).values())  # the customers' e-mail addresses, at least
    at_import = sorted(recording.draws_redacted.glob("*.json"))
    draws = sorted(recording.draws.glob("*.json"))
    assert [path.name for path in at_import] == [path.name for path in draws]
    everything = (orders.orders, orders.ledger, orders.pricing, orders.signup, orders.lottery)
    unchanged = assert_same_verdicts(recorded, redacted, _replayer(*everything))
    assert {verdict[0] for verdict in unchanged} == {"passed"}
    assert_same_verdicts(draws, at_import, _replayer(*everything))
    renamed, _ = variant('ctx.run_typed("charge"', 'ctx.run_typed("bill"')
    changed = assert_same_verdicts(recorded, redacted, _replayer(renamed.orders, renamed.ledger, renamed.pricing, renamed.signup, renamed.lottery))
    assert sum(verdict[0] == "diverged" for verdict in changed) == 3  # the three placed orders charge
    draw = "    number = ctx.random().randint(1, 1_000_000)\n"
    drawn, _ = variant(draw, "    ctx.random().random()\n" + draw)
    by_draw = assert_same_verdicts(draws, at_import, _replayer(drawn.lottery))
    assert [verdict[0] for verdict in by_draw] == ["diverged"] * 4
    assert assert_same_verdicts(draws, redact(draws, tmp_path / "clean" / "draws"), _replayer(drawn.lottery)) == by_draw
