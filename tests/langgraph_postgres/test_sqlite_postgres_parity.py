"""The same functional-API agents recorded for real into a SqliteSaver file and into a PostgresSaver database
on the test Postgres import to the same histories (byte for byte once keys are sorted) and replay to the same
verdicts, for completed, parked, resumed-then-completed, parked-inside-a-task, re-invoked, nested and failed
threads.

Two ids legitimately differ between the recordings, and only those: the run id (the id of the thread's input
checkpoint, which LangGraph makes from the clock when it records) and each step's ``task_id`` (LangGraph's
hash of that checkpoint id). Each is checked to be the one its own store holds. The imports use ``--no-redact``:
redaction's pseudonyms are keyed by a random key per history (so a shared history reveals nothing), which makes
two imports of the same value differ by design."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from postgres_server import PostgresServer
from saver_kit import AGENT_SPECS, fresh_database, postgres_saver, record_agents, sqlite_saver, without_record_time_ids

from replaytest.cli import cli

STATUSES = {
    "order_agent-approved.json": "completed", "order_agent-waiting.json": "parked",
    "support_agent-A-17.json": "parked", "support_agent-B-90.json": "completed",
    "asking_agent-ask.json": "parked", "asking_agent-asked.json": "completed",
    "tally-t.json": "completed", "nested_agent-n.json": "completed", "failing_agent-f.json": "failed",
}


@dataclass(frozen=True)
class Imported:
    sqlite: Path
    postgres: Path
    sqlite_db: Path
    postgres_url: str


def import_histories(checkpointer: str, out: Path) -> None:
    specs = [arg for spec in AGENT_SPECS for arg in ("--workflows", spec)]
    args = ["import", "langgraph", "--checkpointer", checkpointer, "--out", str(out), "--no-redact", *specs]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> Imported:
    root = tmp_path_factory.mktemp("parity")
    db, url = root / "checkpoints.sqlite", fresh_database(postgres)
    with sqlite_saver(db) as saver:
        record_agents(saver)
    with postgres_saver(url) as saver:
        record_agents(saver)
    import_histories(f"sqlite:///{db}", root / "sqlite")
    import_histories(url, root / "postgres")
    return Imported(root / "sqlite", root / "postgres", db, url)


def documents(folder: Path) -> dict[str, dict]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def test_both_savers_give_every_thread_with_the_status_it_was_left_in(imported: Imported) -> None:
    assert {name: d["status"] for name, d in documents(imported.sqlite).items()} == STATUSES
    assert {name: d["status"] for name, d in documents(imported.postgres).items()} == STATUSES


def test_the_histories_are_the_same_bytes_but_for_the_ids_made_when_recording(imported: Imported) -> None:
    from_sqlite, from_postgres = documents(imported.sqlite), documents(imported.postgres)
    assert from_sqlite.keys() == from_postgres.keys()
    for name in from_sqlite:
        left = json.dumps(without_record_time_ids(from_sqlite[name]), sort_keys=True)
        right = json.dumps(without_record_time_ids(from_postgres[name]), sort_keys=True)
        assert left == right, name
    # What the comparison relies on: the resumed order thread's calls, interrupt and result as recorded.
    events = from_postgres["order_agent-approved.json"]["events"]
    assert [(e["kind"], e["name"], e.get("call_index")) for e in events] == [
        ("step", "fetch_price", 0), ("step", "draft", 1), ("step", "draft", 2), ("step", "notify", 3),
        ("signal", "interrupt", None),
    ]
    assert events[-1]["result"] == {"approved": True}
    previous = {"seq": 1, "kind": "side-effect", "name": "previous", "result": 5}
    assert from_postgres["tally-t.json"]["events"][0] == previous


def test_the_ids_that_differ_are_each_stores_own(imported: Imported) -> None:
    import sqlite3

    conn = sqlite3.connect(imported.sqlite_db)
    try:
        sqlite_inputs = dict(conn.execute(
            "SELECT thread_id, MAX(checkpoint_id) FROM checkpoints WHERE json_extract(metadata, '$.source') = 'input' "
            "GROUP BY thread_id"
        ).fetchall())
        sqlite_tasks = {row[0] for row in conn.execute("SELECT task_id FROM writes")}
    finally:
        conn.close()
    with psycopg.connect(imported.postgres_url) as pg:
        postgres_inputs = dict(pg.execute(
            "SELECT thread_id, MAX(checkpoint_id) FROM checkpoints WHERE metadata ->> 'source' = 'input' "
            "GROUP BY thread_id"
        ).fetchall())
        postgres_tasks = {row[0] for row in pg.execute("SELECT task_id FROM checkpoint_writes")}
    for folder, inputs, tasks in ((imported.sqlite, sqlite_inputs, sqlite_tasks),
                                  (imported.postgres, postgres_inputs, postgres_tasks)):
        for document in documents(folder).values():
            assert document["workflow"]["run_id"] == inputs[document["workflow"]["id"]]
            assert {e["task_id"] for e in document["events"] if "task_id" in e} <= tasks
    assert not set(sqlite_inputs.values()) & set(postgres_inputs.values())


def replay(folder: Path, *specs: str) -> tuple[int, list[tuple]]:
    args = [arg for spec in specs for arg in ("--workflows", spec)]
    result = CliRunner().invoke(cli, ["replay", str(folder), *args, "--format", "json"])
    report = json.loads(result.output)
    verdicts = []
    for item in report["results"]:
        found = item.get("divergence") or {}
        source = found.get("source") or {}
        verdicts.append((item["workflow"]["type"], item["workflow"]["id"], item["status"], found.get("kind"),
                         found.get("position"), found.get("message"), source.get("line")))
    return result.exit_code, sorted(verdicts)


def test_unchanged_code_passes_every_thread_from_either_saver(imported: Imported) -> None:
    expected = sorted((name.split("-", 1)[0], name.split("-", 1)[1][: -len(".json")], "passed", None, None, None, None)
                      for name in STATUSES)
    assert replay(imported.sqlite, *AGENT_SPECS) == (0, expected)
    assert replay(imported.postgres, *AGENT_SPECS) == (0, expected)


@pytest.mark.parametrize("changed", ["lg_apps.agent_reordered:order_agent", "lg_apps.support_autopay:support_agent"])
def test_changed_code_gets_the_same_verdicts_from_either_saver(imported: Imported, changed: str) -> None:
    entrypoint = changed.split(":")[1]
    for folder in (imported.sqlite, imported.postgres):
        for path in folder.glob(f"{entrypoint}-*.json"):
            (folder.parent / f"{folder.name}-{entrypoint}").mkdir(exist_ok=True)
            (folder.parent / f"{folder.name}-{entrypoint}" / path.name).write_bytes(path.read_bytes())
    from_sqlite = replay(imported.sqlite.parent / f"sqlite-{entrypoint}", changed)
    from_postgres = replay(imported.postgres.parent / f"postgres-{entrypoint}", changed)
    assert from_sqlite == from_postgres
    code, verdicts = from_postgres
    assert code == 1
    if entrypoint == "order_agent":
        # The drafts moved before the price: the first call differs, in the completed and the parked thread.
        assert [(v[1], v[2], v[3], v[4]) for v in verdicts] == [
            ("approved", "diverged", "command-mismatch", 1), ("waiting", "diverged", "command-mismatch", 1),
        ]
    else:
        # Small refunds now paid before the approval: the thread parked there would pay on resume (A-17,
        # 20.0); the 400.0 refund still asks first and passes.
        assert [(v[1], v[2], v[3]) for v in verdicts] == [
            ("A-17", "diverged", "extra-command"), ("B-90", "passed", None),
        ]
