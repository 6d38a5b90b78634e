"""Temporal JSON is redacted by the same redactor as neutral histories: ``temporal.redact`` only says
where payloads are, so a value gets the same pseudonyms in a Temporal payload as in a DBOS or LangGraph
history, and a literal replacement never breaks a payload's encoding."""

from __future__ import annotations

import base64
import json

from replaytest.history.redact import DEFAULT_KEY_NAMES, Redactor
from replaytest.plugins.temporal.redact import redact_temporal_document

ORDER = {
    "customer_email": "dana.whitfield@acme.com",
    "note": "call dana.whitfield@acme.com before noon",
    "api_key": "sk-live-0123456789abcdefghij",
    "quantity": 3,
}


def payload(value: object) -> dict:
    return {"metadata": {"encoding": base64.b64encode(b"json/plain").decode()}, "data": base64.b64encode(json.dumps(value).encode()).decode()}


def decoded(node: dict) -> object:
    return json.loads(base64.b64decode(node["data"]))


def started(value: object) -> dict:
    return {"events": [{"eventId": "1", "workflowExecutionStartedEventAttributes": {"input": {"payloads": [payload(value)]},
                                                                                   "identity": "worker@build-host"}}]}  # fmt: skip


def test_a_temporal_payload_gets_the_pseudonyms_a_neutral_history_gets() -> None:
    redactor = Redactor.build(DEFAULT_KEY_NAMES, secret=b"one key for both")
    neutral, _ = redactor.value(ORDER)
    document, outcome = redact_temporal_document(started(ORDER), redactor)
    attributes = document["events"][0]["workflowExecutionStartedEventAttributes"]
    assert decoded(attributes["input"]["payloads"][0]) == neutral
    email = neutral["customer_email"]
    assert email.startswith("user-") and email.endswith("@acme.com") and "dana" not in email
    assert neutral["note"] == f"call {email} before noon"
    assert neutral["api_key"].startswith("[redacted") and neutral["quantity"] == 3
    assert attributes["identity"] == "worker@build-host"  # not an e-mail address (no dotted domain)
    assert outcome.replaced == 3


def test_a_literal_replacement_keeps_every_payload_a_payload() -> None:
    redactor = Redactor.build(DEFAULT_KEY_NAMES, replacement="***")
    document = {"events": [{"eventId": "1", "workflowExecutionStartedEventAttributes": {
        "memo": {"fields": {"customer_email": payload("dana.whitfield@acme.com")}},
        "input": {"payloads": [payload({"order": 7, "secret": "s3cret"})]},
    }}]}  # fmt: skip
    redacted, _ = redact_temporal_document(document, redactor)
    attributes = redacted["events"][0]["workflowExecutionStartedEventAttributes"]
    assert decoded(attributes["memo"]["fields"]["customer_email"]) == "***"
    assert decoded(attributes["input"]["payloads"][0]) == {"order": 7, "secret": "***"}
