"""The LangGraph scenario: the dispute graph (functional API, ``langgraph_dispute_graph.py``, written
into the project as ``dispute_graph.py``) run for real with a SqliteSaver, five threads imported with
``replaytest import langgraph`` — three resumed with the reviewer's decision (completed) and two parked
at the interrupt — and two changed versions of its code:

- ``audit_after_review``: an audit task inserted right after the interrupt;
- ``lookup_first``: the invoice lookup moved before the classification (both before the interrupt).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from impact_kit import ScenarioKit, clean_environment, commit_everything, edit_once, run_replaytest

HERE = Path(__file__).resolve().parent
MODULE = "dispute_graph"
V1 = (HERE / "langgraph_dispute_graph.py").read_text(encoding="utf-8")
RECORDER = HERE / "impact_langgraph_recorder.py"
WORKFLOW_SPEC = f"{MODULE}:dispute_agent"

CLASSIFY = '    category = classify_dispute(dispute["text"]).result()\n'
LOOKUP = '    invoice = lookup_invoice(dispute["invoice_id"]).result()\n'
INTERRUPT = '    decision = interrupt({"question": "approve the credit?", "invoice_id": dispute["invoice_id"], "amount": dispute["amount"]})\n'
AUDIT = '    record_audit(dispute["invoice_id"], decision).result()\n'


CHANGES = {
    "audit_after_review": edit_once(V1, INTERRUPT, INTERRUPT + AUDIT),
    "lookup_first": edit_once(V1, CLASSIFY + LOOKUP, LOOKUP + CLASSIFY),
}
IN_FLIGHT = ("dispute-4", "dispute-5")
FINISHED = ("dispute-1", "dispute-2", "dispute-3")

PYPROJECT = f"""[project]
name = "dispute-graph"
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
        {"dispute-1": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-101-120.00"}},
        {"dispute-2": {"category": "billing-error", "decision": "approve", "credit": "credit-INV-102-900.00"}},
        {"dispute-3": {"category": "service-complaint", "decision": "reject", "credit": None}},
    ]
    imported = run_replaytest(
        root, "import", "langgraph", "--checkpointer", f"sqlite:///{checkpoints}", "--out", "histories",
        "--workflows", WORKFLOW_SPEC,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    files = {json.loads(path.read_text())["workflow"]["id"]: path for path in sorted((root / "histories").glob("*.json"))}
    assert sorted(files) == sorted(IN_FLIGHT + FINISHED), files
    base = commit_everything(root, "Dispute graph v1")
    return ScenarioKit(
        engine="langgraph", workflow_type="dispute_agent", root=root, code_file=f"{MODULE}.py", base=base, v1=V1,
        changes=CHANGES, in_flight=IN_FLIGHT, finished=FINISHED, history_files=files,
    )
