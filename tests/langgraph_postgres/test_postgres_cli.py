"""``replaytest import langgraph --checkpointer postgresql://…``: reads a PostgresSaver database without
writing to it (a role that may only read is enough), never creates the saver's tables, and refuses what it
cannot read with the database (never its password), the thread and the fix."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from langgraph.types import Command
from postgres_server import PostgresServer
from saver_kit import agent, fresh_database, postgres_saver, thread

from replaytest.cli import cli
from replaytest.plugins.langgraph.postgres import PostgresThreads

AGENT_SPEC = "lg_apps.agent:order_agent"


def import_postgres(url: str, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["import", "langgraph", "--checkpointer", url, "--out", str(out), "--workflows", AGENT_SPEC, *args]
    )
    return result.exit_code, result.output


def record_order_runs(url: str) -> None:
    with postgres_saver(url) as saver:
        graph = agent.order_agent.copy(update={"checkpointer": saver})
        graph.invoke({"item": "lamp"}, thread("approved"))
        graph.invoke(Command(resume={"approved": True}), thread("approved"))
        graph.invoke({"item": "desk"}, thread("waiting"))


def table_contents(url: str) -> dict[str, list]:
    with psycopg.connect(url) as conn:
        return {table: sorted(map(repr, conn.execute(f"SELECT * FROM {table}").fetchall()))
                for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")}


def test_a_role_that_may_only_read_imports_every_thread_and_nothing_changes(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    postgres_url = fresh_database(postgres)
    record_order_runs(postgres_url)
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE reader_of_{database} LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader_of_{database}")
    before = table_contents(postgres_url)
    code, output = import_postgres(f"postgresql://reader_of_{database}@127.0.0.1:{postgres.port}/{database}", tmp_path)
    assert code == 0, output
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["order_agent-approved.json", "order_agent-waiting.json"]
    approved = json.loads((tmp_path / "order_agent-approved.json").read_text())
    assert approved["status"] == "completed"
    assert [(e["name"], e.get("call_index")) for e in approved["events"]] == [
        ("fetch_price", 0), ("draft", 1), ("draft", 2), ("notify", 3), ("interrupt", None),
    ]
    assert json.loads((tmp_path / "order_agent-waiting.json").read_text())["status"] == "parked"
    assert table_contents(postgres_url) == before


def test_limit_and_thread_id_select_as_for_sqlite(postgres: PostgresServer, tmp_path: Path) -> None:
    postgres_url = fresh_database(postgres)
    record_order_runs(postgres_url)
    code, output = import_postgres(postgres_url, tmp_path / "latest", "--limit", "1")
    assert code == 0, output
    assert [p.name for p in (tmp_path / "latest").glob("*.json")] == ["order_agent-waiting.json"]  # checkpointed last
    code, output = import_postgres(postgres_url, tmp_path / "one", "--thread-id", "approved")
    assert code == 0, output
    assert [p.name for p in (tmp_path / "one").glob("*.json")] == ["order_agent-approved.json"]


def test_a_database_without_the_savers_tables_is_refused_and_left_without_them(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    postgres_url = fresh_database(postgres)
    code, output = import_postgres(postgres_url, tmp_path)
    assert code == 2
    database = postgres_url.rsplit("@", 1)[1]
    assert (f"error: postgresql://replaytest@{database}: not a LangGraph PostgresSaver database (no checkpoints, "
            "checkpoint_blobs, checkpoint_writes table(s) on its search_path; the saver's setup() creates them, "
            "replaytest only reads)") in output
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").fetchone()
    assert tables == (0,)


def test_the_import_transaction_refuses_writes(postgres: PostgresServer) -> None:
    """Read-only by Postgres itself, not only by replaytest's own restraint."""
    postgres_url = fresh_database(postgres)
    record_order_runs(postgres_url)
    threads = PostgresThreads.connect(postgres_url)
    try:
        assert threads.thread_ids(None) == ["waiting", "approved"]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            threads.conn.execute("DELETE FROM checkpoint_writes")
    finally:
        threads.close()
    assert threads.conn.closed
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoint_writes").fetchone() == (2,)


def test_a_server_that_does_not_answer_is_an_error_without_the_password(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    code, output = import_postgres(f"postgresql://agent:hunter2@127.0.0.1:{closed}/checkpoints", tmp_path)
    assert code == 2
    assert f"error: postgresql://agent@127.0.0.1:{closed}/checkpoints: cannot connect:" in output
    assert "hunter2" not in output


def test_a_role_that_may_not_read_the_tables_is_an_error_naming_what_postgres_refused(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    postgres_url = fresh_database(postgres)
    record_order_runs(postgres_url)
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE stranger_to_{database} LOGIN")
    stranger = f"postgresql://stranger_to_{database}@127.0.0.1:{postgres.port}/{database}"
    code, output = import_postgres(stranger, tmp_path)
    assert code == 2
    assert f"error: {stranger}: permission denied for table checkpoints" in output
    assert "Traceback" not in output and not list(tmp_path.iterdir())
