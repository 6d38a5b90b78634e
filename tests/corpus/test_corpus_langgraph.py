"""``replaytest corpus`` on LangGraph histories: real runs of a functional-API returns agent recorded in a
real SqliteSaver and imported with ``replaytest import langgraph``.

| thread | order | command shape | run |
|---|---|---|---|
| small-1, small-2, small-3 | under the approval limit | look up, refund, reply | completed |
| large-approved | over the limit, approved | look up, interrupt, refund, reply | completed |
| large-declined | over the limit, declined | look up, interrupt, reply | completed |
| large-waiting | over the limit, not answered yet | look up, interrupt | parked |

Worked by hand: the parked run is kept (in flight), and one run of each completed shape — for the small
orders the one with the smallest file digest: four of six.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import lg_returns_agent
import pytest
from click.testing import CliRunner
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from replaytest.cli import cli

HERE = Path(__file__).resolve().parent


def _thread(thread_id: str) -> dict[str, dict[str, str]]:
    return {"configurable": {"thread_id": thread_id}}


@pytest.mark.slow
def test_keeps_the_waiting_thread_and_one_thread_per_completed_shape(tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = lg_returns_agent.returns_agent.copy(update={"checkpointer": SqliteSaver(conn)})
        for number in (1, 2, 3):
            graph.invoke({"order": f"S-{number}"}, _thread(f"small-{number}"))
        for name in ("approved", "declined", "waiting"):
            assert "__interrupt__" in graph.invoke({"order": f"L-{name}"}, _thread(f"large-{name}"))
        graph.invoke(Command(resume={"approved": True}), _thread("large-approved"))
        graph.invoke(Command(resume={"approved": False}), _thread("large-declined"))
    finally:
        conn.close()
    imported = CliRunner().invoke(cli, ["import", "langgraph", "--checkpointer", f"sqlite:///{db}", "--out",
                                        str(tmp_path / "histories"), "--workflows", "lg_returns_agent:returns_agent"])
    assert imported.exit_code == 0, imported.output
    shutil.copy(HERE / "lg_returns_agent.py", tmp_path / "lg_returns_agent.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["lg_returns_agent:returns_agent"]\n')
    run = subprocess.run([sys.executable, "-m", "replaytest", "corpus", "-q", "--output-format", "json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads(run.stdout)
    (workflow,) = document["workflows"]
    files = {path.name: path for path in (tmp_path / "histories").glob("*.json")}
    assert len(files) == 6, sorted(files)

    def named(thread: str) -> str:
        (name,) = [name for name in files if thread in name]
        return name

    small = min((named(f"small-{n}") for n in (1, 2, 3)), key=lambda n: hashlib.sha256(files[n].read_bytes()).hexdigest())
    kept = {Path(item["history"]).name: item["reasons"][0]["kind"] for item in workflow["kept_histories"]}
    assert kept == {named("large-waiting"): "in-flight", named("large-approved"): "shape",
                    named("large-declined"): "shape", small: "shape"}
    assert sorted(shape["runs"] for shape in workflow["shapes"]) == [1, 1, 1, 3]
    # The entrypoint's seven statements and both ways of its two tests, all reached by some thread.
    assert workflow["coverage_before"] == workflow["coverage_after"] == {"shapes": 4, "lines": 7, "branches": 4}
    assert workflow["coverage_equal"] is True
