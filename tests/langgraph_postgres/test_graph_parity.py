"""The graph-API agents of ``tests/langgraph_graph/graph_apps`` recorded for real into a SqliteSaver file and into
a PostgresSaver database on the test Postgres import to the same graph histories (byte for byte once keys are
sorted) and get the same check results (verdict, message, source, notes) against every changed support and
research desk of ``graph_apps``; one graph thread recorded through AsyncSqliteSaver and AsyncPostgresSaver
imports with ``ahistories_from_saver`` to the same history as through SqliteSaver, and gets the same check
results against every support desk.

The recordings: the support desk's ``refund-A-17`` parked in ``human_review``, ``refund-B-90`` approved and
completed, ``question-C-3`` ended after ``classify``; the research desk's ``desks`` (a ``Send`` fan-out, a
subgraph) parked at its sign-off. Two ids legitimately differ between the recordings, and only those: the run
id (the id of the thread's latest checkpoint, which LangGraph makes from the clock) and each step's
``task_id`` (LangGraph's hash of a checkpoint id). Each is checked to be one its own store holds. The imports
use ``--no-redact``: redaction's pseudonyms are keyed by a random key per history, by design."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from postgres_server import PostgresServer
from saver_kit import fresh_database, postgres_saver, sqlite_saver, without_record_time_ids

from replaytest.cli import cli
from replaytest.plugins.langgraph.async_savers import ahistories_from_saver

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "langgraph_graph"))

import graph_kit  # noqa: E402
from graph_apps import support  # noqa: E402
from graph_kit import (  # noqa: E402
    RESEARCH_SPEC,
    SUPPORT_SPEC,
    effect_lines,
    record_research_run,
    record_support_runs,
    thread,
    ticket,
)

effects_log = graph_kit.effects_log  # the fixture pointing node bodies' effects at a fresh file

STATUSES = {
    "LangGraph-refund-A-17.json": "parked", "LangGraph-refund-B-90.json": "completed",
    "LangGraph-question-C-3.json": "completed", "LangGraph-desks.json": "parked",
}


@dataclass(frozen=True)
class Imported:
    sqlite: Path
    postgres: Path
    sqlite_db: Path
    postgres_url: str


def record(saver: object) -> None:
    record_support_runs(saver)
    record_research_run(saver)


def import_histories(checkpointer: str, out: Path) -> None:
    args = ["import", "langgraph", "--checkpointer", checkpointer, "--out", str(out), "--no-redact",
            "--workflows", SUPPORT_SPEC, "--workflows", RESEARCH_SPEC]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> Imported:
    root = tmp_path_factory.mktemp("graph_parity")
    db, url = root / "checkpoints.sqlite", fresh_database(postgres)
    with sqlite_saver(db) as saver:
        record(saver)
    with postgres_saver(url) as saver:
        record(saver)
    import_histories(f"sqlite:///{db}", root / "sqlite")
    import_histories(url, root / "postgres")
    return Imported(root / "sqlite", root / "postgres", db, url)


def documents(folder: Path) -> dict[str, dict]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def test_both_savers_give_every_graph_thread_with_the_status_it_was_left_in(imported: Imported) -> None:
    assert {name: d["status"] for name, d in documents(imported.sqlite).items()} == STATUSES
    assert {name: d["status"] for name, d in documents(imported.postgres).items()} == STATUSES


def test_the_graph_histories_are_the_same_bytes_but_for_the_ids_made_when_recording(imported: Imported) -> None:
    from_sqlite, from_postgres = documents(imported.sqlite), documents(imported.postgres)
    assert from_sqlite.keys() == from_postgres.keys()
    for name in from_sqlite:
        left = json.dumps(without_record_time_ids(from_sqlite[name]), sort_keys=True)
        right = json.dumps(without_record_time_ids(from_postgres[name]), sort_keys=True)
        assert left == right, name
    # What the comparison relies on, as Postgres gave it: the completed thread's super-steps and final state,
    # the parked thread's interrupt, and the fan-out's two Send tasks writing to the reducer channel.
    completed = from_postgres["LangGraph-refund-B-90.json"]
    assert [(e["name"], e["super_step"], e.get("writes")) for e in completed["events"]] == [
        ("__start__", 0, {"ticket": "object"}), ("classify", 1, {"category": "string"}),
        ("draft_refund", 2, {"refund": "number"}), ("human_review", 3, {"approved": "boolean"}),
        ("pay", 4, {"receipt": "string"}),
    ]
    assert completed["graph"]["channels"] == {"ticket": "object", "category": "string", "refund": "number",
                                              "approved": "boolean", "receipt": "string"}
    parked = from_postgres["LangGraph-refund-A-17.json"]
    assert parked["graph"]["next"] == ["human_review"]
    assert parked["events"][-1]["interrupt_value"] == {"question": "approve this refund?", "order_id": "A-17",
                                                       "amount": 900.0}
    assert parked["input"]["refund"] == 900.0
    desks = from_postgres["LangGraph-desks.json"]
    assert [(e["name"], e.get("send")) for e in desks["events"]] == [
        ("__start__", None), ("plan", None), ("search", True), ("search", True), ("review", None), ("interrupt", None),
    ]
    assert desks["input"]["findings"] == ["notes on standing desks (pricing)", "notes on standing desks (reviews)"]


def test_the_ids_that_differ_are_each_stores_own(imported: Imported) -> None:
    conn = sqlite3.connect(imported.sqlite_db)
    try:
        sqlite_latest = dict(conn.execute(
            "SELECT thread_id, MAX(checkpoint_id) FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id"
        ).fetchall())
        sqlite_tasks = {row[0] for row in conn.execute("SELECT task_id FROM writes")}
    finally:
        conn.close()
    with psycopg.connect(imported.postgres_url) as pg:
        postgres_latest = dict(pg.execute(
            "SELECT thread_id, MAX(checkpoint_id) FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id"
        ).fetchall())
        postgres_tasks = {row[0] for row in pg.execute("SELECT task_id FROM checkpoint_writes")}
    for folder, latest, tasks in ((imported.sqlite, sqlite_latest, sqlite_tasks),
                                  (imported.postgres, postgres_latest, postgres_tasks)):
        for document in documents(folder).values():
            assert document["workflow"]["run_id"] == latest[document["workflow"]["id"]]
            task_ids = {e["task_id"] for e in document["events"] if "task_id" in e}
            assert task_ids and task_ids <= tasks
    assert not set(sqlite_latest.values()) & set(postgres_latest.values())


def replayed(folder: Path, module: str) -> dict[str, dict[str, Any]]:
    """Each thread's ``replay --format json`` result under ``graph_apps.<module>``, by thread id."""
    result = CliRunner().invoke(cli, ["replay", str(folder), "--workflows", f"graph_apps.{module}:graph",
                                      "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return {item["workflow"]["id"]: item for item in json.loads(result.stdout)["results"]}


def verdict(item: dict[str, Any]) -> tuple[Any, ...]:
    """A result's verdict: status, kind, the node or channel named, file, line."""
    divergence = item["divergence"] or {}
    source = divergence.get("source") or {}
    required = divergence.get("kind") == "graph-channel-required"
    named = divergence.get("issued") if required else divergence.get("recorded")
    return (item["status"], divergence.get("kind"), (named or {}).get("name"),
            Path(source["path"]).name if source else None, source.get("line"))


def verdicts(folder: Path, module: str) -> dict[str, tuple[Any, ...]]:
    return {thread_id: verdict(item) for thread_id, item in replayed(folder, module).items()}


def comparable(item: dict[str, Any]) -> dict[str, Any]:
    """A result but for the history file's path and the time taken: the verdict, the message and the values it
    quotes, the source, the notes, the hazards."""
    return {key: value for key, value in item.items() if key not in ("history", "duration_s")}


def same_from_either_saver(imported: Imported, module: str) -> dict[str, dict[str, Any]]:
    """The results of every thread under ``module`` from both stores, checked ``comparable``-equal."""
    from_sqlite, from_postgres = replayed(imported.sqlite, module), replayed(imported.postgres, module)
    assert sorted(from_sqlite) == sorted(from_postgres) == ["desks", "question-C-3", "refund-A-17", "refund-B-90"]
    for thread_id in from_sqlite:
        assert comparable(from_sqlite[thread_id]) == comparable(from_postgres[thread_id]), (module, thread_id)
    return from_postgres


PASSED = ("passed", None, None, None, None)


# Every support desk of graph_apps (each row of the README's change table and the effect before the
# interrupt), against the support desk's three threads: parked, completed after approval, ended after classify.
SUPPORT_DESKS = [
    ("support", PASSED, PASSED),
    ("support_parked_renamed",
     ("diverged", "graph-node-missing", "human_review", "support_parked_renamed.py", 34), PASSED),
    ("support_parked_removed",
     ("diverged", "graph-node-missing", "human_review", "support_parked_removed.py", 34), PASSED),
    ("support_key_renamed", ("diverged", "graph-channel-missing", "refund", "support_key_renamed.py", 18),
     ("diverged", "graph-channel-missing", "refund", "support_key_renamed.py", 18)),
    ("support_key_required",
     ("diverged", "graph-channel-required", "priority", "support_key_required.py", 39), PASSED),
    ("support_question_changed",
     ("diverged", "interrupt-mismatch", "interrupt", "support_question_changed.py", 37), PASSED),
    ("support_later_edges", PASSED, PASSED),
    ("support_later_renamed", PASSED, PASSED),
    ("support_notify_first", ("diverged", "nondeterministic-call", None, "effects.py", 13), PASSED),
]


@pytest.mark.parametrize(("module", "parked", "completed"), SUPPORT_DESKS)
def test_the_changed_support_desks_get_the_same_verdicts_from_either_saver(
    imported: Imported, effects_log: Path, module: str, parked: tuple[Any, ...], completed: tuple[Any, ...]
) -> None:
    results = same_from_either_saver(imported, module)
    assert verdict(results["refund-A-17"]) == parked
    assert verdict(results["refund-B-90"]) == completed
    assert verdict(results["question-C-3"]) == PASSED
    assert effect_lines(effects_log) == []  # no node body ran while checking, from either store


# The research desk's variants against its thread parked at the sign-off inside the review subgraph.
@pytest.mark.parametrize(("module", "expected"), [
    ("research", PASSED),
    ("research_search_renamed", PASSED),  # the fanned-out node ran before the pause
    ("research_review_renamed", ("diverged", "graph-node-missing", "review", "research_review_renamed.py", 62)),
])
def test_the_changed_research_desks_get_the_same_verdicts_from_either_saver(
    imported: Imported, effects_log: Path, module: str, expected: tuple[Any, ...]
) -> None:
    results = same_from_either_saver(imported, module)
    assert verdict(results["desks"]) == expected
    assert effect_lines(effects_log) == []


def import_sync_and_async(postgres: PostgresServer, tmp_path: Path) -> None:
    """The support desk's parked thread recorded through SqliteSaver (imported with the command line into
    ``sync``), AsyncSqliteSaver and AsyncPostgresSaver (imported with ``ahistories_from_saver`` into
    ``async-sqlite`` and ``async-postgres``): the three histories are checked to be the same."""
    async def arecord(saver: object) -> None:
        graph = support.graph.copy(update={"checkpointer": saver})
        await graph.ainvoke(ticket("A-17", "It arrived broken, I want a refund"), thread("refund-A-17"))

    async def from_async_sqlite() -> tuple[list, list]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")) as saver:
            await arecord(saver)
            return await ahistories_from_saver(saver, tmp_path / "async-sqlite", workflows=[support.graph])

    async def from_async_postgres() -> tuple[list, list]:
        async with AsyncPostgresSaver.from_conn_string(fresh_database(postgres)) as saver:
            await saver.setup()
            await arecord(saver)
            return await ahistories_from_saver(saver, tmp_path / "async-postgres", workflows=[support.graph])

    with sqlite_saver(tmp_path / "sync.sqlite") as saver:
        support.graph.copy(update={"checkpointer": saver}).invoke(
            ticket("A-17", "It arrived broken, I want a refund"), thread("refund-A-17"))
    sync_import = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{tmp_path}/sync.sqlite",
                                           "--out", str(tmp_path / "sync"), "--no-redact", "--workflows", SUPPORT_SPEC])
    assert sync_import.exit_code == 0, sync_import.output
    expected = without_record_time_ids(json.loads((tmp_path / "sync" / "LangGraph-refund-A-17.json").read_text()))
    assert expected["graph"]["next"] == ["human_review"] and expected["status"] == "parked"
    for written, refused in (asyncio.run(from_async_sqlite()), asyncio.run(from_async_postgres())):
        assert refused == []
        assert [path.name for path, _ in written] == ["LangGraph-refund-A-17.json"]
        assert without_record_time_ids(json.loads(written[0][0].read_text())) == expected


def test_a_graph_thread_through_the_async_savers_imports_like_the_sync_one(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    import_sync_and_async(postgres, tmp_path)


def test_a_graph_thread_through_the_async_savers_gets_the_sync_ones_verdicts(
    postgres: PostgresServer, tmp_path: Path, effects_log: Path
) -> None:
    """That parked thread, imported through each async saver, checked against every support desk: the same
    results as the sync import's."""
    import_sync_and_async(postgres, tmp_path)
    recorded_effects = effect_lines(effects_log)
    for module, parked, _ in SUPPORT_DESKS:
        from_sync = replayed(tmp_path / "sync", module)
        assert verdict(from_sync["refund-A-17"]) == parked
        for folder in ("async-sqlite", "async-postgres"):
            from_async = replayed(tmp_path / folder, module)
            assert from_async.keys() == from_sync.keys() == {"refund-A-17"}
            assert comparable(from_async["refund-A-17"]) == comparable(from_sync["refund-A-17"]), (module, folder)
    assert effect_lines(effects_log) == recorded_effects  # no node body ran while checking


INCIDENTS_SPEC = "graph_apps.incidents:graph"


def record_incidents(saver: object) -> None:
    """``checkout`` left paging the on-call engineer; ``search`` acknowledged and resolved."""
    from graph_apps import incidents
    from langgraph.types import Command

    graph = incidents.graph.copy(update={"checkpointer": saver})
    assert "__interrupt__" in graph.invoke({"service": "checkout"}, thread("checkout"))
    assert "__interrupt__" in graph.invoke({"service": "search"}, thread("search"))
    done = graph.invoke(Command(resume="dana"), thread("search"))
    assert done["timeline"] == ["search: error rate above 5%", "search: deploy 41 went out 3 minutes earlier",
                                "resolved by dana"]


@pytest.fixture(scope="module")
def imported_incidents(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> Imported:
    pytest.importorskip("langgraph.channels.delta", reason="this LangGraph has no DeltaChannel (added in 1.2)")
    root = tmp_path_factory.mktemp("delta_parity")
    db, url = root / "checkpoints.sqlite", fresh_database(postgres)
    with sqlite_saver(db) as saver:
        record_incidents(saver)
    with postgres_saver(url) as saver:
        record_incidents(saver)
    for checkpointer, out in ((f"sqlite:///{db}", root / "sqlite"), (url, root / "postgres")):
        result = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", checkpointer, "--out", str(out),
                                          "--no-redact", "--workflows", INCIDENTS_SPEC])
        assert result.exit_code == 0, result.output
        assert ("note: state key(s) timeline: written, but no checkpoint stores the value (a DeltaChannel, which "
                "LangGraph rebuilds from earlier writes, or an untracked value); the history has no value for them"
                ) in result.output
    return Imported(root / "sqlite", root / "postgres", db, url)


def test_a_delta_channel_is_named_as_unstored_by_either_saver(imported_incidents: Imported) -> None:
    from_sqlite, from_postgres = documents(imported_incidents.sqlite), documents(imported_incidents.postgres)
    assert sorted(from_sqlite) == sorted(from_postgres) == ["LangGraph-checkout.json", "LangGraph-search.json"]
    for name in from_sqlite:
        assert (json.dumps(without_record_time_ids(from_sqlite[name]), sort_keys=True)
                == json.dumps(without_record_time_ids(from_postgres[name]), sort_keys=True)), name
    parked, done = from_postgres["LangGraph-checkout.json"], from_postgres["LangGraph-search.json"]
    # Neither saver stores the timeline in a checkpoint: the state has no value for it, and the history says so.
    assert parked["input"] == {"service": "checkout"}
    assert parked["graph"]["channels"] == {"service": "string"}
    assert parked["graph"]["unstored_channels"] == ["timeline"]
    assert parked["events"][-1]["interrupt_value"] == {
        "acknowledge": "checkout",
        "timeline": ["checkout: error rate above 5%", "checkout: deploy 41 went out 3 minutes earlier"],
    }
    assert done["graph"]["channels"] == {"service": "string", "acknowledged_by": "string"}
    assert done["graph"]["unstored_channels"] == ["timeline"]


def test_a_delta_channel_thread_is_checked_for_what_its_history_holds(imported_incidents: Imported) -> None:
    for folder in (imported_incidents.sqlite, imported_incidents.postgres):
        result = CliRunner().invoke(cli, ["replay", str(folder), "--workflows", INCIDENTS_SPEC, "--format", "json"])
        assert result.exit_code == 0, result.output
        results = {item["workflow"]["id"]: item for item in json.loads(result.stdout)["results"]}
        # Re-running page_on_call without the timeline would report a changed question that is not one.
        assert results["checkout"]["status"] == "passed"
        assert results["checkout"]["notes"][0] == (
            "state key(s) timeline hold values no checkpoint stores (a DeltaChannel, which LangGraph rebuilds from "
            "earlier writes on resume, or an untracked value): they were checked to be channels of the current graph; "
            "the parked node was not re-run and its interrupt was not compared"
        )
        assert results["search"]["status"] == "passed"
        renamed = verdicts(folder, "incidents_timeline_renamed")
        assert renamed == {
            "checkout": ("diverged", "graph-channel-missing", "timeline", "incidents_timeline_renamed.py", 25),
            "search": ("diverged", "graph-channel-missing", "timeline", "incidents_timeline_renamed.py", 25),
        }
    result = CliRunner().invoke(cli, ["replay", str(imported_incidents.postgres), "--workflows",
                                      "graph_apps.incidents_timeline_renamed:graph", "--format", "json"])
    messages = {item["workflow"]["id"]: item["divergence"]["message"] for item in json.loads(result.stdout)["results"]}
    assert messages["checkout"] == (
        "state key 'timeline' holds a recorded value (not stored in the checkpoints) but is not a channel of the "
        "current graph; the current graph's new state key 'events' looks like its new name (renamed?); on resume "
        "LangGraph drops the value silently and nodes reading the key get nothing"
    )


def test_what_langgraph_does_when_the_delta_channel_key_is_renamed(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.channels.delta", reason="this LangGraph has no DeltaChannel (added in 1.2)")
    from graph_apps import incidents_timeline_renamed
    from langgraph.types import Command

    with sqlite_saver(tmp_path / "resume.sqlite") as saver:
        record_incidents(saver)
        resumed = incidents_timeline_renamed.graph.copy(update={"checkpointer": saver})
        final = resumed.invoke(Command(resume="dana"), thread("checkout"))
    # No error: the two recorded timeline entries are dropped silently, the resolution starts a new list.
    assert final == {"service": "checkout", "events": ["resolved by dana"], "acknowledged_by": "dana"}
