"""Fix correctness: no fix where the replacement would not mean the same (an ``await`` outside
``async def``, a shadowed name), nothing written over a file that changed since it was linted, atomic
writes that keep the file's mode, every fixed file compiles, imports made unused are removed, and the
command line's ``--diff``, ``--unsafe-fixes`` and ``--output-format``."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from lintkit import run_replaytest

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.fix import fix_files
from replaytest.lint.model import Diagnostic, Fix
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
REPO_ROOT = Path(__file__).resolve().parents[2]


def _lint(root: Path):
    config = Config(root=root)
    return lint_paths([root], config, PROFILES, use_cache=False, jobs=1, context=build_context(config, PROFILES),
                      cwd=root)


def _write(root: Path, text: str, name: str = "flow.py") -> Path:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


SLEEPS = '''\
import time

from temporalio import workflow


@workflow.defn
class Sleepy:
    @workflow.run
    async def run(self) -> None:
        time.sleep(1)
        later = lambda: time.sleep(2)
        later()

    @workflow.signal
    def poke(self) -> None:
        time.sleep(3)
'''


def test_await_is_offered_only_directly_inside_async_def(tmp_path: Path) -> None:
    path = _write(tmp_path, SLEEPS)
    result = _lint(tmp_path)
    fixes = {d.line: d.fix for d in result.diagnostics if d.rule == "RT303"}
    assert set(fixes) == {10, 11, 16}, result.diagnostics
    assert fixes[10] is not None and fixes[10].replacement == "await asyncio.sleep(1)"
    assert fixes[11] is None and fixes[16] is None  # a lambda and a sync handler: no fix offered
    outcome = fix_files(result.diagnostics, unsafe=True, cwd=tmp_path, digests=result.source_digests)
    assert [a.diagnostic.line for a in outcome.applied] == [10]
    fixed = path.read_text(encoding="utf-8")
    compile(fixed, str(path), "exec")
    assert "import asyncio\n" in fixed and "        await asyncio.sleep(1)\n" in fixed
    assert "lambda: time.sleep(2)" in fixed and "        time.sleep(3)\n" in fixed


@pytest.mark.parametrize("shadow", [
    "        workflow = 'nightly'\n",                      # a local string named workflow
    "        for workflow in ('a', 'b'):\n            pass\n",  # a loop variable
])
def test_a_shadowed_replacement_name_gets_no_fix(tmp_path: Path, shadow: str) -> None:
    source = (
        "from datetime import datetime\n\nfrom temporalio import workflow as wf\n\n\n@wf.defn\nclass Flow:\n"
        "    @wf.run\n    async def run(self) -> str:\n" + shadow +
        "        return f'{workflow} {datetime.utcnow()}'\n"
    )
    path = _write(tmp_path, source)
    result = _lint(tmp_path)
    [clock] = [d for d in result.diagnostics if d.rule == "RT101"]
    assert clock.fix is None, clock
    assert fix_files(result.diagnostics, unsafe=True, cwd=tmp_path).applied == []
    assert path.read_text(encoding="utf-8") == source


def test_a_module_level_name_bound_otherwise_gets_no_fix(tmp_path: Path) -> None:
    source = (
        "from datetime import datetime\n\nfrom temporalio import workflow as wf\n\nworkflow = 'nightly'\n\n\n"
        "@wf.defn\nclass Flow:\n    @wf.run\n    async def run(self) -> str:\n"
        "        return f'{workflow} {datetime.utcnow()}'\n"
    )
    _write(tmp_path, source)
    [clock] = [d for d in _lint(tmp_path).diagnostics if d.rule == "RT101"]
    assert clock.fix is None


def test_a_rebound_context_parameter_gets_no_fix(tmp_path: Path) -> None:
    source = (
        "import uuid\n\nimport restate\n\ncheckout = restate.Workflow('checkout')\n\n\n@checkout.main()\n"
        "async def run(ctx, order):\n    ctx = order['ctx']\n    return uuid.uuid4()\n"
    )
    _write(tmp_path, source)
    [fresh] = [d for d in _lint(tmp_path).diagnostics if d.rule == "RT103"]
    assert fresh.fix is None


def test_a_file_changed_since_linting_is_not_rewritten(tmp_path: Path) -> None:
    source = (
        "from datetime import datetime\n\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass Flow:\n"
        "    @workflow.run\n    async def run(self) -> object:\n        return datetime.utcnow()\n"
    )
    path = _write(tmp_path, source)
    result = _lint(tmp_path)
    # An editor saves the file between the lint and the fix: new code where the flagged call was.
    edited = source.replace("return datetime.utcnow()", "return self.deadline(datetime.utcnow())")
    path.write_text(edited, encoding="utf-8")
    outcome = fix_files(result.diagnostics, unsafe=False, cwd=tmp_path, digests=result.source_digests)
    assert outcome.applied == [] and [s.reason for s in outcome.skipped] == [
        "changed since it was linted; run the fix again"]
    assert path.read_text(encoding="utf-8") == edited


def test_fix_writes_atomically_and_keeps_the_mode(tmp_path: Path) -> None:
    source = (
        "from datetime import datetime\n\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass Flow:\n"
        "    @workflow.run\n    async def run(self) -> object:\n        return datetime.utcnow()\n"
    )
    path = _write(tmp_path, source)
    path.chmod(0o640)
    result = _lint(tmp_path)
    outcome = fix_files(result.diagnostics, unsafe=False, cwd=tmp_path, digests=result.source_digests)
    assert len(outcome.applied) == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flow.py"]  # no temporary file left behind
    fixed = path.read_text(encoding="utf-8")
    assert "return workflow.now().replace(tzinfo=None)" in fixed
    assert "from datetime import datetime" not in fixed  # the import the fix made unused is gone


def test_a_read_only_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    source = (
        "import uuid\n\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass Flow:\n"
        "    @workflow.run\n    async def run(self) -> object:\n        return uuid.uuid4()\n"
    )
    path = _write(tmp_path, source)
    path.chmod(0o444)
    try:
        result = _lint(tmp_path)
        outcome = fix_files(result.diagnostics, unsafe=False, cwd=tmp_path, digests=result.source_digests)
        assert outcome.applied == [] and [s.reason for s in outcome.skipped] == ["not rewritten: the file is read-only"]
        assert path.read_text(encoding="utf-8") == source
    finally:
        path.chmod(0o644)


def test_a_rewrite_that_would_not_compile_is_not_written(tmp_path: Path) -> None:
    # A third-party profile's template could still produce such text: the compile check is the backstop.
    source = "def tick():\n    stamp()\n"
    path = _write(tmp_path, source)
    diagnostic = Diagnostic("flow.py", 2, 5, 2, 12, "RT101", "clock", "m",
                            fix=Fix(True, "await stamps.now()", ("acme", "stamps")))
    outcome = fix_files([diagnostic], unsafe=False, cwd=tmp_path)
    assert outcome.applied == []
    assert outcome.skipped and outcome.skipped[0].reason.startswith("not rewritten: the fixed file would not compile")
    assert path.read_text(encoding="utf-8") == source


def test_only_imports_the_fix_made_unused_are_removed(tmp_path: Path) -> None:
    source = (
        '"""Doc."""\nfrom __future__ import annotations\n\nimport os\nimport time, uuid\nfrom datetime import (\n'
        "    datetime,\n    timezone,\n)\n\nfrom temporalio import workflow\n\n__all__ = ['Flow']\n\n\n"
        "@workflow.defn\nclass Flow:\n    @workflow.run\n    async def run(self) -> object:\n"
        "        return time.time(), uuid.uuid4(), datetime.now(timezone.utc)\n"
    )
    path = _write(tmp_path, source)
    result = _lint(tmp_path)
    assert len(fix_files(result.diagnostics, unsafe=False, cwd=tmp_path).applied) == 3
    fixed = path.read_text(encoding="utf-8")
    compile(fixed, str(path), "exec")
    assert "import os\n" in fixed  # unused before the fix: not the fix's business
    assert "import time" not in fixed and "uuid" not in fixed.split("class Flow")[0]
    assert "from datetime import (\n    timezone,\n)" in fixed or "from datetime import timezone" in fixed


def test_an_await_replacement_inside_an_expression_is_not_offered(tmp_path: Path) -> None:
    source = (
        "import time\n\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass Flow:\n"
        "    @workflow.run\n    async def run(self) -> object:\n        return [time.sleep(1)]\n"
    )
    _write(tmp_path, source)
    [sleep] = [d for d in _lint(tmp_path).diagnostics if d.rule == "RT303"]
    assert sleep.fix is None


def test_fix_diff_previews_without_writing(make_project) -> None:
    source = (
        "import uuid\n\nfrom temporalio import workflow\n\n\n@workflow.defn\nclass Flow:\n"
        "    @workflow.run\n    async def run(self) -> object:\n        return uuid.uuid4()\n"
    )
    project = make_project({"app/flow.py": source})
    run = run_replaytest("fix", "--diff", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    assert "--- a/app/flow.py\n+++ b/app/flow.py\n" in run.stdout
    assert "-import uuid\n" in run.stdout and "+        return workflow.uuid4()\n" in run.stdout
    assert (project / "app" / "flow.py").read_text(encoding="utf-8") == source
    clean = run_replaytest("fix", "--diff", "--no-cache", ".", cwd=make_project({"app/ok.py": "x = 1\n"}, name="ok"))
    assert clean.returncode == 0 and clean.stdout == "", clean.describe()


def test_ruff_flag_spellings_are_accepted(make_project) -> None:
    project = make_project({"app/flow.py": SLEEPS})
    lint = run_replaytest("lint", "--output-format", "json", "--no-cache", ".", cwd=project)
    assert lint.returncode == 1 and lint.json()["summary"]["diagnostics"] == 3, lint.describe()
    fixed = run_replaytest("fix", "--unsafe-fixes", "--output-format", "json", "--no-cache", ".", cwd=project)
    report = fixed.json()
    assert [a["line"] for a in report["applied"]] == [10], fixed.describe()
    assert len(report["remaining"]) == 2  # the lambda and the sync handler keep their finding, unfixed


def test_fix_unsafe_on_the_projects_fixtures_leaves_every_file_compiling(tmp_path: Path) -> None:
    roots = [REPO_ROOT / "fixtures" / "example_app", *sorted((REPO_ROOT / "fixtures" / "lint_projects").iterdir())]
    fixed_any = False
    for source_root in roots:
        if not source_root.is_dir():
            continue
        copy = tmp_path / source_root.name
        shutil.copytree(source_root, copy)
        run = run_replaytest("fix", "--unsafe", "--no-cache", ".", cwd=copy)
        assert run.returncode in (0, 1), run.describe()
        assert "Traceback" not in run.stderr, run.describe()
        fixed_any = fixed_any or "Fixed 0 " not in run.stdout
        for path in copy.rglob("*.py"):
            compile(path.read_bytes(), str(path), "exec")  # raises SyntaxError naming the file
    assert fixed_any
    assert os.listdir(tmp_path)
