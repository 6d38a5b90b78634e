"""Every credential shape of ``history/secret_rules.py`` is found in free text, inside a JSON string, in
an error message and in a header line, and replaced there by its ``[redacted-<rule id>:<hash>]``
pseudonym with the text around it kept; ordinary ids, digests, UUIDs and base64 are left alone;
hostile strings are scanned in bounded work.

The fake tokens are assembled from two parts so that this file's text is not itself taken for a leak
by the secret scanners of code hosts; none of them was ever issued.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.history import Event, History, Redactor, WorkflowInfo, load_history, redact_history, save_history
from replaytest.history.model import ErrorInfo
from replaytest.history.secret_rules import RULE_IDS, holds_secret, shannon_entropy

PEM = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAz8Fq3Lk0vXb9TnQ2mWc7RyH1pJd5sGe4\n"
    "aU6iO8kZ3xV2bN7mQ1wE5rT9yU4iO0pA3sD6fG8hJ2kL==\n-----END RSA " + "PRIVATE KEY-----"
)

# (rule id, text holding the secret, the text as it must read redacted with <<id>> for the
# pseudonym, the part of the text that must be gone).
CASES: list[tuple[str, str, str, str]] = [
    ("private-key", f"loaded {PEM} from the vault", "loaded <<private-key>> from the vault", "MIIEowIBAAKCAQEAz8Fq3Lk0"),
    (
        "jwt",
        "session eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJjdXN0LTQyIn0.Sf4kE9cV0pQ2mX7nR1tY8wZ3bL6jH5gD expired",
        "session <<jwt>> expired",
        "Sf4kE9cV0pQ2mX7nR1tY8wZ3bL6jH5gD",
    ),
    (
        "anthropic-api-key",
        "model key sk-ant-" + "api03-Qm7Xv2Lp9Rk4Tn8Wc1Ys6Hd3Jf0Bg5Zu-Ea_Io7Pq2Mr9Nw4Ks1Lt8Vx3AA rejected",
        "model key <<anthropic-api-key>> rejected",
        "Qm7Xv2Lp9Rk4Tn8Wc1Ys6Hd3Jf0Bg5Zu",
    ),
    ("api-key", "model key sk-" + "proj-Zx81Lq0Pw2Ye7Rv5Tn3Ub6Wc9Md4Kf1Hg rejected", "model key <<api-key>> rejected", "Zx81Lq0Pw2Ye7Rv5Tn3Ub6Wc9"),
    ("stripe-key", "charge with sk_" + "live_51HqLmN2eZvKYlo2CpT8rXw9QbF3aD7g failed", "charge with <<stripe-key>> failed", "51HqLmN2eZvKYlo2CpT8rXw9"),
    ("stripe-key", "refund with rk_" + "live_51HqLmN2eZvKYlo2CpT8rXw9QbF3aD7g failed", "refund with <<stripe-key>> failed", "51HqLmN2eZvKYlo2CpT8rXw9"),
    ("aws-access-key", "upload as AKIA" + "Z3MHQ7PXW2LRN5TK denied", "upload as <<aws-access-key>> denied", "Z3MHQ7PXW2LRN5TK"),
    ("github-token", "clone with ghp_" + "R8d2K1mQ7vX0cL5tN9wB3yH6fJ4sA2pZ1eUo", "clone with <<github-token>>", "R8d2K1mQ7vX0cL5tN9wB3yH6"),
    ("github-token", "oauth gho_" + "16C7e42F292c6912E7710c838347Ae178B4a done", "oauth <<github-token>> done", "16C7e42F292c6912E7710c83"),
    ("github-token", "app ghs_" + "K3m8Pq2Wx7Zt5Lv9Rn1Yc4Hd6Jf0Bg2Su8Ea done", "app <<github-token>> done", "K3m8Pq2Wx7Zt5Lv9Rn1Yc4Hd"),
    ("github-token", "user ghu_" + "Xv2Lp9Rk4Tn8Wc1Ys6Hd3Jf0Bg5Zu7Ea1Io3 done", "user <<github-token>> done", "Xv2Lp9Rk4Tn8Wc1Ys6Hd3Jf0"),
    (
        "github-token",
        "fine-grained github_" + "pat_11ABCDEFG0Qm7Xv2Lp9Rk4_Tn8Wc1Ys6Hd3Jf0Bg5Zu7Ea1Io3Pq2Mr9Nw4Ks1Lt8Vx3Cy6Dz0Fb9Gh done",
        "fine-grained <<github-token>> done",
        "11ABCDEFG0Qm7Xv2Lp9Rk4",
    ),
    ("gitlab-token", "CI used glpat-" + "xR4mK8vN2pQ7wL9sT3yZ to push", "CI used <<gitlab-token>> to push", "xR4mK8vN2pQ7wL9sT3yZ"),
    (
        "slack-token",
        "notify via xoxb-" + "2048123456789-2048987654321-Ab3De6Gh9Jk2Mn5Pq8St1Vw4 ok",
        "notify via <<slack-token>> ok",
        "Ab3De6Gh9Jk2Mn5Pq8St1Vw4",
    ),
    ("slack-token", "user token xoxp-" + "2048123456789-2048987654321-9Jk2Mn5Pq8", "user token <<slack-token>>", "2048987654321-9Jk2Mn5Pq8"),
    (
        "slack-token",
        "socket xapp-" + "1-A0123BCDEFG-1234567890123-ab3de6gh9jk2mn5pq8st1vw4",
        "socket <<slack-token>>",
        "ab3de6gh9jk2mn5pq8st1vw4",
    ),
    (
        "slack-webhook",
        "posted to https://hooks.slack.com/" + "services/T01ABCD2EFG/B02HIJK3LMN/aB3dE6gH9jK2mN5pQ8sT1vW4",
        "posted to https://<<slack-webhook>>",
        "aB3dE6gH9jK2mN5pQ8sT1vW4",
    ),
    ("google-api-key", "maps key AIza" + "SyD3fK9mQ2vX7pL0rT5wN8bH1cJ4gZ6eU2y over quota", "maps key <<google-api-key>> over quota", "SyD3fK9mQ2vX7pL0rT5wN8bH"),
    ("npm-token", "publish npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 failed", "publish <<npm-token>> failed", "a1B2c3D4e5F6g7H8i9J0k1L2"),
    (
        "pypi-token",
        "upload pypi-" + "AgEIcHlwaS5vcmcCJDNmY2E4ZTk3LTQxYjUtNGQ2Ny04YjBmLTFmNzE0YTc2NmQ1ZQACKlszLCI failed",
        "upload <<pypi-token>> failed",
        "CJDNmY2E4ZTk3LTQxYjUtNGQ2Ny04",
    ),
    ("huggingface-token", "hub token hf_" + "QmXvLpRkTnWcYsHdJfBgZuEaIoPqMrNwKs", "hub token <<huggingface-token>>", "QmXvLpRkTnWcYsHdJfBgZuEa"),
    (
        "sendgrid-api-key",
        "mail via SG." + "Ab3De6Gh9Jk2Mn5Pq8St1V.Wx7Zt5Lv9Rn1Yc4Hd6Jf0Bg2Su8Ea3Io5Pq7Mr9Nw1Ks3Lt5V failed",
        "mail via <<sendgrid-api-key>> failed",
        "Wx7Zt5Lv9Rn1Yc4Hd6Jf0Bg2Su8Ea",
    ),
    ("twilio-api-key", "sms key SK" + "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e denied", "sms key <<twilio-api-key>> denied", "3f9a1c7e5b2d4f6a8c0e1b3d"),
    ("shopify-token", "store token shpat_" + "4f6a8c0e1b3d5f7a9c2e3f9a1c7e5b2d", "store token <<shopify-token>>", "4f6a8c0e1b3d5f7a9c2e3f9a"),
    (
        "digitalocean-token",
        "droplet token dop_" + "v1_" + "9c2e3f9a1c7e5b2d4f6a8c0e1b3d5f7a" * 2,
        "droplet token <<digitalocean-token>>",
        "9c2e3f9a1c7e5b2d4f6a8c0e1b3d5f7a",
    ),
    ("databricks-token", "warehouse dapi" + "1c7e5b2d4f6a8c0e1b3d5f7a9c2e3f9a ok", "warehouse <<databricks-token>> ok", "1c7e5b2d4f6a8c0e1b3d5f7a"),
    (
        "postman-api-key",
        "collection PMAK-" + "64f1c7e5b2d4f6a8c0e1b3d5-f7a9c2e3f9a1c7e5b2d4f6a8c0e1b3d5f7",
        "collection <<postman-api-key>>",
        "64f1c7e5b2d4f6a8c0e1b3d5",
    ),
    (
        "age-secret-key",
        "backup AGE-SECRET-" + "KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE restored",
        "backup <<age-secret-key>> restored",
        "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    ),
    (
        "azure-key",
        "DefaultEndpointsProtocol=https;AccountName=shopdocs;AccountKey="
        + "Zm9ydHktdHdvIGlzIHRoZSBhbnN3ZXIgdG8gZXZlcnl0aGluZyBidXQgbm90IGEga2V5IGF0IGFsbCBzby4u"
        + "==;EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=shopdocs;AccountKey=<<azure-key>>;EndpointSuffix=core.windows.net",
        "Zm9ydHktdHdvIGlzIHRoZSBh",
    ),
    ("bearer", "Authorization: Bearer 9f8e7d6c5b4a3928" + "1716.1514131211", "Authorization: Bearer <<bearer>>", "9f8e7d6c5b4a39281716"),
    ("bearer", "Authorization: Basic b3JkZXJz" + "OlZxN214MnBM", "Authorization: Basic <<bearer>>", "b3JkZXJzOlZxN214MnBM"),
    (
        "url-password",
        "connect postgresql://orders_app:Vq7mX2p" + "L9sK4wN8r@db.internal:5432/orders refused",
        "connect postgresql://orders_app:<<url-password>>@db.internal:5432/orders refused",
        "Vq7mX2pL9sK4wN8r",
    ),
    ("secret-assignment", "env DB_PASSWORD=Xk29!pQz" + "7Lw loaded", "env DB_PASSWORD=<<secret-assignment>> loaded", "Xk29!pQz7Lw"),
    ("secret-assignment", "config client_secret: 'q8W2e5R7" + "t1Y4u6I9o3P0'", "config client_secret: '<<secret-assignment>>'", "q8W2e5R7t1Y4u6I9o3P0"),
    ("secret-assignment", 'body {"refresh_token": "Zq81mNw0Px' + 'Lt7Rv2Ks"}', 'body {"refresh_token": "<<secret-assignment>>"}', "Zq81mNw0PxLt7Rv2Ks"),
]
PSEUDONYM = r"\[redacted-{}:[0-9a-f]{{10}}\]"


def _pattern(template: str) -> re.Pattern[str]:
    """``template`` as a regex: literal text, each ``<<id>>`` a pseudonym of rule ``id``."""
    parts = re.split(r"<<([a-z-]+)>>", template)
    return re.compile("".join(re.escape(part) if index % 2 == 0 else PSEUDONYM.format(part) for index, part in enumerate(parts)))


def _contexts(text: str) -> tuple[Event, dict[str, str]]:
    """One event holding ``text`` four ways, and the JSON path of each as ``redacted`` will list it."""
    event = Event(
        1, "step", "call_tool",
        result={"note": f"agent note: {text} (retrying)", "raw": json.dumps({"tool": "fetch", "log": text})},
        error=ErrorInfo("ToolError", f"request failed: {text}"),
        extra={"http": {"headers": ["Accept: application/json", f"X-Debug-Context: {text}"]}},
    )
    paths = {"free text": "$.events[0].result.note", "JSON string": "$.events[0].result.raw",
             "error message": "$.events[0].error.message", "header": "$.events[0].http.headers[1]"}
    return event, paths


def _history(*events: Event) -> History:
    return History(workflow=WorkflowInfo("support_agent", "run-7f3a"), status="failed", events=events)


def test_every_rule_has_a_case() -> None:
    assert sorted({case[0] for case in CASES}) == sorted(RULE_IDS)


@pytest.mark.parametrize(("rule", "text", "template", "secret"), CASES, ids=[f"{case[0]}-{index}" for index, case in enumerate(CASES)])
def test_shape_is_redacted_in_free_text_json_errors_and_headers(rule: str, text: str, template: str, secret: str, tmp_path: Path) -> None:
    event, paths = _contexts(text)
    redacted, count = redact_history(_history(event), Redactor.build())
    got = redacted.events[0]
    assert _pattern(f"agent note: {template} (retrying)").fullmatch(got.result["note"]), got.result["note"]
    assert _pattern(json.dumps({"tool": "fetch", "log": template})).fullmatch(got.result["raw"]), got.result["raw"]
    assert got.error is not None and _pattern(f"request failed: {template}").fullmatch(got.error.message), got.error.message
    headers = got.extra["http"]["headers"]
    assert headers[0] == "Accept: application/json"
    assert _pattern(f"X-Debug-Context: {template}").fullmatch(headers[1]), headers[1]
    # One secret, one pseudonym, wherever it stood (a key block inside a JSON string is other text:
    # its line breaks are ``\\n`` escapes there).
    found = re.findall(PSEUDONYM.format(re.escape(rule)), json.dumps([got.result, got.error.message, headers]))
    assert len(found) == 4 and len(set(found)) == (2 if "\n" in text else 1)
    assert count == 4 and set(redacted.redacted) == set(paths.values())
    target = tmp_path / "run.json"
    save_history(redacted, target)
    assert secret not in target.read_text(encoding="utf-8")


# Values replay compares or that identify things without granting anything: none is a secret.
ORDINARY = [
    "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 deployed",
    str(uuid.UUID("7d444840-9dc0-11d1-b245-5ffdce74fad2")),
    "workflow run 0190d0f4-3c8a-7e21-b1f5-6a2b8c9d0e1f started",
    base64.b64encode(b"label for order 1042").decode(),
    base64.b64encode(b"{\"sku\": \"LAMP-7\", \"qty\": 2}").decode(),
    "cus_NffrFeUfNV2Hib", "pi_3MtwBwLkdIwHu7ix28a3tqPa", "pk_live_51HqLmN2eZvKYlo2CpT8rXw9QbF3aD7g",
    "msg_01XFDUDYJgAACzvnptvVoYEL", "toolu_01A09q90qw90lq917835lq9", "chatcmpl-8Qx7mN2pL9sK4wN8rVq7",
    "req_7f3a9c2e1b", "ord_00012345", "AC3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
    "Token validation failed for the request", "Basic information about the order", "Bearer token missing",
    "password reset link sent", "password=required", "secret_name: prod-db", "token_count: 12345678",
    "max_tokens=4096", "prompt_tokens: 1234567890", "DB_PASSWORD=${DB_PASSWORD}", "api_key: <your key here>",
    "https://api.example.com:8443/v1/orders?page=2", "see https://docs.example.com/guide#tokens",
    "desk-lamp-2024-large-oak-finish", "task-risk-assessment-pipeline-v2",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "[redacted-github-token:0123456789]", "[redacted:9a8b7c6d5e]",
]


def test_ordinary_ids_digests_uuids_and_base64_are_kept() -> None:
    events = tuple(
        Event(index + 1, "step", "lookup", args_digest="sha256:" + "ab12" * 16, idempotency_key=str(uuid.UUID(int=index)),
              result={"value": value, "digest": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
              error=ErrorInfo("Info", f"note: {value}"))
        for index, value in enumerate(ORDINARY)
    )
    history = _history(*events)
    redacted, count = redact_history(history, Redactor.build())
    changed = [value for value, event in zip(ORDINARY, redacted.events) if event.result["value"] != value]
    assert changed == [] and count == 0 and redacted.redacted == ()
    assert redacted.events == history.events
    assert not any(holds_secret(value) for value in ORDINARY)


def test_a_redacted_history_is_left_as_it_is_by_a_second_redaction() -> None:
    text = " ".join(case[1] for case in CASES)
    first, _ = redact_history(_history(Event(1, "step", "all", result={"log": text})), Redactor.build(secret=b"first"))
    second, count = redact_history(first, Redactor.build(secret=b"second"))
    assert count == 0 and second.events[0].result == first.events[0].result
    assert first.events[0].result["log"].count("[redacted-") == len(CASES)


def test_a_literal_replacement_replaces_a_string_holding_a_secret_whole() -> None:
    secret_text, plain_text = CASES[7][1], "Token validation failed for the request"
    events = (Event(1, "step", "clone", result={"log": secret_text, "status": plain_text}),)
    redacted, count = redact_history(_history(*events), Redactor.build(replacement="***"))
    assert redacted.events[0].result == {"log": "***", "status": plain_text} and count == 1


def test_context_rules_keep_the_key_name_and_host_and_respect_entropy() -> None:
    session = Redactor.build(secret=b"k").session()
    assert session.text("password=changeme") == "password=changeme"  # 2.75 bits a character: a word
    assert shannon_entropy("changeme") == pytest.approx(2.75)
    assert shannon_entropy("Xk29!pQz") == pytest.approx(3.0)
    assert _pattern("password=<<secret-assignment>>").fullmatch(session.text("password=Xk29!pQz"))
    assert _pattern("redis://:<<url-password>>@cache:6379/0").fullmatch(session.text("redis://:s3cr3tPw@cache:6379/0"))
    # A PGP block, and a PEM block cut short by a truncated log line, are still redacted.
    pgp = "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\nlQOYBF+3xQ8BCAC7\n=Ab3D\n-----END PGP " + "PRIVATE KEY BLOCK-----"
    assert _pattern("key <<private-key>> ok").fullmatch(session.text(f"key {pgp} ok"))
    assert session.text("-----BEGIN EC " + "PRIVATE KEY-----\nMHcCAQEEIB3xQ8BCAC7lQOYBF").startswith("[redacted-private-key:")
    # Only real pseudonyms are passed over: a bracket that merely starts like one shields nothing.
    token = CASES[7][1].split()[-1]
    assert _pattern("[redacted by proxy <<github-token>> ]").fullmatch(session.text(f"[redacted by proxy {token} ]"))


HOSTILE_CHILD = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from replaytest.history import Redactor
    session = Redactor.build(secret=b"k").session()
    size = 1_000_000
    hostile = {
        "begin-without-end": ("-----BEGIN " + "PRIVATE KEY-----!") * (size // 28),
        "keywords-without-values": "tokentoken_password." * (size // 20),
        "separators-without-values": "password: " * (size // 10),
        "schemes-without-credentials": "a://b:c/" * (size // 8),
        "bearer-words": "Bearer Validation " * (size // 18),
        "many-secrets-after-a-pseudonym": "[redacted:0123456789] " + "password=Xk29!pQz7Lw " * (size // 21),
        "long-body": "-----BEGIN " + "PRIVATE KEY-----\\n" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\\n" * (size // 34),
    }
    for name, text in hostile.items():
        out = session.text(text)
        print(name, len(text), out.count("[redacted"))
    """
)


@pytest.mark.slow
def test_hostile_strings_are_scanned_within_a_cpu_and_memory_limit() -> None:
    # Each string is a million characters built to make a careless pattern backtrack quadratically
    # (minutes of CPU); the child is killed past 20 CPU seconds or 1 GiB. A BEGIN line without a
    # body is redacted as a block of its own: each one is counted.
    done = subprocess.run([sys.executable, "-c", HOSTILE_CHILD], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = {line.split()[0]: int(line.split()[2]) for line in done.stdout.splitlines()}
    assert counts == {
        "begin-without-end": 1_000_000 // 28, "keywords-without-values": 0, "separators-without-values": 0,
        "schemes-without-credentials": 0, "bearer-words": 0,
        "many-secrets-after-a-pseudonym": 1 + 1_000_000 // 21, "long-body": 1,
    }


def test_cli_redacts_every_file_and_each_shape_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [case[1] for case in CASES]
    leaky = _history(*(Event(index + 1, "step", "call_tool", error=ErrorInfo("ToolError", text)) for index, text in enumerate(texts)))
    clean = _history(Event(1, "step", "lookup", result={"order": "ord_00012345", "digest": ORDINARY[1]}))
    save_history(leaky, tmp_path / "leaky.json")
    save_history(clean, tmp_path / "clean.json")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["redact", "--out", "out", "leaky.json", "clean.json"])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "out" / "leaky.json").read_text(encoding="utf-8")
    assert not [case[3] for case in CASES if case[3] in written]
    messages = [event.error.message for event in load_history(tmp_path / "out" / "leaky.json").events if event.error]
    assert [bool(_pattern(case[2]).fullmatch(message)) for case, message in zip(CASES, messages)] == [True] * len(CASES)
    assert load_history(tmp_path / "out" / "clean.json").events == clean.events
