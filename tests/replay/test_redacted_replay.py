"""Redaction cannot change replay silently: a history redacted by default replays green against the
unchanged code that branches on the domain of a redacted e-mail, and a redacted history that diverges
says so and lists the redacted paths the code could have read."""

from __future__ import annotations

import json
from pathlib import Path

import redacted_apps as apps
from click.testing import CliRunner
from replaykit import record, replay

from replaytest.cli import cli
from replaytest.history import Redactor, load_history, redact_file
from replaytest.replay.report import render_text, result_data

INPUT = {"order": 7, "customer": {"email": "ann@vip.example", "name": "Ann"}}


def _redacted(tmp_path: Path) -> Path:
    source = record(tmp_path, apps.routing, INPUT, name="routing")
    target = tmp_path / "clean" / "routing.json"
    redact_file(source, target, Redactor.build())
    return target


def test_default_redaction_keeps_the_branch_on_the_email_domain(tmp_path: Path) -> None:
    target = _redacted(tmp_path)
    history = load_history(target)
    email = history.input["customer"]["email"]
    assert email != "ann@vip.example" and email.endswith("@vip.example")
    assert "$.input.customer.email" in history.redacted
    assert "$.events[0].result.api_key" in history.redacted and "$.events[0].result.contact" in history.redacted
    text = target.read_text(encoding="utf-8")
    assert "ann@vip.example" not in text and "sk-live0123456789abcdefXYZ" not in text and "billing@acme" not in text
    result = replay(target, apps.routing)
    assert result.status == "passed" and not result.warnings, render_text(result)


def test_a_diverging_redacted_history_lists_the_redacted_paths(tmp_path: Path) -> None:
    target = _redacted(tmp_path)
    result = replay(target, apps.routing_by_address)
    assert result.status == "diverged"
    assert result.redacted == ("$.events[0].result.api_key", "$.events[0].result.contact", "$.input.customer.email")
    text = render_text(result)
    assert ("note: this history was redacted; the code may have read pseudonyms at $.events[0].result.api_key, "
            "$.events[0].result.contact, $.input.customer.email") in text
    assert result_data(result)["redacted"] == list(result.redacted)


def test_cli_redact_reports_and_replay_cli_shows_the_note(tmp_path: Path, monkeypatch) -> None:
    source = record(tmp_path, apps.routing, INPUT, name="routing")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    out = runner.invoke(cli, ["redact", "--out", "clean", str(source)])
    assert out.exit_code == 0, out.output
    data = json.loads((tmp_path / "clean" / "routing.json").read_text())
    assert data["redacted"] == ["$.events[0].result.api_key", "$.events[0].result.contact", "$.input.customer.email"]
