"""``replaytest import refresh`` on the shop's real DBOS system database (a copy): the import records how it
was made; a history deleted from the folder comes back (added), one edited by hand is the engine's again
(changed), a run the database no longer holds keeps its file (gone), a history no import wrote gets a note;
a database that cannot be read changes nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from dbos_kit import Recording

from replaytest.cli import cli


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def _forget(database: Path, workflow_id: str) -> None:
    """Delete a run's rows, as DBOS's own garbage collection does once a run is past its retention."""
    conn = sqlite3.connect(database)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            if "workflow_uuid" in columns:
                conn.execute(f'DELETE FROM "{table}" WHERE workflow_uuid = ?', (workflow_id,))
        conn.commit()
    finally:
        conn.close()


def test_refresh_reports_added_changed_unchanged_gone_and_keeps_what_the_engine_forgot(
    pickled: Recording, tmp_path: Path
) -> None:
    database = tmp_path / "system.sqlite3"
    shutil.copyfile(pickled.system_db, database)
    histories = tmp_path / "histories"
    code, output = _invoke("import", "dbos", "--database-url", f"sqlite:///{database}", "--name", "place_order",
                           "--out", str(histories))
    assert code == 0, output
    [entry] = json.loads((histories / ".replaytest-imports").read_text(encoding="utf-8"))["imports"]
    assert entry["engine"] == "dbos" and entry["left_out"] == []
    assert entry["command"] == ["--database-url", f"sqlite:///{database}", "--name", "place_order"]
    assert {"order-ok.json", "order-declined.json", "order-pending.json"} <= set(entry["files"])
    unchanged = len(entry["files"]) - 3

    (histories / "order-ok.json").unlink()
    edited = json.loads((histories / "order-declined.json").read_text(encoding="utf-8"))
    edited["status"] = "failed"
    (histories / "order-declined.json").write_text(json.dumps(edited), encoding="utf-8")
    pending = (histories / "order-pending.json").read_bytes()
    _forget(database, "order-pending")
    shutil.copyfile(histories / "order-pending.json", histories / "by-hand.json")

    code, output = _invoke("import", "refresh", str(histories))
    assert code == 0, output
    assert f"1 added, 1 changed, {unchanged} unchanged, 1 gone (kept, the engine no longer has them: " \
           "order-pending.json)" in output
    assert json.loads((histories / "order-declined.json").read_text(encoding="utf-8"))["status"] == "completed"
    assert (histories / "order-ok.json").is_file()
    assert (histories / "order-pending.json").read_bytes() == pending
    assert "note: 1 history in" in output and "by-hand.json" in output and "replaytest import <engine>" in output

    # The database cannot be read: the import fails and nothing moves.
    before = _contents(histories)
    database.write_bytes(b"not a database")
    code, output = _invoke("import", "refresh", str(histories))
    assert code == 2, output
    assert "not refreshed, nothing changed" in output
    assert _contents(histories) == before



def test_a_postgres_password_is_never_recorded_and_the_refresh_connects_without_it(
    pickled_on_postgres: Recording, tmp_path: Path
) -> None:
    # The test server trusts its role, so the password given here is accepted and never needed again.
    url = pickled_on_postgres.database_url.replace("postgresql://replaytest@", "postgresql://replaytest:hunter2@")
    histories = tmp_path / "histories"
    code, output = _invoke("import", "dbos", "--database-url", url, "--workflow-id", "order-ok", "--out",
                           str(histories))
    assert code == 0, output
    record = (histories / ".replaytest-imports").read_text(encoding="utf-8")
    assert "hunter2" not in record
    [entry] = json.loads(record)["imports"]
    assert entry["command"] == ["--database-url", pickled_on_postgres.database_url, "--workflow-id", "order-ok"]
    assert entry["left_out"] == ["the password in --database-url"]
    before = _contents(histories)

    code, output = _invoke("import", "refresh", str(histories))
    assert code == 0, output
    assert "0 added, 0 changed, 1 unchanged, 0 gone" in output
    assert _contents(histories) == before
