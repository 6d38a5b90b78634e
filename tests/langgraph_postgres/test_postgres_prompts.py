"""Prompt versions of LangGraph threads recorded on a real PostgresSaver: the prompt agent's threads (see
``lg_apps/prompt_runs.py``) imported from Postgres carry the manifest the SQLite ones do, and replay the
same verdicts against edited prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from postgres_server import PostgresServer
from saver_kit import fresh_database, postgres_saver

from lg_apps.prompt_runs import REPLY_TEXT, TRIAGE_TEXT, record_support_threads, replay, sha  # isort: skip
from replaytest.cli import cli
from replaytest.plugins.langgraph.prompts import with_prompts


def test_postgres_threads_carry_the_manifest_and_fail_the_parked_one_on_a_prompt_not_reached(
    tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = fresh_database(postgres)
    monkeypatch.setenv("PROMPT_AGENT_EFFECTS", str(tmp_path / "effects.log"))
    with postgres_saver(url) as saver:
        record_support_threads(saver)
    histories = tmp_path / "histories"
    result = CliRunner().invoke(cli, [
        "import", "langgraph", "--checkpointer", url, "--out", str(histories), "--workflows",
        "lg_apps.prompt_agent:support_agent",
    ])
    assert result.exit_code == 0, result.output
    expected = {"triage": sha(TRIAGE_TEXT), "reply": sha(REPLY_TEXT)}
    for thread_id in ("done", "parked"):
        assert json.loads((histories / f"support_agent-{thread_id}.json").read_text())["prompt_manifest"] == expected
    assert "prompt_manifest" not in json.loads((histories / "support_agent-plain.json").read_text())

    new_text = "Write a short reply to the customer, given: {summary}"
    results = replay(tmp_path / "changed", histories, monkeypatch, (REPLY_TEXT, new_text))
    assert {k: r["status"] for k, r in results.items()} == {"done": "passed", "parked": "diverged", "plain": "passed"}
    assert results["parked"]["divergence"]["message"].startswith(
        f"the parked thread has not reached these prompts yet: will use reply {sha(new_text)[:19]}"
    )
    [warning] = results["done"]["warnings"]
    assert warning["message"].startswith("task 'write_reply' now uses prompt version")  # compared per call


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_postgres_threads_carry_what_a_subgraph_recorded(tmp_path: Path, postgres: PostgresServer, kind: str) -> None:
    """The team desk (a node running a subgraph whose nodes render the prompts) recorded on PostgresSaver and
    AsyncPostgresSaver: the import reads the subgraph's records from its own checkpoints, as on SQLite."""
    import asyncio
    import sys

    if kind == "async" and sys.version_info < (3, 11):
        pytest.skip("LangGraph's async graphs find their config in asyncio tasks on 3.11+")
    graph_tests = Path(__file__).resolve().parents[1] / "langgraph_graph"
    sys.path.insert(0, str(graph_tests))
    try:
        from graph_apps import team_desk
        from test_graph_subgraph_prompts import REPLY_V2, TICKET, record, team_prompts, thread
    finally:
        sys.path.remove(str(graph_tests))
    url = fresh_database(postgres)
    histories = tmp_path / "histories"
    if kind == "sync":
        with postgres_saver(url) as saver:
            record(saver)
        result = CliRunner().invoke(cli, [
            "import", "langgraph", "--checkpointer", url, "--out", str(histories), "--workflows", "graph_apps.team_desk:graph",
        ])
        assert result.exit_code == 0, result.output
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from langgraph.types import Command

        from replaytest.plugins.langgraph.async_savers import ahistories_from_saver

        async def run() -> tuple[list, list]:
            async with AsyncPostgresSaver.from_conn_string(url) as saver:
                await saver.setup()
                graph = team_desk.graph.copy(update={"checkpointer": saver})
                for thread_id in ("parked", "deployed"):
                    assert "__interrupt__" in await graph.ainvoke(TICKET, with_prompts(thread(thread_id), graph))
                with pytest.MonkeyPatch.context() as deploy:
                    deploy.setattr(team_desk, "REPLY", REPLY_V2)
                    await graph.ainvoke(Command(resume="approve"), thread("deployed"))
                return await ahistories_from_saver(saver, histories, workflows=[team_desk.graph])

        written, refused = asyncio.run(run())
        assert refused == [] and len(written) == 2
    triage = team_desk.TRIAGE.full_version
    assert team_prompts(histories, "deployed") == [("triage", "triage", triage), ("reply", "write", REPLY_V2.full_version)]
    assert team_prompts(histories, "parked") == [("triage", "triage", triage)]
