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
        f"the parked run has not reached these prompts yet: will use reply {sha(new_text)[:19]}"
    )
    [warning] = results["done"]["warnings"]
    assert warning["message"].startswith("task 'write_reply' now uses prompt version")  # compared per call


def test_postgres_threads_carry_what_a_subgraph_recorded(tmp_path: Path, postgres: PostgresServer) -> None:
    """The team desk (a node running a subgraph whose nodes render the prompts) recorded on PostgresSaver:
    the import reads the subgraph's records from its own checkpoints, as on SQLite."""
    import sys

    graph_tests = Path(__file__).resolve().parents[1] / "langgraph_graph"
    sys.path.insert(0, str(graph_tests))
    try:
        from graph_apps import team_desk
        from test_graph_subgraph_prompts import REPLY_V2, record, team_prompts
    finally:
        sys.path.remove(str(graph_tests))
    url = fresh_database(postgres)
    with postgres_saver(url) as saver:
        record(saver)
    histories = tmp_path / "histories"
    result = CliRunner().invoke(cli, [
        "import", "langgraph", "--checkpointer", url, "--out", str(histories), "--workflows", "graph_apps.team_desk:graph",
    ])
    assert result.exit_code == 0, result.output
    triage = team_desk.TRIAGE.full_version
    assert team_prompts(histories, "deployed") == [("triage", "triage", triage), ("reply", "write", REPLY_V2.full_version)]
    assert team_prompts(histories, "parked") == [("triage", "triage", triage)]
