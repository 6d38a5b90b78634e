"""The LangGraph resume rehearsal through ``replaytest impact`` on the dispute graph's real SqliteSaver: the two
threads parked at the reviewer's interrupt are rehearsed by LangGraph itself (no task body runs), and each is
then really resumed by LangGraph with the same code on a copy of the recorded database, with the answer the
rehearsal delivered (``"approve"``, what dispute-1 answered): the first task body LangGraph runs is the step
the impact report named."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from impact_kit import ScenarioKit, clean_environment, impact_json

# Resumes one parked thread for real: ``python -c RESUME CHECKPOINTS THREAD ANSWER`` in the kit's root.
RESUME = """
import json, sqlite3, sys
sys.path.insert(0, ".")
import dispute_graph
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
connection = sqlite3.connect(sys.argv[1], check_same_thread=False)
graph = dispute_graph.dispute_agent.copy(update={"checkpointer": SqliteSaver(connection)})
print(json.dumps(graph.invoke(Command(resume=json.loads(sys.argv[3])), {"configurable": {"thread_id": sys.argv[2]}})))
"""


def really_resumed(kit: ScenarioKit, tmp_path: Path, thread: str, answer: object) -> list[str]:
    """The task bodies LangGraph runs when it resumes ``thread`` with the code in the working tree."""
    copy = tmp_path / f"{thread}.sqlite"
    shutil.copyfile(kit.root / "checkpoints.sqlite", copy)
    effects = tmp_path / f"{thread}-effects.log"
    done = subprocess.run([sys.executable, "-c", RESUME, str(copy), thread, json.dumps(answer)], cwd=kit.root,
                          capture_output=True, text=True, timeout=120,
                          env=clean_environment({"DISPUTE_GRAPH_EFFECTS": str(effects)}))
    assert done.returncode == 0, done.stdout + done.stderr
    return effects.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(("change", "path", "step", "first_body"), [
    (None, "further", "issue_credit", "credit {invoice} {amount}"),
    ("audit_after_review", "new", "record_audit", "audit {invoice} approve"),
])
def test_parked_threads_resume_into_the_step_langgraph_runs(
    langgraph_kit: ScenarioKit, tmp_path: Path, change: str | None, path: str, step: str, first_body: str,
) -> None:
    langgraph_kit.switch(change)
    effects = langgraph_kit.root / "impact-effects.log"
    _, _, workflow = impact_json(langgraph_kit, environment={"DISPUTE_GRAPH_EFFECTS": str(effects)})
    assert not effects.exists(), effects.read_text()  # the rehearsal ran no task body
    [resume] = workflow["resume"]
    assert (resume["path"], sorted(resume["runs"])) == (path, sorted(langgraph_kit.in_flight))
    assert f"the engine issues task {step!r} next" in resume["text"]  # LangGraph's word for the call
    for thread, invoice, amount in (("dispute-4", "INV-104", 300.0), ("dispute-5", "INV-105", 1500.0)):
        ran = really_resumed(langgraph_kit, tmp_path, thread, "approve")
        assert ran[0] == first_body.format(invoice=invoice, amount=amount)
