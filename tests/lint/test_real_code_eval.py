"""The real-code measurement script (benchmarks/real_code/real_code_eval.py) against the linter it measures.

Its table of rule categories must be the linter's own (``replaytest rules``): an expected hazard is
matched to a finding by category, so a rule missing from the table cannot be recorded for recall. The
end-to-end case runs the script, as a measurement does, on a small LangGraph project whose graph node
posts a request before ``interrupt()`` (RT205, category ``rerun-on-resume``), with one human verdict and
one expected hazard, and reads the precision and recall it prints.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from lintkit import line_of, run_replaytest, write_files

ROOT = Path(__file__).resolve().parents[2]
EVAL_SCRIPT = ROOT / "benchmarks" / "real_code" / "real_code_eval.py"


def eval_rule_categories() -> dict[str, str]:
    """RULE_CATEGORY as written in the script (read from its source, so no import side effects)."""
    tree = ast.parse(EVAL_SCRIPT.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "RULE_CATEGORY" for t in node.targets):
            table = ast.literal_eval(node.value)
            assert isinstance(table, dict)
            return {str(code): str(category) for code, category in table.items()}
    raise AssertionError(f"{EVAL_SCRIPT} defines no RULE_CATEGORY")


def test_the_scripts_categories_are_the_linters_rule_catalogue(tmp_path: Path) -> None:
    run = run_replaytest("rules", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    catalogue = {}
    for line in run.stdout.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("RT"):
            catalogue[fields[0]] = fields[1]
    assert "RT205" in catalogue, run.stdout
    assert eval_rule_categories() == catalogue


GRAPH = textwrap.dedent('''\
    from typing import TypedDict

    import requests
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt


    class State(TypedDict):
        ticket: str
        answer: str


    def review(state: State) -> dict:
        requests.post("https://tickets.example/notify", json={"ticket": state["ticket"]})  # posted again on resume
        answer = interrupt({"ticket": state["ticket"]})
        return {"answer": answer}


    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile()
''')


def test_an_expected_rerun_on_resume_hazard_is_recorded_and_counted_found(tmp_path: Path) -> None:
    repo = write_files(tmp_path / "root" / "support-graph", {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/graph.py": GRAPH,
    })
    line = line_of(GRAPH, "# posted again on resume")
    repos = tmp_path / "repos.toml"
    repos.write_text(textwrap.dedent('''\
        [[repo]]
        name = "support-graph"
        source = "example/support-graph"
        commit = "0000000000000000000000000000000000000000"
        set = "holdout-test"
    '''), encoding="utf-8")
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(json.dumps({
        "verdicts": [{
            "repo": "support-graph", "path": "app/graph.py", "line": line, "rule": "RT205", "verdict": "tp",
            "planted": False, "reason": "the request is posted again when the paused thread resumes",
        }],
        "expected": [{
            "repo": "support-graph", "path": "app/graph.py", "line": line, "category": "rerun-on-resume",
            "reason": "review posts the ticket before interrupt()", "source": "all",
        }],
    }), encoding="utf-8")

    proc = subprocess.run(
        [sys.executable, str(EVAL_SCRIPT), "--root", str(tmp_path / "root"), "--repos", str(repos),
         "--verdicts", str(verdicts), "--replaytest", f"{sys.executable} -m replaytest",
         "--json-out", str(tmp_path / "out.json")],
        cwd=repo, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert result["overall"] == {"findings": 1, "tp": 1, "fp": 0, "unjudged": 0}
    assert result["per_rule"] == {"RT205": {"findings": 1, "tp": 1, "fp": 0, "unjudged": 0}}
    assert result["recall"]["found"] == 1 and result["recall"]["expected"] == 1, proc.stdout
    assert result["sets"]["holdout-test"]["recall"] == {"found": 1, "expected": 1}
    assert "overall: 1/1 = 100.0%" in proc.stdout
