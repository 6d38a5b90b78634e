"""``replaytest check`` on a LangGraph project: the incremental replay cache skips a green history only
while the entrypoint's own code is unchanged (an ``@entrypoint`` is a LangGraph object, defined in
LangGraph's module; the code to watch is the module it was imported from) and the installed LangGraph
release is the one it replayed under."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import import_histories, record_order_runs

AGENT = '''
from langgraph.func import entrypoint, task
from langgraph.types import interrupt


@task
def fetch_price(item: str) -> float:
    return {"lamp": 40.0, "desk": 250.0}.get(item, 10.0)


@task
def draft(part: str, item: str) -> str:
    return f"{part} about the {item}"


@task
def notify(summary: str) -> dict:
    return {"sent": True, "summary": summary}


@entrypoint()
def order_agent(request: dict) -> dict:
    price = fetch_price(request["item"]).result()
    intro = draft("intro", request["item"]).result()
    body = draft("body", request["item"]).result()
    decision = interrupt({"item": request["item"], "price": price})
    receipt = notify(f"{intro} / {body}").result() if decision["approved"] else None
    return {"price": price, "intro": intro, "body": body, "receipt": receipt}
'''
PYPROJECT = """
[tool.replaytest.replay]
paths = ["histories"]
workflows = ["cacheproj.agent:order_agent"]
"""


def check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "check", "--quiet"], cwd=project,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_check_replays_again_once_the_entrypoint_changed(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "project"
    (project / "cacheproj").mkdir(parents=True)
    (project / "cacheproj/__init__.py").write_text("")
    (project / "cacheproj/agent.py").write_text(AGENT)
    (project / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.syspath_prepend(str(project))
    agent = importlib.import_module("cacheproj.agent")
    monkeypatch.setattr("lg_apps.agent.order_agent", agent.order_agent)  # record the project's own entrypoint
    record_order_runs(tmp_path / "checkpoints.sqlite")
    code, output = import_histories(tmp_path / "checkpoints.sqlite", project / "histories", "--workflows",
                                    "cacheproj.agent:order_agent")
    assert code == 0, output

    first, second = check(project), check(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0 and "skipped 2 histories" in second.stdout, second.stdout
    # Entries remembered under another langgraph release do not hold under this one.
    passed = project / ".replaytest_cache" / "replay" / "passed.json"
    entries = json.loads(passed.read_text())
    assert {entry["engine"] for entry in entries.values()} == {"langgraph"}
    for entry in entries.values():
        assert set(entry["libraries"]) == {"langgraph", "langgraph-checkpoint"}
        entry["libraries"]["langgraph"] = "0.0.1"
    passed.write_text(json.dumps(entries))
    other_release = check(project)
    assert other_release.returncode == 0 and "skipped" not in other_release.stdout, other_release.stdout
    assert "replayed 2 histories: 2 passed" in other_release.stdout, other_release.stdout
    (project / "cacheproj/agent.py").write_text(AGENT.replace('intro = draft("intro"', 'intro = notify("intro"'))
    third = check(project)
    assert third.returncode == 1, third.stdout + third.stderr
    assert "the code issued step 'notify' where the history recorded step 'draft'" in third.stdout
