"""The StateGraph scenario: the refund desk (graph API, ``langgraph_refund_graph.py``, written into the project
as ``refund_graph.py``) run for real with a SqliteSaver, five threads imported with ``replaytest import
langgraph`` — two refunds decided (completed), a question (completed after ``classify``) and two refunds
parked at the reviewer's interrupt in ``review``. The changes are the differential suite's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from impact_kit import ScenarioKit, clean_environment, commit_everything, run_replaytest

HERE = Path(__file__).resolve().parent
MODULE = "refund_graph"
V1 = (HERE / "langgraph_refund_graph.py").read_text(encoding="utf-8")
RECORDER = HERE / "impact_stategraph_recorder.py"
WORKFLOW_SPEC = f"{MODULE}:graph"
IN_FLIGHT = ("refund-4", "refund-5")
FINISHED = ("refund-1", "refund-2", "question-3")

PYPROJECT = f"""[project]
name = "refund-desk"
version = "1.0"

[tool.replaytest.replay]
paths = ["histories"]
workflows = ["{WORKFLOW_SPEC}"]
"""


def record(root: Path) -> ScenarioKit:
    """The graph's project in ``root``: v1 run for real, its threads imported, v1 and the histories committed."""
    root.mkdir(parents=True)
    (root / f"{MODULE}.py").write_text(V1, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / ".gitignore").write_text("*.sqlite\n*.log\n", encoding="utf-8")
    checkpoints = root / "checkpoints.sqlite"
    done = subprocess.run(
        [sys.executable, str(RECORDER), str(checkpoints), str(root / "recording-effects.log")],
        capture_output=True, text=True, timeout=180, cwd=root, env=clean_environment(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"refund-1": {"category": "refund", "receipt": "paid 40.00", "notice": "refund paid"}},
        {"refund-2": {"category": "refund", "receipt": None, "notice": "refund declined"}},
        {"question-3": {"category": "question", "receipt": None, "notice": None}},
    ]
    imported = run_replaytest(
        root, "import", "langgraph", "--checkpointer", f"sqlite:///{checkpoints}", "--out", "histories",
        "--workflows", WORKFLOW_SPEC,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    files = {json.loads(path.read_text())["workflow"]["id"]: path for path in sorted((root / "histories").glob("*.json"))}
    assert sorted(files) == sorted(IN_FLIGHT + FINISHED), files
    base = commit_everything(root, "Refund desk v1")
    return ScenarioKit(
        engine="langgraph", workflow_type="refund_desk", root=root, code_file=f"{MODULE}.py", base=base, v1=V1,
        changes={}, in_flight=IN_FLIGHT, finished=FINISHED, history_files=files,
    )
