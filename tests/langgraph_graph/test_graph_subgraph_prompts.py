"""Prompt versions used inside a subgraph, recorded on the real engine: the team desk's node ``team`` runs a
subgraph (``triage`` renders TRIAGE, ``review`` parks at an interrupt, ``write`` renders REPLY), whose nodes
record into the subgraph's own checkpoints. Threads (SqliteSaver):

* ``parked``: parked in the subgraph's ``review`` under v1 (``triage`` done, ``write`` not reached);
* ``done``: resumed under v1 to the end (its ``write`` used v1);
* ``deployed``: parked under v1, resumed on the real engine after the deploy (REPLY on gpt-4.1): its
  ``write`` used v2.

Replayed against copies of the desk at v1, at v2 and with TRIAGE edited: the recorded versions are the ones
the subgraph's nodes used, a parked thread's next subgraph node fails on a changed prompt, a finished
thread warns, and a changed prompt a finished subgraph node used follows ``--prompts``."""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from graph_apps import team_desk
from graph_kit import import_histories, run_cli, thread
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.plugins.langgraph.prompts import with_prompts
from replaytest.prompts import Prompt

APPS = Path(__file__).resolve().parent / "graph_apps"
REPLY_TEXT = "Write a friendly reply about {ticket}"
REPLY_V1 = Prompt("reply", REPLY_TEXT, model="gpt-4o-mini")
REPLY_V2 = Prompt("reply", REPLY_TEXT, model="gpt-4.1")
V1_REPLY_LINE = 'REPLY = Prompt("reply", "Write a friendly reply about {ticket}", model="gpt-4o-mini")'
V2_REPLY_LINE = V1_REPLY_LINE.replace("gpt-4o-mini", "gpt-4.1")
TRIAGE_LINE = 'TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}"'
TRIAGE_EDITED = 'TRIAGE = Prompt("triage", "Classify this ticket: {ticket}"'
TICKET = {"ticket": "my invoice was charged twice"}


def record(saver: Any) -> None:
    graph = team_desk.graph.copy(update={"checkpointer": saver})
    for thread_id in ("parked", "done", "deployed"):
        assert "__interrupt__" in graph.invoke(TICKET, with_prompts(thread(thread_id), graph))
    assert graph.invoke(Command(resume="approve"), thread("done"))["reply"].startswith("Write a friendly reply")
    with pytest.MonkeyPatch.context() as deploy:  # the deploy: REPLY moves to gpt-4.1
        deploy.setattr(team_desk, "REPLY", REPLY_V2)
        assert graph.invoke(Command(resume="approve"), thread("deployed"))["verdict"] == "approve"


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("graph-subgraph-prompts")
    conn = sqlite3.connect(root / "threads.sqlite", check_same_thread=False)
    try:
        record(SqliteSaver(conn))
    finally:
        conn.close()
    code, output = import_histories(root / "threads.sqlite", root / "histories", "--workflows", "graph_apps.team_desk:graph")
    assert code == 0, output
    return root / "histories"


def team_prompts(histories: Path, thread_id: str) -> list[tuple[str, str, str]]:
    document = json.loads((histories / f"team_desk-{thread_id}.json").read_text())
    return [(used["name"], used["subgraph_node"], used["version"])
            for event in document["events"] if event.get("name") == "team" for used in event.get("prompts", [])]


_copies = itertools.count()


def replay(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str],
           args: tuple[str, ...] = ()) -> dict[str, Any]:
    package = f"team_desk_copy_{next(_copies)}"
    target = tmp_path / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text("")
    shutil.copy(APPS / "team_desk.py", target / "team_desk.py")
    texts = (APPS / "team_desk_texts.py").read_text()
    for old, new in edits:
        assert texts.count(old) == 1
        texts = texts.replace(old, new)
    (target / "team_desk_texts.py").write_text(texts)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, stdout, stderr = run_cli("replay", str(histories), "--workflows", f"{package}.team_desk:graph", "--format", "json", *args)
    sys.modules.pop(f"{package}.team_desk", None)
    return {Path(r["history"]).stem.removeprefix("team_desk-"): r for r in json.loads(stdout)["results"]}


def test_the_subgraph_nodes_records_are_read_onto_the_node_that_ran_it(histories: Path) -> None:
    triage = team_desk.TRIAGE.full_version
    assert team_prompts(histories, "parked") == [("triage", "triage", triage)]  # review parked, write not reached
    assert team_prompts(histories, "done") == [("triage", "triage", triage), ("reply", "write", REPLY_V1.full_version)]
    # Resumed after the deploy: the subgraph's write really used v2; triage kept what it did under v1.
    assert team_prompts(histories, "deployed") == [("triage", "triage", triage), ("reply", "write", REPLY_V2.full_version)]


def test_against_the_deployed_code(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = replay(tmp_path, histories, monkeypatch, (V1_REPLY_LINE, V2_REPLY_LINE))
    deployed = results["deployed"]
    assert (deployed["status"], deployed["warnings"], deployed["prompt_changes"]) == ("passed", [], [])
    # The parked thread's next subgraph node renders the changed prompt: it fails.
    parked = results["parked"]
    assert parked["status"] == "diverged" and parked["divergence"]["kind"] == "prompt-drift"
    message = parked["divergence"]["message"]
    assert message.startswith("the parked thread resumes at node 'team' (a subgraph: the prompts of all its nodes), "
                              "which uses prompt reply:")
    assert "triage" not in message  # triage finished inside the subgraph: not pending
    assert message.endswith("(model gpt-4o-mini → gpt-4.1) (fails by prompts-pending)"), message
    # The finished thread used v1 in its subgraph's write: a warning naming that node and the model switch.
    [warning] = results["done"]["warnings"]
    assert warning["message"].startswith("node 'team' used prompt reply")
    assert "(in its subgraph's node 'write', recorded when it ran)" in warning["message"]
    assert "model gpt-4o-mini → gpt-4.1" in warning["message"]
    assert not [n for n in results["done"]["notes"] if "taken at the start manifest's version" in n]


def test_a_rollback_is_drift_at_the_subgraph_node_that_used_v2(tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = replay(tmp_path, histories, monkeypatch)  # the code back at v1
    assert results["parked"]["status"] == "passed" and results["done"]["warnings"] == []
    [warning] = results["deployed"]["warnings"]
    assert "(in its subgraph's node 'write', recorded when it ran)" in warning["message"]
    assert warning["message"].endswith("(model gpt-4.1 → gpt-4o-mini); the completed thread keeps what that subgraph node wrote")


@pytest.mark.parametrize("policy", ["fail", "warn"])
def test_a_prompt_a_finished_subgraph_node_of_a_parked_thread_used_follows_the_prompts_policy(
    tmp_path: Path, histories: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    parked = replay(tmp_path, histories, monkeypatch, (TRIAGE_LINE, TRIAGE_EDITED), args=("--prompts", policy))["parked"]
    found = [parked["divergence"]] if policy == "fail" else parked["warnings"]
    assert parked["status"] == ("diverged" if policy == "fail" else "passed")
    [drift] = found
    assert drift["message"].startswith("node 'team' used prompt triage")
    assert "(in its subgraph's node 'triage', recorded when it ran)" in drift["message"]
    assert drift["message"].endswith("the parked thread keeps what that subgraph node wrote and resumes at node 'team'")


def test_a_saver_read_through_its_api_gives_the_same_records(tmp_path: Path) -> None:
    from replaytest.plugins.langgraph.importer import histories_from_saver

    saver = InMemorySaver()
    record(saver)
    written, refused = histories_from_saver(saver, tmp_path / "histories", workflows=[team_desk.graph])
    assert refused == [] and len(written) == 3
    assert team_prompts(tmp_path / "histories", "deployed") == [
        ("triage", "triage", team_desk.TRIAGE.full_version), ("reply", "write", REPLY_V2.full_version),
    ]
    assert team_prompts(tmp_path / "histories", "parked") == [("triage", "triage", team_desk.TRIAGE.full_version)]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="LangGraph's async graphs find their config in asyncio tasks on 3.11+")
def test_an_async_saver_gives_the_same_records(tmp_path: Path) -> None:
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from replaytest.plugins.langgraph.async_savers import ahistories_from_saver

    async def run() -> tuple[list, list]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")) as saver:
            graph = team_desk.graph.copy(update={"checkpointer": saver})
            for thread_id in ("parked", "deployed"):
                assert "__interrupt__" in await graph.ainvoke(TICKET, with_prompts(thread(thread_id), graph))
            with pytest.MonkeyPatch.context() as deploy:
                deploy.setattr(team_desk, "REPLY", REPLY_V2)
                await graph.ainvoke(Command(resume="approve"), thread("deployed"))
            return await ahistories_from_saver(saver, tmp_path / "histories", workflows=[team_desk.graph])

    written, refused = asyncio.run(run())
    assert refused == [] and len(written) == 2
    triage = team_desk.TRIAGE.full_version
    assert team_prompts(tmp_path / "histories", "deployed") == [("triage", "triage", triage), ("reply", "write", REPLY_V2.full_version)]
    assert team_prompts(tmp_path / "histories", "parked") == [("triage", "triage", triage)]
