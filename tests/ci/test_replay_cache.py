"""Incremental replay in ``replaytest check``: a history that replayed green is skipped while neither it
nor its workflow's code closure (its module and the project modules that module imports) changed;
``--no-cache`` replays everything. Two workflows, each with histories recorded by the real journal."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

REPO = Path(__file__).resolve().parents[2]
BILLING = '''\
from typing import Any

from pricing import total_for
from replaytest.journal import workflow


def load_items(customer: str) -> list[float]:
    return [19.5, 4.0]


@workflow(name="billing", version="1")
def billing(ctx: Any, customer: str) -> float:
    items = ctx.step("load items", load_items, customer)
    return total_for(items)
'''
PRICING = "def total_for(items: list[float]) -> float:\n    return round(sum(items) * 1.2, 2)\n"


def _load(path: Path) -> object:
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(REPO / "fixtures" / "journal_app" / "agent.py", tmp_path / "agent.py")
    shutil.copytree(REPO / "fixtures" / "histories", tmp_path / "histories")
    (tmp_path / "billing.py").write_text(BILLING)
    (tmp_path / "pricing.py").write_text(PRICING)
    module = _load(tmp_path / "billing.py")
    with Journal(tmp_path / "journal.sqlite3") as journal:
        worker = Worker(journal, [module.billing])  # type: ignore[attr-defined]
        journal.start(module.billing, "bob@example.com", run_id="run-bill", workflow_id="bill-1")  # type: ignore[attr-defined]
        worker.run_until_idle()
        save_history(journal.export("run-bill"), tmp_path / "histories" / "billing-bob.json")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["agent:support_agent", "billing:billing"]\n'
    )
    return tmp_path


def _check(project: Path, *args: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--format", "json", *args, "agent.py"],
        cwd=project, capture_output=True, text=True, timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    replay = json.loads(run.stdout)["replay"]
    return {"replayed": sorted(Path(r["history"]).name for r in replay["results"]), "skipped": replay["skipped"]}


@pytest.mark.slow
def test_unchanged_run_replays_nothing_and_a_changed_module_only_its_workflows_histories(project: Path) -> None:
    everything = sorted(p.name for p in (project / "histories").iterdir())
    assert _check(project) == {"replayed": everything, "skipped": 0}
    assert _check(project) == {"replayed": [], "skipped": 4}

    # A helper module billing imports is part of billing's closure, not of the support agent's.
    (project / "pricing.py").write_text(PRICING + "\n# reviewed\n")
    assert _check(project) == {"replayed": ["billing-bob.json"], "skipped": 3}
    assert _check(project) == {"replayed": [], "skipped": 4}

    agent = project / "agent.py"
    agent.write_text(agent.read_text().replace("Happy to help.", "Happy to help!"))
    assert _check(project) == {"replayed": [n for n in everything if n.startswith("support_agent")], "skipped": 1}

    assert _check(project, "--no-cache") == {"replayed": everything, "skipped": 0}


def test_text_report_says_how_many_it_skipped(project: Path) -> None:
    _check(project)
    run = subprocess.run([sys.executable, "-m", "replaytest", "check", "agent.py"], cwd=project,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "replayed 0 histories" in run.stdout
    assert "skipped 4 histories that replayed green before" in run.stdout


def test_a_diverged_history_is_never_remembered(project: Path) -> None:
    shutil.copy(REPO / "fixtures" / "ci_histories" / "support_agent-previous-release.json", project / "histories")
    for _ in range(2):
        run = subprocess.run([sys.executable, "-m", "replaytest", "check", "--format", "json", "agent.py"],
                             cwd=project, capture_output=True, text=True, timeout=180)
        assert run.returncode == 1
        replayed = [r["history"] for r in json.loads(run.stdout)["replay"]["results"]]
        assert "histories/support_agent-previous-release.json" in replayed


@pytest.mark.parametrize(
    "stricter",
    [{"prompts_running": "fail"}, {"prompts_completed": "fail"}, {"prompts_pending": "fail"}, {"strict_args": True}],
    ids=lambda changed: next(iter(changed)),
)
def test_every_verdict_option_keys_the_entries(tmp_path: Path, stricter: dict) -> None:
    """A history remembered green under a laxer policy must replay again under a stricter one, for each
    option that can turn a pass into a failure; ``details`` changes only the report and shares entries."""
    from replaytest.replay.adapter import ReplayOptions, WorkflowSet
    from replaytest.replay.cache import ReplayCache

    history = tmp_path / "run.json"
    history.write_text("{}", encoding="utf-8")
    lax = ReplayOptions(prompts_running="ignore", prompts_completed="ignore", prompts_pending="ignore", strict_args=False)

    def key(options: ReplayOptions) -> str | None:
        return ReplayCache(tmp_path / "cache", tmp_path, WorkflowSet(), options)._key(history)

    strict = ReplayOptions(**{**{"prompts_running": "ignore", "prompts_completed": "ignore",
                                 "prompts_pending": "ignore", "strict_args": False}, **stricter})
    assert key(lax) != key(strict)
    assert key(lax) == key(ReplayOptions(prompts_running="ignore", prompts_completed="ignore",
                                         prompts_pending="ignore", strict_args=False, details=True))


def test_a_workflow_dropped_from_the_configuration_is_not_skipped(project: Path) -> None:
    """With billing no longer among the current code its history is stale, not a remembered pass."""
    _check(project)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(', "billing:billing"', ""))
    run = subprocess.run([sys.executable, "-m", "replaytest", "check", "--format", "json", "agent.py"],
                         cwd=project, capture_output=True, text=True, timeout=180)
    assert run.returncode == 2, run.stdout + run.stderr
    results = {Path(r["history"]).name: r["status"] for r in json.loads(run.stdout)["replay"]["results"]}
    assert results["billing-bob.json"] == "stale"
