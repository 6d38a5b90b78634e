"""RT105 against Restate: a ``ctx.run`` step named with a value that differs between runs (here the environment of
the process) is reported by lint at the name, and replaying the invocations the server recorded through the SDK's
state machine, in a process where the name comes out otherwise, diverges at that step, the recorded name against
the one the code computes now; where it comes out as recorded, they replay green."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from restate_kit import ORDERS_SOURCE, Recording, line_of

from replaytest.plugins.restate.replayer import RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

NAMED = 'ctx.run_typed("charge" + os.getenv("CHARGE_STEP", "")'


def load_variant(folder: Path) -> tuple[ModuleType, Path]:
    """The order desk with its charge step named from the environment, imported as a module."""
    source = ORDERS_SOURCE.read_text()
    assert source.count('ctx.run_typed("charge"') == 1
    path = folder / "orders_named_from_environment.py"
    path.write_text(source.replace('ctx.run_typed("charge"', NAMED))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def test_lint_reports_the_step_name_that_differs_between_runs(tmp_path: Path) -> None:
    _, path = load_variant(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "replaytest", "lint", "--format", "json", "--no-cache", path.name],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    found = [d for d in json.loads(run.stdout)["diagnostics"] if d["rule"] == "RT105"]
    assert [(d["line"], d["message"].split(" names ")[0]) for d in found] == [
        (line_of(path, NAMED), '"charge" + os.getenv("CHARGE_STEP", "")')]
    assert "names the run step with a value that differs between runs (os.getenv())" in found[0]["message"]


def test_the_recorded_invocations_diverge_where_the_name_comes_out_otherwise(
    recording: Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, path = load_variant(tmp_path)
    history = recording.histories / f"{recording.ids['completed']}.json"
    monkeypatch.setenv("CHARGE_STEP", "")
    assert RestateReplayer().replay(history, WorkflowSet((module.orders,)), ReplayOptions()).status == "passed"
    monkeypatch.setenv("CHARGE_STEP", "-v2")
    result = RestateReplayer().replay(history, WorkflowSet((module.orders,)), ReplayOptions())
    divergence = result.divergence
    assert result.status == "diverged" and divergence is not None
    assert divergence.kind == "command-mismatch"
    assert (divergence.recorded.name, divergence.issued.name) == ("charge", "charge-v2")  # type: ignore[union-attr]
    assert divergence.source is not None and divergence.source.line == line_of(path, NAMED)
