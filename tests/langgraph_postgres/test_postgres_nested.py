"""Graphs an entrypoint invokes from its own code, recorded by a real PostgresSaver and read with SQL: the same
nested runs as from SQLite (Postgres keeps no order of writes, so each nested run's block stands after the
parent's task calls; replay matches nested runs by number, so the verdicts are the same)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from langgraph.types import Command
from postgres_server import PostgresServer
from saver_kit import fresh_database, postgres_saver, thread

from replaytest.cli import cli

SPECS = ("--workflows", "lg_apps.newsroom:newsroom", "--workflows", "lg_apps.newsroom:editor")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_nested_runs_read_from_postgres_replay_as_from_sqlite(postgres: PostgresServer, tmp_path: Path) -> None:
    from lg_apps import newsroom

    url = fresh_database(postgres)
    with postgres_saver(url) as saver:
        graph = newsroom.newsroom.copy(update={"checkpointer": saver})
        graph.invoke({"topic": "owls"}, thread("parked"))
        graph.invoke({"topic": "owls"}, thread("done"))
        graph.invoke(Command(resume="print"), thread("done"))
    code, output = run("import", "langgraph", "--checkpointer", url, "--out", str(tmp_path), *SPECS)
    assert code == 0, output
    parked = json.loads((tmp_path / "newsroom-parked.json").read_text())
    assert [(e["kind"], e["name"], e.get("nested")) for e in parked["events"]] == [
        ("step", "write_part", None), ("step", "write_part", None),
        ("child-workflow", "editor", 0), ("step", "tighten", 0), ("step", "fact_check", 0),
        ("signal", "interrupt", None),
    ]
    code, output = run("replay", str(tmp_path), "--workflows", "lg_apps.newsroom:newsroom", "--format", "json")
    assert code == 0, output
    code, output = run("replay", str(tmp_path), "--workflows", "lg_apps.newsroom_swapped:newsroom", "--format", "json")
    assert code == 1, output
    kinds = {r["workflow"]["id"]: r["divergence"]["kind"] for r in json.loads(output)["results"]}
    assert kinds == {"parked": "args-mismatch", "done": "args-mismatch"}
