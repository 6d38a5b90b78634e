"""RT105 against the real SDK (AWS Lambda durable functions): a step named with a value that differs between
runs is reported by lint at the name, and the SDK itself, re-invoked with the recorded checkpoints, stops the
execution (``NonDeterministicExecutionError``: the checkpoint's name is not the one the code gives now); the
same handler with a fixed name replays the same checkpoints to its result."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from aws_kit import record, sdk_verdict

APP = '''\
import uuid

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step


@durable_step
def charge(step_context: StepContext, order_id: str) -> str:
    return f"charged {order_id}"


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(charge(event["id"]), name=f"charge-{uuid.uuid4().hex[:8]}")
'''
NAMING_LINE = next(n for n, text in enumerate(APP.splitlines(), 1) if "name=f\"charge-" in text)


def _load(folder: Path, source: str, tag: str) -> ModuleType:
    path = folder / f"aws_step_names_{tag}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lint_reports_the_step_name_that_differs_between_runs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", "."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    diagnostics = json.loads(run.stdout)["diagnostics"]
    # The uuid4() read in the handler is RT103 as well; the name made from it is RT105.
    assert sorted((d["rule"], d["line"]) for d in diagnostics) == [("RT103", NAMING_LINE), ("RT105", NAMING_LINE)]
    [finding] = [d for d in diagnostics if d["rule"] == "RT105"]
    assert finding["message"].startswith('f"charge-{uuid.uuid4().hex[:8]}" names the step with a value that differs '
                                         "between runs (uuid.uuid4())")


def test_the_sdk_stops_the_replay_at_the_renamed_step_and_replays_a_fixed_name(tmp_path: Path) -> None:
    per_run = _load(tmp_path, APP, "per_run")
    documents = record(per_run.handler, {"id": "o-1"}, "named-per-run")
    assert documents[0]["Status"] == "SUCCEEDED", documents[0]
    verdict = sdk_verdict(per_run.handler, documents)
    assert verdict["Status"] == "FAILED", verdict
    assert "Non-deterministic operation identity" in json.dumps(verdict["Error"]), verdict
    assert "name checkpoint='charge-" in json.dumps(verdict["Error"]), verdict

    fixed = _load(tmp_path, APP.replace('name=f"charge-{uuid.uuid4().hex[:8]}"', 'name="charge"'), "fixed")
    documents = record(fixed.handler, {"id": "o-1"}, "named-fixed")
    verdict = sdk_verdict(fixed.handler, documents)
    assert verdict["Status"] == "SUCCEEDED", verdict
