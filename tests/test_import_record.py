"""What an import records for ``replaytest import refresh``, read off the real import commands' parsed options:
no credential (an API key, a SAS token, a connection string, a URL's password or secret query parameters)
is ever stored, values from the environment are read again rather than stored, and a refresh that would need
a secret it is not given, or a folder with no (or an unreadable) record, is exit 2 with nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from replaytest.cli import cli
from replaytest.plugins.import_record import RECORD_NAME, command_line


def _engine(name: str) -> click.Command:
    group = cli.get_command(click.Context(cli), "import")  # loads the command's module, as the command line does
    assert isinstance(group, click.Group)
    command = group.get_command(click.Context(group), name)
    assert command is not None
    return command


def _recorded(engine: str, *args: str, env: dict[str, str] | None = None,
              monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[list[str], list[str]]:
    for key, value in (env or {}).items():
        assert monkeypatch is not None
        monkeypatch.setenv(key, value)
    command = _engine(engine)
    context = command.make_context(engine, [*args, "--out", "histories"])
    return command_line(context, command)


def test_a_database_urls_password_and_secret_parameters_are_left_out() -> None:
    command, left_out = _recorded(
        "dbos", "--database-url", "postgresql://shop:hunter2@db.example:5432/system?sslmode=require&password=x2",
        "--status", "SUCCESS", "--status", "ERROR", "--limit", "5", "--no-redact")
    assert command == ["--database-url", "postgresql://shop@db.example:5432/system?sslmode=require",
                       "--status", "SUCCESS", "--status", "ERROR", "--limit", "5", "--no-redact"]
    assert left_out == ["the password and secret query parameters in --database-url"]
    assert "hunter2" not in json.dumps(command) and "x2" not in json.dumps(command)


def test_credential_options_are_left_out_and_the_environment_is_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    command, left_out = _recorded(
        "azure-durable", "--connection-string", "AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=core.windows.net",
        "--task-hub", "Hub", "--instance", "order-1")
    assert command == ["--task-hub", "Hub", "--instance", "order-1"]
    assert left_out == ["--connection-string"]
    command, left_out = _recorded("azure-durable", "--account-url", "https://a.table.core.windows.net",
                                  "--sas-token", "sv=2024&sig=abc", "--task-hub", "Hub")
    assert command == ["--account-url", "https://a.table.core.windows.net", "--task-hub", "Hub"]
    assert left_out == ["--sas-token"]
    command, left_out = _recorded("temporal", "--address", "cloud.example:7233", "--query", "WorkflowType='Order'",
                                  "--api-key", "k-123", "--tls")
    assert command == ["--address", "cloud.example:7233", "--query", "WorkflowType='Order'", "--tls"]
    assert left_out == ["--api-key"]
    # Read from TEMPORAL_API_KEY: not the command line's, so neither stored nor missing at refresh.
    command, left_out = _recorded("temporal", "--query", "x", env={"TEMPORAL_API_KEY": "k-456"},
                                  monkeypatch=monkeypatch)
    assert command == ["--query", "x"] and left_out == []


def _folder_with_record(tmp_path: Path, entry: dict) -> Path:
    folder = tmp_path / "histories"
    folder.mkdir()
    (folder / "order-1.json").write_text('{"kept": true}\n', encoding="utf-8")
    record = {"format": "replaytest-imports", "version": 1, "imports": [entry]}
    (folder / RECORD_NAME).write_text(json.dumps(record), encoding="utf-8")
    return folder


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_a_secret_that_is_not_given_stops_that_import_and_changes_nothing(tmp_path: Path) -> None:
    folder = _folder_with_record(tmp_path, {
        "engine": "azure-durable", "command": ["--task-hub", "Hub"], "cwd": "..",
        "left_out": ["--connection-string"], "files": ["order-1.json"],
    })
    before = _contents(folder)
    result = CliRunner().invoke(cli, ["import", "refresh", str(folder)], env={"REPLAYTEST_IMPORT_CONNECTION_STRING": ""})
    assert result.exit_code == 2, result.output
    assert ("replaytest import azure-durable --task-hub Hub: not refreshed, nothing changed: --connection-string "
            "holds a secret, which is never stored: set REPLAYTEST_IMPORT_CONNECTION_STRING to give it") in result.output
    assert _contents(folder) == before


def test_a_folder_without_a_record_or_with_an_unreadable_one_is_exit_2(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "order-1.json").write_text("{}\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "refresh", str(plain)])
    assert result.exit_code == 2
    assert "has no record of how its histories were imported" in result.output
    assert "replaytest import <engine>" in result.output
    (plain / RECORD_NAME).write_text("{not json", encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "refresh", str(plain)])
    assert result.exit_code == 2
    assert "cannot read the import record" in result.output
    assert (plain / RECORD_NAME).read_text(encoding="utf-8") == "{not json"
