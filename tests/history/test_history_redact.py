"""Redaction of histories and plain JSON values, and the ``replaytest redact`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from history_samples import VALID

from replaytest.cli import cli
from replaytest.history import (
    BLOB_THRESHOLD,
    Event,
    History,
    RedactError,
    Redactor,
    WorkflowInfo,
    history_from_dict,
    load_history,
    redact_history,
    redact_value,
    save_history,
)
from replaytest.history.redact import parse_json_path


def _pseudonym(value: object) -> bool:
    return isinstance(value, str) and value.startswith("[redacted:")


def test_key_names_match_case_and_separator_insensitively() -> None:
    value = {"API-Key": "k1", "apiKey": "k2", "nested": [{"Password": "p", "keep": 1}], "tokens_used": 12}
    redacted = redact_value(value, ["api_key", "password"])
    assert all(_pseudonym(redacted[key]) for key in ("API-Key", "apiKey"))
    assert _pseudonym(redacted["nested"][0]["Password"]) and redacted["nested"][0]["keep"] == 1
    assert redacted["tokens_used"] == 12  # a counter, not a secret
    assert value["API-Key"] == "k1"  # the input is not modified


def test_default_key_names_cover_common_secrets() -> None:
    value = {"authorization": "Bearer x", "email": "ann@shop.example", "Token": "t", "name": "Ann"}
    redacted = redact_value(value)
    assert _pseudonym(redacted["authorization"]) and _pseudonym(redacted["Token"]) and redacted["name"] == "Ann"
    assert redacted["email"].startswith("user-") and redacted["email"].endswith("@shop.example")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$.customer.city", {"customer": {"city": "R", "phone": "1"}, "rows": [{"ticket": "a"}, {"ticket": "b"}]}),
        ("$.rows[*].ticket", {"customer": {"city": "e", "phone": "1"}, "rows": [{"ticket": "R"}, {"ticket": "R"}]}),
        ("$.rows[1]", {"customer": {"city": "e", "phone": "1"}, "rows": [{"ticket": "a"}, "R"]}),
        ("$['customer']['phone']", {"customer": {"city": "e", "phone": "R"}, "rows": [{"ticket": "a"}, {"ticket": "b"}]}),
        ("$..ticket", {"customer": {"city": "e", "phone": "1"}, "rows": [{"ticket": "R"}, {"ticket": "R"}]}),
        ("$.customer.*", {"customer": {"city": "R", "phone": "R"}, "rows": [{"ticket": "a"}, {"ticket": "b"}]}),
        ("$.absent.deeper", {"customer": {"city": "e", "phone": "1"}, "rows": [{"ticket": "a"}, {"ticket": "b"}]}),
        ("$", "R"),
    ],
)
def test_json_paths(path: str, expected: object) -> None:
    value = {"customer": {"city": "e", "phone": "1"}, "rows": [{"ticket": "a"}, {"ticket": "b"}]}
    assert redact_value(value, [], [path], replacement="R") == expected


@pytest.mark.parametrize("path", ["input.email", "$.a[", "$.a[x]", "$.", "$..", "$ .a"])
def test_bad_json_paths_are_rejected(path: str) -> None:
    with pytest.raises(RedactError):
        parse_json_path(path)


def test_history_redaction_keeps_digests_keys_and_structure() -> None:
    history = history_from_dict(VALID)
    redactor = Redactor.build(["token"], ["$.input.customer.email", "$.events[*].result.by", "$.events[6].error.message"])
    redacted, count = redact_history(history, redactor)
    assert count == 4
    assert redacted.input["customer"]["name"] == "Ann"
    assert redacted.input["customer"]["email"].endswith("@example.com") and redacted.input["customer"]["email"] != "ann@example.com"
    [row] = redacted.event_result(redacted.events[1])
    assert row["id"] == 7 and _pseudonym(row["token"])
    assert _pseudonym(redacted.events[4].result["by"])
    assert redacted.events[6].error is not None
    assert redacted.events[6].error.type == "StepFailed" and _pseudonym(redacted.events[6].error.message)
    assert redacted.redacted == ("$.events[1].result[0].token", "$.events[4].result.by", "$.events[6].error.message",
                                 "$.input.customer.email")
    for before, after in zip(history.events, redacted.events):
        assert (after.seq, after.kind, after.name, after.args_digest, after.idempotency_key, after.prompt, after.patch_id) == (
            before.seq, before.kind, before.name, before.args_digest, before.idempotency_key, before.prompt, before.patch_id,
        )
    assert redacted.prompt_versions == history.prompt_versions


def test_paths_outside_payloads_select_nothing() -> None:
    history = history_from_dict(VALID)
    redacted, count = redact_history(history, Redactor.build([], ["$.workflow.id", "$.events[0].args_digest"]))
    assert "$.workflow.id" not in redacted.redacted and redacted.workflow == history.workflow
    assert [e.args_digest for e in redacted.events] == [e.args_digest for e in history.events]


def test_redacting_a_blob_result_writes_a_new_blob(tmp_path: Path) -> None:
    big = {"rows": ["x" * 100] * (BLOB_THRESHOLD // 100 + 10), "api_key": "k"}
    source = tmp_path / "run.json"
    save_history(History(workflow=WorkflowInfo("wf", "w"), status="completed", events=(Event(1, "step", "s", result=big),)), source)
    old_ref = load_history(source).events[0].result_ref
    redacted, count = redact_history(load_history(source), Redactor.build(["api_key"]))
    assert count == 1
    save_history(redacted, tmp_path / "out" / "run.json")
    again = load_history(tmp_path / "out" / "run.json")
    assert again.events[0].result_ref not in (None, old_ref)
    assert _pseudonym(again.event_result(again.events[0])["api_key"])


def test_cli_redact_out_dir_and_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "run.json"
    save_history(history_from_dict(VALID), source)
    runner = CliRunner()
    result = runner.invoke(cli, ["redact", "--path", "$.input.customer.name", "--out", "clean", str(source)])
    assert result.exit_code == 0, result.output
    assert "3 value(s) redacted" in result.output  # email (default key), token (default key), name (path)
    clean = json.loads((tmp_path / "clean" / "run.json").read_text())
    assert clean["input"]["customer"]["email"].endswith("@example.com") and _pseudonym(clean["input"]["customer"]["name"])
    assert clean["events"][0]["args_digest"] == VALID["events"][0]["args_digest"]

    result = runner.invoke(cli, ["redact", "--key", "ticket", "--in-place", str(source)])
    assert result.exit_code == 0, result.output
    data = json.loads(source.read_text())
    assert _pseudonym(data["input"]["ticket"])
    assert data["input"]["customer"]["email"] != "ann@example.com"  # key patterns apply with --key too


def test_cli_redact_uses_config_and_reports_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.redact]\nkey-names = ["name"]\njson-paths = ["$.result"]\nreplacement = "***"\n', encoding="utf-8"
    )
    source = tmp_path / "run.json"
    save_history(history_from_dict(VALID), source)
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(cli, ["redact", "--in-place", str(source), str(tmp_path / "bad.json")])
    assert result.exit_code == 2
    assert "bad.json: $.format: not a replaytest history" in result.output
    data = json.loads(source.read_text())
    assert data["input"]["customer"]["name"] == "***"
    assert data["result"] == "***"
    assert runner.invoke(cli, ["redact", str(source)]).exit_code == 2  # neither --in-place nor --out


def test_cli_redact_refuses_two_files_with_one_name_into_one_dir(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        save_history(history_from_dict(VALID), tmp_path / folder / "run.json")
    result = CliRunner().invoke(cli, ["redact", "--out", str(tmp_path / "out"), str(tmp_path / "a" / "run.json"), str(tmp_path / "b" / "run.json")])
    assert result.exit_code == 2
    assert "same name" in result.output


def _json_values():
    from hypothesis import strategies as st

    keys = st.sampled_from(["email", "Email", "api-key", "token", "name", "id", "items", "nested"])
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=4)), max_leaves=10)


def _scrubbed(value: object) -> bool:
    """Every leaf is a pseudonym, or carries nothing (null, a boolean, an empty string)."""
    if isinstance(value, dict):
        return all(_scrubbed(item) for item in value.values())
    if isinstance(value, list):
        return all(_scrubbed(item) for item in value)
    return value is None or isinstance(value, (bool, int, float)) or value == "" or _pseudonym(value)


def _has_key(value: object, names: set[str]) -> bool:
    if isinstance(value, dict):
        return any((key.lower().replace("-", "_") in names and not _scrubbed(item)) or _has_key(item, names) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_key(item, names) for item in value)
    return False


def test_redaction_property_no_secret_key_survives_and_structure_is_kept(tmp_path: Path) -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(_json_values(), _json_values())
    def check(payload: object, result: object) -> None:
        data = json.loads(json.dumps(VALID))
        data["input"] = payload
        data["events"][1]["result"] = result
        history = history_from_dict(data)
        redacted, _ = redact_history(history, Redactor.build(["email", "api_key", "token"]))
        for value in (redacted.input, redacted.events[1].result):
            assert not _has_key(value, {"email", "api_key", "token"})
        assert [(e.seq, e.kind, e.name, e.args_digest) for e in redacted.events] == [
            (e.seq, e.kind, e.name, e.args_digest) for e in history.events
        ]
        target = tmp_path / "run.json"
        save_history(redacted, target)
        assert load_history(target) == redacted

    check()


def test_key_patterns_spare_names_that_merely_contain_a_fragment() -> None:
    # "class_name" normalises to "classname", which holds "ssn": a workflow's class must survive redaction.
    from replaytest.history.redact import DEFAULT_KEY_NAMES, Redactor

    redactor = Redactor.build(DEFAULT_KEY_NAMES)
    kept = {"class_name": "Reports", "config_name": "berlin", "max_tokens": 512}
    assert redactor.value(kept) == (kept, 0)
    scrubbed, count = redactor.value({"user_ssn": "078-05-1120", "ssn_last4": "1120"})
    assert count == 2 and "078-05-1120" not in str(scrubbed) and "1120" not in str(scrubbed)
