"""The shop on a real Postgres: DBOS ran it with its system database (schema ``dbos``) and its orders
database there, ``replaytest import dbos`` read its runs over a ``postgresql://`` URL, and the histories
replay green with the code as it is, diverge when it changes, and equal the ones the same code recorded
on SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import postgres_server
import psycopg
import pytest
from click.testing import CliRunner
from dbos_kit import Recording, edited, no_effects, project, replay, report
from postgres_server import ROLE, PostgresMissing, PostgresServer, find_postgres_binaries

from replaytest.cli import cli

# Every history the shop's recording imports: (workflow type, status), as the recorder ran them.
EXPECTED_RUNS = {
    "order-ok": ("place_order", "completed"),
    "order-declined": ("place_order", "completed"),
    "order-pending": ("place_order", "running"),  # left waiting in DBOS.recv
    "order-ok-5": ("ship", "completed"),
    "order-declined-5": ("ship", "completed"),
    "order-pending-5": ("ship", "completed"),
    "parcel-1": ("pack_parcel", "completed"),
    "report-day": ("Reports.daily", "completed"),
    "report-day-1": ("ship", "completed"),
    "restock-1": ("Warehouse.restock", "completed"),
}
ORDER_STEPS = [
    (1, "step", "reserve_stock"), (2, "step", "charge_card"), (3, "step", "save_order"), (4, "timer", "DBOS.sleep"),
    (5, "child-workflow", "ship"), (6, "step", "DBOS.getResult"), (7, "marker", "patched"), (8, "step", "send_receipt"),
]  # fmt: skip
RENAMED = edited(
    ("def send_receipt(", "def email_receipt("),
    ("        receipt = send_receipt(order_id)", "        receipt = email_receipt(order_id)"),
)


def documents(recording: Recording) -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(recording.histories.glob("*.json"))}


def events(document: dict) -> list[tuple[int, str, str]]:
    return [(event["function_id"], event["kind"], event["name"]) for event in document["events"]]


def test_runs_recorded_on_postgres_are_imported_with_their_statuses(pickled_on_postgres: Recording) -> None:
    assert pickled_on_postgres.database_url.startswith("postgresql://replaytest@127.0.0.1:")
    imported = documents(pickled_on_postgres)
    assert {run: (doc["workflow"]["type"], doc["status"]) for run, doc in imported.items()} == EXPECTED_RUNS
    # The pending run's recv (function id 9) has not returned; its timeout sleep (id 10) is written.
    assert events(imported["order-pending"]) == [*ORDER_STEPS, (10, "timer", "DBOS.sleep")]
    assert events(imported["order-declined"]) == [*ORDER_STEPS, (9, "signal", "DBOS.recv"), (10, "timer", "DBOS.sleep")]
    declined = imported["order-declined"]
    assert declined["input"] == {"args": ["declined", 500.0, 60], "kwargs": {}}
    assert declined["events"][1]["error"] == {"type": "PaymentDeclined", "message": "card declined for 500.0"}
    assert declined["result"]["approval"] == "approved by ops"
    assert declined["code_version"] == "v1"
    assert pickled_on_postgres.effects.read_text().count("charge") == 3  # the steps really ran


def test_the_orders_transaction_committed_on_postgres(pickled_on_postgres: Recording, postgres: PostgresServer) -> None:
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user=ROLE, dbname="shop_orders") as connection:
        orders = connection.execute("SELECT id, status FROM orders ORDER BY id").fetchall()
    assert orders == [("declined", "paid"), ("ok", "paid"), ("pending", "paid")]


def without_wake_times(document: dict) -> dict:
    """The history without its timers' ``wake_at`` and ``started_at``: DBOS records the clock times a sleep starts
    and ends."""
    copy = json.loads(json.dumps(document))
    for event in copy["events"]:
        if event["kind"] == "timer":
            assert isinstance(event.pop("wake_at"), float)
            event.pop("started_at", None)
    return copy


def test_sqlite_and_postgres_histories_of_the_same_code_are_equivalent(pickled: Recording, pickled_on_postgres: Recording) -> None:
    on_sqlite, on_postgres = documents(pickled), documents(pickled_on_postgres)
    assert sorted(on_sqlite) == sorted(on_postgres) == sorted(EXPECTED_RUNS)
    for run, (workflow_type, status) in EXPECTED_RUNS.items():
        assert (on_sqlite[run]["status"], on_postgres[run]["status"]) == (status, status), run
        assert on_sqlite[run]["workflow"] == on_postgres[run]["workflow"] == {"type": workflow_type, "id": run, "engine": "dbos"}
        assert without_wake_times(on_sqlite[run]) == without_wake_times(on_postgres[run]), run
    assert events(on_postgres["report-day"]) == [
        (1, "child-workflow", "ship"), (2, "step", "DBOS.setEvent"), (3, "step", "DBOS.getEvent"), (4, "timer", "DBOS.sleep"),
        (5, "step", "DBOS.send"), (6, "signal", "DBOS.recv"), (7, "timer", "DBOS.sleep"), (8, "step", "DBOS.getResult"),
    ]  # fmt: skip


@pytest.mark.slow
def test_unchanged_code_replays_the_postgres_runs_green(pytester: pytest.Pytester, pickled_on_postgres: Recording) -> None:
    root = project(pytester, pickled_on_postgres.histories)
    result = replay(pytester, "-v")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["*histories/order-pending.json::replay PASSED*"])
    no_effects(root)


@pytest.mark.slow
def test_a_changed_workflow_diverges_on_finished_and_in_flight_runs(pytester: pytest.Pytester, pickled_on_postgres: Recording) -> None:
    root = project(pytester, pickled_on_postgres.histories, RENAMED, only=("order-ok", "order-pending"))
    result = replay(pytester)
    result.assert_outcomes(failed=2)
    text = report(result)
    assert "histories/order-ok.json: place_order id order-ok: diverged" in text
    assert "histories/order-pending.json: place_order id order-pending: diverged" in text
    assert ", in-flight run (parked)" in text and ", finished run (completed)" in text
    assert "    recorded  step 'send_receipt'\n    issued    step 'email_receipt'\n" in text
    no_effects(root)


@pytest.mark.parametrize("scheme", ["postgres", "postgresql+psycopg"])
def test_the_importer_reads_postgres_urls_as_dbos_takes_them(pickled_on_postgres: Recording, tmp_path: Path, scheme: str) -> None:
    """The recording's ``postgresql://`` means psycopg 3, as for DBOS, on every SQLAlchemy; so do ``postgres://``
    (which SQLAlchemy alone does not read) and a URL naming the driver."""
    url = scheme + pickled_on_postgres.database_url[len("postgresql") :]
    result = CliRunner().invoke(cli, ["import", "dbos", "--database-url", url, "--workflow-id", "order-pending", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "order-pending.json").read_text() == (pickled_on_postgres.histories / "order-pending.json").read_text()


def test_a_machine_without_postgres_is_told_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_server, "DEBIAN_VERSIONS", tmp_path / "no-postgresql")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PostgresMissing, match=r"apt-get install -y --no-install-recommends postgresql"):
        find_postgres_binaries()


def test_a_postgres_url_without_a_driver_means_psycopg_3() -> None:
    from replaytest.plugins.dbos.importer import postgres_engine_url

    url = postgres_engine_url("postgresql://shop@db.internal:5433/system")
    assert url.render_as_string() == "postgresql+psycopg://shop@db.internal:5433/system"
    assert postgres_engine_url("postgres://shop@db.internal/system").drivername == "postgresql+psycopg"
    assert postgres_engine_url("postgresql+asyncpg://shop@db.internal/system").drivername == "postgresql+asyncpg"
