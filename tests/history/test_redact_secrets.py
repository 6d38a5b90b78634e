"""Planted secrets of each kind, in keys, values, headers, free text, errors, unknown event fields and
ids, are all gone after default redaction, in a neutral history and in Temporal JSON; shapes stay."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import Event, History, Redactor, WorkflowInfo, load_history, redact_history, save_history
from replaytest.history.model import ErrorInfo
from replaytest.history.redact import DEFAULT_KEY_NAMES

SECRETS = {
    "openai": "sk-proj0123456789abcdefghijKLMN",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "Bearer abcdefghijklmnop.qrstuvwx",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "email": "dana.secret@corp.example",
    "card": "4111 1111 1111 1111",
    "password": "hunter2-correct-horse",
    "api_header": "plain-looking-key-123",
    "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
}
HERE = Path(__file__).resolve().parent


def _history() -> History:
    payload = {
        "openai_api_key": SECRETS["openai"], "aws_access_key_id": SECRETS["aws_id"],
        "aws_secret_access_key": SECRETS["aws_secret"], "emailAddress": SECRETS["email"],
        "card_number": SECRETS["card"], "pwd": SECRETS["password"], "pin": 1234,
        "headers": {"X-Api-Key": SECRETS["api_header"], "Authorization": SECRETS["bearer"]},
        "note": f"mail {SECRETS['email']} with {SECRETS['jwt']} and {SECRETS['github']}; card {SECRETS['card']}",
        "max_tokens": 512, "items": 3,
    }
    events = (
        Event(1, "step", "lookup", result=payload),
        Event(2, "step", "charge", error=ErrorInfo("Declined", f"card {SECRETS['card']} declined; key {SECRETS['openai']}"),
              extra={"trace": {"user": SECRETS["email"], "auth": SECRETS["bearer"]}}),
    )
    return History(workflow=WorkflowInfo("shop", f"order-for-{SECRETS['email']}", run_id="r1"), status="failed",
                   input={"customer": {"email": SECRETS["email"]}, "token": SECRETS["openai"]}, events=events,
                   error=ErrorInfo("Boom", f"failed for {SECRETS['email']} using {SECRETS['aws_id']}"))


def test_no_planted_secret_survives_and_shapes_stay(tmp_path: Path) -> None:
    redacted, count = redact_history(_history(), Redactor.build())
    target = tmp_path / "out.json"
    save_history(redacted, target)
    text = target.read_text(encoding="utf-8")
    for name, secret in {**SECRETS, "card-digits": "4111111111111111"}.items():
        assert secret not in text, name
    result = redacted.events[0].result
    assert isinstance(result["pin"], int) and len(str(result["pin"])) == 4 and result["pin"] != 1234
    assert (result["max_tokens"], result["items"]) == (512, 3)
    assert result["emailAddress"].endswith("@corp.example")
    card = result["card_number"]
    assert len(card) == len(SECRETS["card"]) and card.count(" ") == 3 and card != SECRETS["card"]
    digits = [int(c) for c in card.replace(" ", "")][::-1]
    assert sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(digits)) % 10 == 0
    # The same value has the same pseudonym everywhere in one history.
    assert redacted.input["customer"]["email"] == result["emailAddress"]
    assert SECRETS["email"] not in redacted.workflow.id and redacted.workflow.id.endswith("@corp.example")
    assert count == len(redacted.redacted) and "$.workflow.id" in redacted.redacted
    assert "$.events[1].trace.user" in redacted.redacted and "$.events[1].error.message" in redacted.redacted
    assert load_history(target).redacted == redacted.redacted


def test_cli_redacts_temporal_json_in_place_keeping_its_mode(tmp_path: Path, monkeypatch) -> None:
    source = HERE.parent / "temporal" / "histories" / "hello_timer_history.json"
    document = json.loads(source.read_text(encoding="utf-8"))
    document["events"][0]["workflowExecutionStartedEventAttributes"]["memo"] = {"fields": {"owner": {
        "metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "ImRhbmEuc2VjcmV0QGNvcnAuZXhhbXBsZSI="}}}
    failure = {"message": f"boom {SECRETS['openai']} for {SECRETS['email']}"}
    document["events"][6]["unknownField"] = failure
    planted = tmp_path / "hello.json"
    planted.write_text(json.dumps(document), encoding="utf-8")
    planted.chmod(0o644)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["redact", "--in-place", str(planted)])
    assert result.exit_code == 0, result.output
    text = planted.read_text(encoding="utf-8")
    assert SECRETS["openai"] not in text and SECRETS["email"] not in text and "ImRhbmEuc2VjcmV0" not in text
    assert (planted.stat().st_mode & 0o777) == 0o644  # --in-place keeps the file's mode
    redacted = json.loads(text)
    assert "$.events[6].unknownField.message" in redacted["redacted"]


def test_a_digit_run_inside_a_uuid_or_a_hex_digest_is_not_a_card_number() -> None:
    """These UUIDs hold a Luhn-valid run of 13+ digits between hex letters (``89-61644515145`` in the first);
    read as card numbers, redaction changed ids a replay derives from (a ``ctx.uuid()`` step name)."""
    redactor = Redactor.build(DEFAULT_KEY_NAMES)
    for value in ("b80ede9e-94ab-4502-9a89-61644515145e", "c3d8abc1-ceaa-41d3-8552-241142843251",
                  "ticket 99946233-4898-496b-91f5-670c5d3e3de7", "sha 5e4111111111111111af"):
        assert redactor.value(value)[0] == value
    for card in ("4111111111111111", "card 4111 1111 1111 1111.", "(4111-1111-1111-1111)"):
        assert redactor.value(card)[0] != card
