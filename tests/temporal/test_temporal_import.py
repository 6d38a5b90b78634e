"""``replaytest import temporal`` without a server: payload redaction, file names, and failures."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

from temporal_devserver import free_port

from replaytest.history.redact import Redactor
from replaytest.plugins.temporal.importer import history_filename
from replaytest.plugins.temporal.redact import redact_temporal_document


def _payload(value, encoding: bytes = b"json/plain") -> dict:
    data = json.dumps(value).encode() if encoding == b"json/plain" else value
    return {"metadata": {"encoding": base64.b64encode(encoding).decode()}, "data": base64.b64encode(data).decode()}


def _value(payload: dict):
    return json.loads(base64.b64decode(payload["data"]))


def test_json_payloads_are_redacted_wherever_they_sit():
    document = {"events": [
        {"eventId": "1", "workflowExecutionStartedEventAttributes": {
            "input": {"payloads": [_payload({"customer": {"email": "ann@example.com", "tier": "gold"}, "item": "book"})]},
            "header": {"fields": {"auth": _payload({"token": "s3cret"})}},
        }},
        {"eventId": "7", "activityTaskCompletedEventAttributes": {"result": {"payloads": [_payload("plain string")]}}},
    ]}
    redacted, count = redact_temporal_document(document, Redactor.build(["email", "token"]))
    attributes = redacted["events"][0]["workflowExecutionStartedEventAttributes"]
    value = _value(attributes["input"]["payloads"][0])
    assert value["customer"]["email"].endswith("@example.com") and value["customer"]["email"] != "ann@example.com"
    assert (value["customer"]["tier"], value["item"]) == ("gold", "book")
    assert _value(attributes["header"]["fields"]["auth"])["token"].startswith("[redacted:")
    assert count.replaced == 2
    assert redacted["redacted"] == [
        "$.events[0].workflowExecutionStartedEventAttributes.header.fields.auth.data.token",
        "$.events[0].workflowExecutionStartedEventAttributes.input.payloads[0].data.customer.email",
    ]
    # Untouched payloads keep their exact bytes; the input document is not modified.
    assert redacted["events"][1] == document["events"][1]
    assert _value(document["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0])["customer"]["email"] == "ann@example.com"


def test_redacted_payload_is_encoded_like_temporalios_json_converter():
    import temporalio.converter

    document, _ = redact_temporal_document({"payloads": [_payload({"b": 1, "email": "x@y.z", "a": [1, 2]})]},
                                           Redactor.build(["email"]))
    redacted = document["payloads"][0]
    value = _value(redacted)
    assert value["email"].startswith("[redacted:")
    expected = temporalio.converter.PayloadConverter.default.to_payloads([value])[0]
    assert base64.b64decode(redacted["data"]) == expected.data


def test_json_paths_select_inside_each_payload():
    redacted, count = redact_temporal_document({"payloads": [_payload({"card": {"number": "4111", "brand": "visa"}})]},
                                               Redactor.build([], ["$.payloads[0].data.card.number"]))
    value = _value(redacted["payloads"][0])
    assert value["card"]["number"].startswith("[redacted:") and value["card"]["brand"] == "visa"
    assert count.replaced == 1


def test_binary_and_encrypted_payloads_are_left_alone_and_counted():
    binary = _payload(b"\x00\x01secret", encoding=b"binary/encrypted")
    redacted, count = redact_temporal_document({"payloads": [binary]}, Redactor.build(["secret"]))
    assert redacted["payloads"][0] == binary
    assert count.opaque_payloads == 1
    assert count.replaced == 0


def test_history_file_names_are_safe_and_distinct():
    assert history_filename("order-1", "01a2-b3") == "order-1_01a2-b3.json"
    # unsafe characters replaced, then the first 12 hex digits of SHA-256("tenant/acme:order 7\0r1")
    assert history_filename("tenant/acme:order 7", "r1") == "tenant_acme_order_7_r1-f64d91cf8b1b.json"
    assert history_filename("tenant:acme:order 7", "r1") != history_filename("tenant/acme:order 7", "r1")


def test_import_from_an_unreachable_server_fails_with_exit_2_and_says_where(tmp_path):
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    outcome = subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "temporal", "--address", address, "--out", str(tmp_path / "h")],
        capture_output=True, text=True, timeout=60,
    )
    assert outcome.returncode == 2
    assert address in outcome.stderr
    assert not list(tmp_path.glob("h/*.json"))


def test_import_group_lists_the_temporal_subcommand():
    outcome = subprocess.run([sys.executable, "-m", "replaytest", "import", "--help"], capture_output=True, text=True,
                             timeout=60)
    assert outcome.returncode == 0
    assert "temporal" in outcome.stdout
