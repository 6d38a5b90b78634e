"""State across runs: ``--baseline`` (only new findings are reported), the summary cache (warm runs
give the same output, edits and configuration changes are seen, ``--no-cache`` leaves nothing behind)
and the parallel path (a many-file project gives the same result as a serial run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, CLOCK_WORKFLOW_LINE, findings, line_of, run_recording_pools, run_replaytest

# How the engine is told to record a baseline and how to run it serially (agreed in the notes).
WRITE_BASELINE = ("--write-baseline",)
SERIAL = ("--jobs", "1")

HELPER = '''\
"""Formatting helper; its body decides whether the workflow's call site is a finding."""


def label(name: str) -> str:
    return name.upper()
'''
HELPER_WITH_CLOCK = HELPER.replace("return name.upper()", "import time\n    return f'{name}{time.time()}'")

WORKFLOW = '''\
"""A workflow calling a helper of another module."""
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from app.labels import label


@workflow.defn
class Labelled:
    @workflow.run
    async def run(self, name: str) -> str:
        return label(name)
'''
CALL_SITE = ("app/wf.py", line_of(WORKFLOW, "return label(name)"), "clock")


def _lint(project: Path, *options: str):
    return run_replaytest("lint", "--format", "json", *options, ".", cwd=project)


def _tree(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*")}


# --- baseline -----------------------------------------------------------------------------------


def test_baseline_reports_only_new_findings(make_project, tmp_path: Path) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    baseline = tmp_path / "baseline.json"
    recorded = run_replaytest("lint", "--no-cache", *WRITE_BASELINE, str(baseline), ".", cwd=project)
    assert baseline.is_file(), recorded.describe()
    assert "Traceback" not in recorded.stderr, recorded.describe()

    known = run_replaytest("lint", "--format", "json", "--no-cache", "--baseline", str(baseline), ".", cwd=project)
    assert known.returncode == 0, known.describe()
    assert known.json()["diagnostics"] == []

    # A new finding above the old one shifts its line: the baseline must still recognise the old one.
    edited = CLOCK_WORKFLOW.replace(
        "        return f\"{name} at {datetime.now()}\"",
        "        import uuid\n        token = uuid.uuid4()\n        return f\"{name} at {datetime.now()} {token}\"",
    )
    (project / "app" / "wf.py").write_text(edited, encoding="utf-8")
    run = run_replaytest("lint", "--format", "json", "--no-cache", "--baseline", str(baseline), ".", cwd=project)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {("app/wf.py", line_of(edited, "uuid.uuid4()"), "uuid")}

    without = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert findings(without.json()) == {
        ("app/wf.py", line_of(edited, "uuid.uuid4()"), "uuid"),
        ("app/wf.py", line_of(edited, "datetime.now()"), "clock"),
    }


def test_baseline_file_that_is_not_a_baseline_is_exit_2(make_project, tmp_path: Path) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    bogus = tmp_path / "bogus.json"
    bogus.write_text("this is not json", encoding="utf-8")
    run = run_replaytest("lint", "--no-cache", "--baseline", str(bogus), ".", cwd=project)
    assert run.returncode == 2, run.describe()
    assert "bogus.json" in run.stdout + run.stderr
    assert "Traceback" not in run.stderr


# --- cache --------------------------------------------------------------------------------------


def test_warm_run_gives_identical_output_and_uses_the_cache_dir(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/labels.py": HELPER_WITH_CLOCK, "app/wf.py": WORKFLOW})
    cold = _lint(project)
    assert (project / ".replaytest_cache").is_dir(), "the default cache-dir is .replaytest_cache in the project root"
    warm = _lint(project)
    assert cold.returncode == warm.returncode == 1, cold.describe()
    assert warm.stdout == cold.stdout
    assert findings(warm.json()) == {CALL_SITE}
    for output_format in ("text", "sarif", "github"):
        first = run_replaytest("lint", "--format", output_format, "--no-cache", ".", cwd=project)
        cached = run_replaytest("lint", "--format", output_format, ".", cwd=project)
        assert cached.stdout == first.stdout, output_format


def test_editing_a_helper_module_changes_the_finding_at_the_unchanged_call_site(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/labels.py": HELPER, "app/wf.py": WORKFLOW})
    assert findings(_lint(project).json()) == set()
    (project / "app" / "labels.py").write_text(HELPER_WITH_CLOCK, encoding="utf-8")
    assert findings(_lint(project).json()) == {CALL_SITE}
    (project / "app" / "labels.py").write_text(HELPER, encoding="utf-8")
    assert findings(_lint(project).json()) == set()


def test_same_size_same_mtime_edit_is_seen(make_project) -> None:
    # A cache keyed on size and modification time alone would return the stale result here.
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    target = project / "app" / "wf.py"
    assert findings(_lint(project).json()) == {("app/wf.py", CLOCK_WORKFLOW_LINE, "clock")}
    stat = target.stat()
    edited = CLOCK_WORKFLOW.replace("datetime.now()", "datetime.min  ")
    assert len(edited) == len(CLOCK_WORKFLOW)
    target.write_text(edited, encoding="utf-8")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert findings(_lint(project).json()) == set()


def test_same_size_same_mtime_edit_of_a_screened_out_file_is_seen(make_project) -> None:
    # Files no rule needs parsed are only vetted by CPython, and that verdict is cached: it must follow
    # the bytes, not the size and modification time, both ways.
    valid, broken = "def total(values):\n    return sum(values)\n", "def total(values):\n    return sum(values(\n"
    assert len(valid) == len(broken)
    project = make_project({"app/wf.py": CLOCK_WORKFLOW, "app/util.py": valid})
    target = project / "app" / "util.py"
    assert _lint(project).returncode == 1
    assert (project / ".replaytest_cache" / "lint" / "vetted.txt").is_file(), "no vetting verdicts were cached"
    for text, code, util_findings in ((broken, 2, {("app/util.py", 2, "syntax")}), (valid, 1, set())):
        stat = target.stat()
        target.write_text(text, encoding="utf-8")
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        run = _lint(project)
        assert run.returncode == code, run.describe()
        assert {f for f in findings(run.json()) if f[0] == "app/util.py"} == util_findings


def test_configuration_change_is_seen_with_a_warm_cache(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    assert findings(_lint(project).json()) == {("app/wf.py", CLOCK_WORKFLOW_LINE, "clock")}
    (project / "pyproject.toml").write_text('[tool.replaytest]\nignore = ["clock"]\n', encoding="utf-8")
    assert findings(_lint(project).json()) == set()


def test_config_declared_decorators_change_is_seen_with_a_warm_cache(make_project) -> None:
    source = "import time\nfrom acme.durable import orchestration\n\n\n@orchestration\ndef job(ctx):\n    return time.time()\n"
    project = make_project({"app/job.py": source})
    assert findings(_lint(project).json()) == set()
    (project / "pyproject.toml").write_text(
        '[tool.replaytest]\norchestration-decorators = ["acme.durable.orchestration"]\n', encoding="utf-8"
    )
    assert findings(_lint(project).json()) == {("app/job.py", 7, "clock")}


def test_no_cache_writes_nothing(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/labels.py": HELPER_WITH_CLOCK, "app/wf.py": WORKFLOW})
    before = _tree(project)
    run = _lint(project, "--no-cache")
    assert run.returncode == 1, run.describe()
    assert _tree(project) == before


def test_cache_dir_setting_is_used(make_project) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW}, pyproject='[tool.replaytest]\ncache-dir = "build/lint-cache"\n')
    _lint(project)
    assert (project / "build" / "lint-cache").is_dir()
    assert not (project / ".replaytest_cache").exists()


# --- parallel -----------------------------------------------------------------------------------


def _padding(index: int, functions: int) -> list[str]:
    """Plain, deterministic functions that give a module realistic bulk (and no findings)."""
    lines: list[str] = []
    for number in range(functions):
        lines += [
            "", "",
            f"def tally_{index}_{number}(rows: list[dict], key: str = \"amount\") -> dict[str, int]:",
            f'    """Sum ``key`` per customer over rows {number}."""',
            "    totals: dict[str, int] = {}",
            "    for row in sorted(rows, key=lambda r: (r[\"customer\"], r[key])):",
            "        totals[row[\"customer\"]] = totals.get(row[\"customer\"], 0) + int(row[key])",
            f"    return {{name: value * {number + 1} for name, value in sorted(totals.items())}}",
        ]
    return lines


def _generated_project(root: Path, modules: int = 60, padding: int = 0) -> set[tuple[str, int, str]]:
    """Write ``modules`` files, each with a helper (every third one reads the clock); every even-numbered
    one also holds a Temporal workflow calling the helpers of the next two modules and drawing a random
    number itself, plus ``padding`` plain functions of bulk. Returns the findings the linter must report."""
    expected: set[tuple[str, int, str]] = set()
    (root / "gen").mkdir(parents=True)
    (root / "gen" / "__init__.py").write_text("", encoding="utf-8")
    for index in range(modules):
        relative = f"gen/mod_{index:03d}.py"
        body = "    return value + time.time()" if index % 3 == 0 else "    return value * 2.0"
        lines = [f'"""Generated module {index}."""', "import random", "import time", ""]
        first, second = (index + 1) % modules, (index + 2) % modules
        if index % 2 == 0:
            lines += [
                "from temporalio import workflow",
                "",
                "with workflow.unsafe.imports_passed_through():",
                f"    from gen.mod_{first:03d} import helper_{first}",
                f"    from gen.mod_{second:03d} import helper_{second}",
            ]
        lines += ["", "", f"def helper_{index}(value: int) -> float:", body]
        if index % 2 == 0:
            lines += [
                "", "",
                "@workflow.defn",
                f"class Flow{index}:",
                "    @workflow.run",
                "    async def run(self, value: int) -> float:",
                f"        a = helper_{first}(value)",
                f"        b = helper_{second}(value)",
                "        c = random.random()",
                "        return a + b + c",
            ]
            expected.add((relative, lines.index("        c = random.random()") + 1, "random"))
            for target, call in ((first, f"        a = helper_{first}(value)"), (second, f"        b = helper_{second}(value)")):
                if target % 3 == 0:
                    expected.add((relative, lines.index(call) + 1, "clock"))
            lines += _padding(index, padding)
        (root / relative).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return expected


def test_explicit_jobs_runs_a_pool_with_the_same_result(make_project, tmp_path: Path) -> None:
    project = make_project({})
    expected = _generated_project(project, modules=12)
    serial, serial_pools = run_recording_pools("lint", "--format", "json", "--no-cache", "--jobs", "1", ".",
                                               cwd=project, log=tmp_path / "serial.json")
    pooled, pools = run_recording_pools("lint", "--format", "json", "--no-cache", "--jobs", "2", ".",
                                        cwd=project, log=tmp_path / "pooled.json")
    assert serial_pools == [], serial_pools
    assert pools == ["created", "completed"], f"--jobs 2 did not complete its work in a process pool: {pools}"
    assert findings(pooled.json()) == expected
    assert pooled.stdout == serial.stdout and pooled.returncode == serial.returncode == 1


@pytest.mark.slow
def test_many_files_parallel_equals_expected_and_serial(make_project) -> None:
    # The engine parses in a process pool only when there is enough to parse for the pool to pay for
    # itself (engine.default_workers), so the workflow modules carry realistic bulk: 30 modules of ~40 KB.
    project = make_project({})
    expected = _generated_project(project, padding=100)
    pending = sum(len(p.read_bytes()) for p in (project / "gen").glob("*.py") if b"workflow.defn" in p.read_bytes())
    assert pending > 1_100_000, pending
    parallel, pools = run_recording_pools("lint", "--format", "json", "--no-cache", ".", cwd=project,
                                          log=project.parent / "pools.json")
    assert parallel.returncode == 1, parallel.describe()
    # The default run takes a pool only when CPUs are idle (engine.CpuMeter decides);
    # either way it must finish, and a pool it starts must complete its work.
    assert pools in ([], ["created", "completed"]), f"the default run's process pool did not complete: {pools}"
    assert findings(parallel.json()) == expected
    assert parallel.json()["summary"]["files"] == 61
    serial = _lint(project, "--no-cache", *SERIAL)
    assert serial.returncode == 1, serial.describe()
    assert serial.stdout == parallel.stdout
    two_workers = _lint(project, "--no-cache", "--jobs", "2")
    assert two_workers.stdout == parallel.stdout


def test_baseline_counts_identical_findings(make_project, tmp_path: Path) -> None:
    # Two findings with the same rule, message and trace in one function: a third identical one added
    # later is new, so the baseline must remember how many there were, not just that there were some.
    source = CLOCK_WORKFLOW.replace(
        '        return f"{name} at {datetime.now()}"',
        '        first = datetime.now()\n        second = datetime.now()\n        return f"{name} {first} {second}"',
    )
    project = make_project({"app/wf.py": source})
    baseline = tmp_path / "baseline.json"
    recorded = run_replaytest("lint", "--no-cache", *WRITE_BASELINE, str(baseline), ".", cwd=project)
    assert recorded.returncode == 0, recorded.describe()
    third = source.replace("        second = datetime.now()\n", "        second = datetime.now()\n        third = datetime.now()\n")
    (project / "app" / "wf.py").write_text(third, encoding="utf-8")
    run = run_replaytest("lint", "--format", "json", "--no-cache", "--baseline", str(baseline), ".", cwd=project)
    assert run.returncode == 1, run.describe()
    assert len(run.json()["diagnostics"]) == 1, run.json()["diagnostics"]


def test_simultaneous_processes_share_a_cold_cache(make_project) -> None:
    # pre-commit runs several `replaytest lint` processes at once (require_serial: false), all writing
    # the same cache directory; none may crash or read another's half-written entry.
    import subprocess
    import sys

    project = make_project({})
    expected = _generated_project(project, modules=40)
    command = [sys.executable, "-m", "replaytest", "lint", "--format", "json", "."]
    processes = [
        subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    for process, (stdout, stderr) in zip(processes, outputs):
        assert process.returncode == 1, stderr.decode(errors="replace")
        assert b"Traceback" not in stderr
    reference = _lint(project, "--no-cache")
    assert findings(reference.json()) == expected
    assert all(stdout.decode() == reference.stdout for stdout, _ in outputs)


def test_corrupt_cache_entries_are_recomputed(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/labels.py": HELPER_WITH_CLOCK, "app/wf.py": WORKFLOW})
    reference = _lint(project)
    entries = [path for path in (project / ".replaytest_cache").rglob("*.json") if path.is_file()]
    assert entries, "the cached run wrote no entries"
    for garbage, entry in zip((b"", b"{not json", b"[1, 2]", b'{"version": 1}'), entries * 4):
        entry.write_bytes(garbage)
        run = _lint(project)
        assert "Traceback" not in run.stderr, run.describe()
        assert run.stdout == reference.stdout


def test_written_baseline_is_byte_stable(make_project, tmp_path: Path) -> None:
    # Baselines are committed to version control: rewriting one for unchanged code must not churn it.
    project = make_project({"app/__init__.py": "", "app/labels.py": HELPER_WITH_CLOCK, "app/wf.py": WORKFLOW,
                            "app/clock.py": CLOCK_WORKFLOW})
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    run_replaytest("lint", "--no-cache", *WRITE_BASELINE, str(first), ".", cwd=project)
    run_replaytest("lint", *WRITE_BASELINE, str(second), ".", cwd=project)
    assert first.read_bytes() == second.read_bytes()


def test_missing_baseline_file_is_exit_2(make_project, tmp_path: Path) -> None:
    project = make_project({"app/wf.py": CLOCK_WORKFLOW})
    run = run_replaytest("lint", "--no-cache", "--baseline", str(tmp_path / "nowhere.json"), ".", cwd=project)
    assert run.returncode == 2, run.describe()
    assert "nowhere.json" in run.stdout + run.stderr
    assert "Traceback" not in run.stderr
