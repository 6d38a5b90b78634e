"""RT105 against the journal runtime: a step named with a value that differs between runs is reported by lint at
the name, and the runtime, resuming the parked run in a new worker, fails it with a ``JournalDivergence`` (the
journal holds the step under the name of the first attempt); with a fixed name the run resumes to its result."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from journal_clock import FakeClock

from replaytest.journal import Journal, Worker

APP = '''\
import uuid

from replaytest.journal import workflow


@workflow(name="pay")
def pay(ctx, order_id: str) -> str:
    charged = ctx.step(f"charge-{uuid.uuid4().hex[:8]}", lambda: f"charged {order_id}")
    ctx.sleep(60, name="settle")
    return charged
'''
NAMING_LINE = next(n for n, text in enumerate(APP.splitlines(), 1) if 'f"charge-' in text)


def _load(folder: Path, source: str, tag: str) -> ModuleType:
    path = folder / f"journal_step_names_{tag}.py"
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
    # The uuid4() read in the workflow is RT103 as well; the name made from it is RT105.
    assert sorted((d["rule"], d["line"]) for d in diagnostics) == [("RT103", NAMING_LINE), ("RT105", NAMING_LINE)]
    [finding] = [d for d in diagnostics if d["rule"] == "RT105"]
    assert finding["message"].startswith('f"charge-{uuid.uuid4().hex[:8]}" names the step with a value that differs '
                                         "between runs (uuid.uuid4())")


def test_the_resumed_run_fails_at_the_renamed_step_and_resumes_with_a_fixed_name(tmp_path: Path) -> None:
    per_run = _load(tmp_path, APP, "per_run")
    fixed = _load(tmp_path, APP.replace('f"charge-{uuid.uuid4().hex[:8]}"', '"charge"'), "fixed")
    for module, tag in ((per_run, "per_run"), (fixed, "fixed")):
        clock = FakeClock()
        with Journal(tmp_path / f"{tag}.db", clock=clock) as journal:
            run_id = journal.start(module.pay, "o-1")
            assert Worker(journal, [module.pay], "first").run_once().status == "parked"
            clock.advance(60)
            Worker(journal, [module.pay], "second").run_once()
            if module is per_run:
                assert journal.status(run_id) == "failed"
                error = journal.error(run_id)
                assert error.type == "JournalDivergence", error
                assert "holds step 'charge-" in error.message and "but the code now issues step 'charge-" in error.message
            else:
                assert journal.status(run_id) == "completed"
                assert journal.result(run_id) == "charged o-1"
