"""The run machinery: cache, process pool, screening, fixes and failure isolation."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from replaytest.config import Config
from replaytest.lint import engine, pool, summarise
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.fix import apply_fixes
from replaytest.lint.model import summary_from_json, summary_to_json
from replaytest.lint.rule import CallFact, Rule
from replaytest.lint.rules import load_rules
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]


WORKFLOW = '''
import random
import time
import uuid
from datetime import datetime
from temporalio import workflow
from helpers_{n} import stamp

@workflow.defn
class Flow{n}:
    @workflow.run
    async def run(self) -> str:
        started = datetime.now()
        roll = random.randint(1, {n} + 2)
        return f"{{started}} {{roll}} {{uuid.uuid4()}} {{stamp()}} {{time.time()}}"
'''
HELPER = '''
import os
import sys

def stamp() -> str:
    return os.environ.get("STAMP", "")
'''


def project(root: Path, count: int) -> Path:
    for n in range(count):
        (root / f"flow_{n}.py").write_text(WORKFLOW.format(n=n), encoding="utf-8")
        (root / f"helpers_{n}.py").write_text(HELPER, encoding="utf-8")
    (root / "plain.py").write_text("def nothing():\n    return 1\n", encoding="utf-8")
    return root


def run(root: Path, **options):
    config = options.pop("config", None) or Config(root=root)
    result = lint_paths([root], config, PROFILES, context=build_context(config, PROFILES), cwd=root, **options)
    return result


def as_rows(result) -> list:
    return [d.to_json() | {"fingerprint": d.fingerprint} for d in result.diagnostics]


def test_parallel_run_equals_serial_run(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 20)
    serial = run(root, use_cache=False, jobs=1)
    pools = []
    real_pool = pool.process_pool
    monkeypatch.setattr(pool, "process_pool", lambda **kw: pools.append(kw) or real_pool(**kw))
    parallel = run(root, use_cache=False, jobs=4)  # an explicit worker count uses the pool even for small files
    assert len(pools) == 1
    assert as_rows(parallel) == as_rows(serial)
    assert len(serial.diagnostics) == 5 * 20
    assert serial.files_checked == 2 * 20 + 1
    monkeypatch.setattr(pool.CpuMeter, "spare", lambda self: 3.0)
    by_default = run(root, use_cache=False, jobs=None)  # 20 small files: not worth a pool, idle CPUs or not
    assert len(pools) == 1 and as_rows(by_default) == as_rows(serial)


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_default_run_takes_a_pool_when_the_work_pays_for_it(tmp_path: Path, monkeypatch, start_method: str) -> None:
    # Forked workers inherit the run's context; spawned ones (macOS, Windows) build their own: same results.
    root = project(tmp_path, 6)
    serial = run(root, use_cache=False, jobs=1)
    pools = []
    real_pool = pool.process_pool
    monkeypatch.setattr(pool, "process_pool", lambda **kw: pools.append(kw) or real_pool(**kw))
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: [start_method])
    # Forking is only safe with one thread: a thread another test left in this worker process must not decide.
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(pool, "SECONDS_PER_BYTE", 1e-3)  # as if each small file took a second to parse
    monkeypatch.setattr(pool.CpuMeter, "spare", lambda self: 1.0)
    gc.collect()  # Python 3.12's collector parks immortal objects in the permanent generation (a count of its own)
    frozen_before = gc.get_freeze_count()
    pooled = run(root, use_cache=False, jobs=None)
    assert [kw["max_workers"] for kw in pools] == [2]
    assert ("mp_context" in pools[0]) == (start_method == "fork")
    assert as_rows(pooled) == as_rows(serial)
    assert pool._WORKER_CONTEXT is None  # the parent does not keep the context it lent the workers
    gc.collect()
    assert gc.get_freeze_count() == frozen_before  # nor its objects frozen for them
    monkeypatch.setattr(pool.CpuMeter, "spare", lambda self: 0.0)
    assert as_rows(run(root, use_cache=False, jobs=None)) == as_rows(serial)
    assert len(pools) == 1  # no idle CPU: serial, however much work there is


def test_cache_reuses_summaries_and_follows_helper_edits(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 2)
    cold = run(root, use_cache=True, jobs=1)
    assert list((root / ".replaytest_cache" / "lint").rglob("*.json"))

    parsed: list[str] = []
    original = summarise.summarise_source
    monkeypatch.setattr(summarise, "summarise_source", lambda *a: parsed.append(a[1]) or original(*a))
    warm = run(root, use_cache=True, jobs=1)
    assert as_rows(warm) == as_rows(cold)
    assert parsed == []  # every summary came from the cache, helpers included

    # The helper no longer reads the environment: the unchanged workflow's call-site finding goes away.
    (root / "helpers_0.py").write_text("def stamp() -> str:\n    return ''\n", encoding="utf-8")
    edited = run(root, use_cache=True, jobs=1)
    assert [p for p in parsed if p.endswith("helpers_0.py")] and len(parsed) == 1
    assert len(edited.diagnostics) == len(cold.diagnostics) - 1


def test_cpython_verdicts_are_cached_by_content_and_python_version(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 2)  # helpers_*.py and plain.py mention no framework: only CPython vets them
    vetted: list[str] = []
    original = summarise.compiles
    monkeypatch.setattr(summarise, "compiles", lambda data, path: vetted.append(Path(path).name) or original(data, path))
    cold = run(root, use_cache=True, jobs=1)
    assert sorted(vetted) == ["helpers_0.py", "helpers_1.py", "plain.py"]

    vetted.clear()
    assert as_rows(run(root, use_cache=True, jobs=1)) == as_rows(cold)
    assert vetted == []  # every verdict came from the cache

    (root / "plain.py").write_text("def nothing():\n    return 2\n", encoding="utf-8")
    run(root, use_cache=True, jobs=1)
    assert vetted == ["plain.py"]

    vetted.clear()
    monkeypatch.setattr(sys, "version", "3.99.0 (another)")
    run(root, use_cache=True, jobs=1)  # another interpreter's grammar: its verdicts are not reused
    assert sorted(vetted) == ["helpers_0.py", "helpers_1.py", "plain.py"]

    vetted.clear()
    assert as_rows(run(root, use_cache=False, jobs=1)) == as_rows(cold)
    assert sorted(vetted) == ["helpers_0.py", "helpers_1.py", "plain.py"]  # --no-cache reads no verdict


def test_a_damaged_verdict_file_only_costs_the_verdicts(tmp_path: Path) -> None:
    root = project(tmp_path, 1)
    (root / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    cold = run(root, use_cache=True, jobs=1)
    assert [d.rule for d in cold.diagnostics if d.path == "broken.py"] == ["RT001"]
    verdicts = root / ".replaytest_cache" / "lint" / "vetted.txt"
    for garbage in (b"", b"\xff\xfe not ascii", b"zz" * 16 + b"\n" + b"0" * 31):
        verdicts.write_bytes(garbage)
        assert as_rows(run(root, use_cache=True, jobs=1)) == as_rows(cold)


def test_no_cache_writes_nothing(tmp_path: Path) -> None:
    root = project(tmp_path, 1)
    run(root, use_cache=False, jobs=1)
    assert not (root / ".replaytest_cache").exists()


def test_summary_json_round_trip(tmp_path: Path) -> None:
    root = project(tmp_path, 1)
    config = Config(root=root)
    context = build_context(config, PROFILES)
    data = (root / "flow_0.py").read_bytes()
    summary = engine.summarise_source(context, str(root / "flow_0.py"), "flow_0", False, data)
    assert summary.functions["Flow0.run"].effects
    assert summary_from_json(json.loads(json.dumps(summary_to_json(summary)))) == summary


def test_screened_out_files_are_not_parsed(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 1)
    parsed: list[str] = []
    original = summarise.summarise_source
    monkeypatch.setattr(summarise, "summarise_source", lambda *a: parsed.append(Path(a[1]).name) or original(*a))
    run(root, use_cache=False, jobs=1)
    # The workflow is screened in, its helper parsed because the workflow calls it, plain.py never.
    assert sorted(parsed) == ["flow_0.py", "helpers_0.py"]


class ExplodingRule(Rule):
    """A third-party rule with a bug."""

    code = "XX901"
    name = "explodes"
    category = "clock"
    summary = "Raises on every call"
    calls = {"time.time": ""}

    def accept_call(self, call: CallFact) -> bool:
        raise RuntimeError("boom")


def test_a_failing_rule_is_an_internal_error_for_that_file_only(tmp_path: Path) -> None:
    root = project(tmp_path, 1)
    (root / "other.py").write_text(textwrap.dedent('''
        import uuid
        from temporalio import workflow

        @workflow.defn
        class Other:
            @workflow.run
            async def run(self) -> str:
                return str(uuid.uuid4())
    '''), encoding="utf-8")
    config = Config(root=root)
    context = build_context(config, PROFILES, [ExplodingRule, *load_rules()])
    result = lint_paths([root], config, PROFILES, use_cache=False, jobs=1, context=context, cwd=root)
    assert result.internal_errors == 1 and result.errors == 1
    internal = [d for d in result.diagnostics if d.rule == "RT002"]
    assert [d.path for d in internal] == ["flow_0.py"] and "boom" in internal[0].message
    assert any(d.path == "other.py" and d.rule == "RT103" for d in result.diagnostics)


def test_fix_rewrites_calls_and_adds_the_import(tmp_path: Path) -> None:
    source = textwrap.dedent('''
        """Doc."""
        import random
        import time
        from datetime import datetime, timezone
        from temporalio import workflow as wf_alias

        @wf_alias.defn
        class Flow:
            @wf_alias.run
            async def run(self) -> float:
                started = datetime.now(timezone.utc)  # keep this comment
                time.sleep(1)
                return random.uniform(0, 1) + started.timestamp()
    ''').lstrip()
    (tmp_path / "flow.py").write_text(source, encoding="utf-8")
    result = run(tmp_path, use_cache=False, jobs=1)
    applied = apply_fixes(result.diagnostics, unsafe=False, cwd=tmp_path)
    assert [(a.original, a.replacement) for a in applied] == [
        ("datetime.now(timezone.utc)", "workflow.now().astimezone(timezone.utc)"),
        ("random.uniform(0, 1)", "workflow.random().uniform(0, 1)")]
    fixed = (tmp_path / "flow.py").read_text(encoding="utf-8")
    assert "started = workflow.now().astimezone(timezone.utc)  # keep this comment" in fixed
    # Imports only the replaced calls used are gone; the ones still used stay.
    assert "import random\n" not in fixed and "from datetime import timezone\n" in fixed and "import time\n" in fixed
    assert "from temporalio import workflow\n" in fixed and "time.sleep(1)" in fixed  # unsafe fix not applied
    after = run(tmp_path, use_cache=False, jobs=1)
    assert [d.rule for d in after.diagnostics] == ["RT303"]


def test_deeply_nested_code_is_analysed_not_rejected(tmp_path: Path) -> None:
    chain = " + ".join(["x"] * 1500)  # beyond the recursion limit; parsed in a bounded child
    (tmp_path / "deep.py").write_text(
        "import time\nfrom temporalio import workflow\n\n@workflow.defn\nclass Deep:\n    @workflow.run\n"
        f"    async def run(self, x: int) -> float:\n        return {chain} + time.time()\n",
        encoding="utf-8",
    )
    result = run(tmp_path, use_cache=False, jobs=1)
    assert result.errors == 0
    assert [(d.rule, d.line) for d in result.diagnostics] == [("RT101", 8)]


def test_plugins_can_stand_in_for_profiles(tmp_path: Path) -> None:
    root = project(tmp_path, 1)
    config = Config(root=root)
    from_plugins = lint_paths([root], config, load_plugins(), use_cache=False, jobs=1, cwd=root)
    assert as_rows(from_plugins) == as_rows(run(root, use_cache=False, jobs=1))


def test_a_directory_that_cannot_be_listed_is_reported(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def scandir_failing_on_locked(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr("replaytest.lint.discovery.os.scandir", scandir_failing_on_locked)
    result = run(tmp_path, use_cache=False, jobs=1)
    assert result.errors == 1 and result.problems == ["locked: cannot be listed: Permission denied"]


def test_a_failing_pool_falls_back_to_serial_and_says_so(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 3)

    def no_pool(**options):
        raise OSError("no semaphores here")

    monkeypatch.setattr(pool, "process_pool", no_pool)
    result = run(root, use_cache=False, jobs=2)
    assert as_rows(result) == as_rows(run(root, use_cache=False, jobs=1))
    assert result.notes and "continuing serially" in result.notes[0]


def test_nested_fixes_never_lose_the_inner_rewrite(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(textwrap.dedent('''
        import random
        import uuid
        from temporalio import workflow

        @workflow.defn
        class Pick:
            @workflow.run
            async def run(self) -> str:
                return str(random.choice([uuid.uuid4(), uuid.uuid4()]))
    ''').lstrip(), encoding="utf-8")
    first = apply_fixes(run(tmp_path, use_cache=False, jobs=1).diagnostics, unsafe=False, cwd=tmp_path)
    assert [a.diagnostic.rule for a in first] == ["RT103", "RT103"]  # the outer call waits for the next run
    second = apply_fixes(run(tmp_path, use_cache=False, jobs=1).diagnostics, unsafe=False, cwd=tmp_path)
    assert [a.diagnostic.rule for a in second] == ["RT102"]
    assert "workflow.random().choice([workflow.uuid4(), workflow.uuid4()])" in (tmp_path / "flow.py").read_text()
    assert run(tmp_path, use_cache=False, jobs=1).diagnostics == []


def test_sarif_code_flows_name_each_helper_and_its_file(tmp_path: Path) -> None:
    from replaytest.lint.reporters.sarif import render_sarif

    root = project(tmp_path, 1)
    result = run(root, use_cache=False, jobs=1)
    log = json.loads(render_sarif(result, build_context(Config(root=root), PROFILES).rules))
    flows = [r["codeFlows"] for r in log["runs"][0]["results"] if "codeFlows" in r]
    assert len(flows) == 1
    steps = [step["location"] for step in flows[0][0]["threadFlows"][0]["locations"]]
    assert steps[0]["physicalLocation"]["region"]["startLine"] == 15  # the stamp() call in the workflow
    assert steps[1]["message"]["text"] == "helpers_0.stamp"
    assert steps[1]["physicalLocation"]["artifactLocation"]["uri"] == "helpers_0.py"
    assert steps[2] == {"message": {"text": "os.environ"}}


@pytest.mark.parametrize(("cpus", "load", "expected"), [(2, 0.0, 2), (2, 0.6, 1), (2, 11.0, 1), (8, 3.2, 5), (4, 0.4, 4)])
def test_default_workers_count_only_idle_cpus(monkeypatch, cpus: int, load: float, expected: int) -> None:
    monkeypatch.setattr(pool, "_available_cpus", lambda: cpus)
    monkeypatch.setattr(pool.os, "getloadavg", lambda: (load, load, load))
    assert pool.idle_cpus() == expected


@pytest.mark.parametrize(("total_bytes", "files", "capacity", "expected"), [
    (100_000, 50, 2.0, 1),     # 0.3 s of work: two workers, 0.15 s + 0.12 s, save less than a fifth
    (500_000, 227, 2.0, 2),    # 1.5 s: 0.75 s + 0.12 s
    (500_000, 227, 1.0, 1),    # no idle CPU: a second worker would only share ours
    (500_000, 227, 1.4, 2),    # 1.5 / 1.4 + 0.12 = 1.19 s, 21 % saved
    (500_000, 227, 1.2, 1),    # 1.5 / 1.2 + 0.12 = 1.37 s, 9 % saved
    (5_000_000, 2, 8.0, 2),    # never more workers than files
    (5_000_000, 400, 8.0, 8),  # 15 s: 1.9 s + 0.48 s beats seven workers' 2.1 s + 0.42 s
])
def test_default_workers_weigh_the_work_against_idle_cpus(monkeypatch, total_bytes, files, capacity, expected) -> None:
    monkeypatch.setattr(pool, "SECONDS_PER_BYTE", 3.0e-6)
    monkeypatch.setattr(pool, "WORKER_COST_S", 0.06)
    monkeypatch.setattr(pool, "POOL_MARGIN", 0.2)
    assert pool.default_workers(total_bytes, files, capacity) == expected


def test_cpu_meter_counts_idle_ticks_of_this_process_cpus_only(tmp_path: Path, monkeypatch) -> None:
    stat = tmp_path / "stat"
    monkeypatch.setattr(pool, "_affinity", lambda: [0, 2])

    def write(idle0: int, iowait0: int, idle1: int, idle2: int) -> None:
        stat.write_text(
            "cpu  10 0 10 999 9 0 0 0 0 0\n"
            f"cpu0 5 0 5 {idle0} {iowait0} 0 0 0 0 0\n"
            f"cpu1 5 0 5 {idle1} 0 0 0 0 0 0\n"
            f"cpu2 5 0 5 {idle2} 0 0 0 0 0 0\n"
            "intr 12345\n", encoding="ascii")

    clock = iter([100.0, 102.0])
    monkeypatch.setattr(pool.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(pool.CpuMeter, "STAT_PATH", str(stat))
    write(1000, 50, 1000, 1000)
    meter = pool.CpuMeter()
    # Over 2 s: cpu0 idle 50 + iowait 10 ticks, cpu1 (not ours) 200, cpu2 idle 150: 210 ticks of ours idle.
    write(1050, 60, 1200, 1150)
    assert meter.spare() == pytest.approx(210 / os.sysconf("SC_CLK_TCK") / 2)


def test_cpu_meter_says_nothing_without_proc_stat_or_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pool.CpuMeter, "STAT_PATH", str(tmp_path / "missing"))
    assert pool.CpuMeter().spare() is None
    (tmp_path / "stat").write_text("cpu  1 1 1 1 1 0 0 0 0 0\ncpu0 1 1 1 1 1 0 0 0 0 0\n", encoding="ascii")
    monkeypatch.setattr(pool.CpuMeter, "STAT_PATH", str(tmp_path / "stat"))
    monkeypatch.setattr(pool, "_affinity", lambda: [0])
    clock = iter([100.0, 100.01])
    monkeypatch.setattr(pool.time, "monotonic", lambda: next(clock))
    assert pool.CpuMeter().spare() is None  # 10 ms: a window too short to count ticks in


def _cache_folder(root: Path) -> Path:
    [folder] = [path.parent for path in root.rglob("pack.txt")]
    return folder


def test_a_warm_run_reads_its_summaries_from_the_pack(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 3)
    cold = run(root, use_cache=True, jobs=1)
    folder = _cache_folder(root)
    entries = sorted(path for path in folder.glob("??/*.json"))
    assert len(entries) == 6  # the three workflow modules and the helpers they call
    assert len((folder / "pack.txt").read_bytes().splitlines()) == 6
    for entry in entries:  # the pack alone must serve the warm run
        entry.unlink()
    parsed: list[str] = []
    original = summarise.summarise_source
    monkeypatch.setattr(summarise, "summarise_source", lambda *a: parsed.append(Path(a[1]).name) or original(*a))
    assert as_rows(run(root, use_cache=True, jobs=1)) == as_rows(cold)
    assert parsed == []


def test_an_edit_misses_the_pack_and_the_pack_follows_the_run(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 2)
    run(root, use_cache=True, jobs=1)
    pack = _cache_folder(root) / "pack.txt"
    before = pack.read_bytes().splitlines()
    (root / "flow_1.py").write_text(WORKFLOW.format(n=1) + "# edited\n", encoding="utf-8")
    parsed: list[str] = []
    original = summarise.summarise_source
    monkeypatch.setattr(summarise, "summarise_source", lambda *a: parsed.append(Path(a[1]).name) or original(*a))
    run(root, use_cache=True, jobs=1)
    assert parsed == ["flow_1.py"]
    after = pack.read_bytes().splitlines()
    assert len(after) == len(before) == 4 and len(set(after) & set(before)) == 3  # one entry replaced


def test_a_damaged_or_misplaced_pack_line_is_a_miss(tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path, 2)
    cold = run(root, use_cache=True, jobs=1)
    folder = _cache_folder(root)
    for entry in folder.glob("??/*.json"):
        entry.unlink()
    lines = (folder / "pack.txt").read_bytes().splitlines()
    [first] = [line for line in lines if b"flow_0.py" in line]
    [second] = [line for line in lines if b"flow_1.py" in line]
    key_1, _, entry_1 = first.partition(b" ")
    key_2, _, entry_2 = second.partition(b" ")
    others = [line for line in lines if line not in (first, second)]
    # Entry 1 under key 2 (a poisoned pack hiding flow_1's findings behind flow_0's), entry 2 cut short.
    damaged = [key_2 + b" " + entry_1, key_1 + b" " + entry_2[:40], *others]
    (folder / "pack.txt").write_bytes(b"\n".join(damaged) + b"\n")
    parsed: list[str] = []
    original = summarise.summarise_source
    monkeypatch.setattr(summarise, "summarise_source", lambda *a: parsed.append(Path(a[1]).name) or original(*a))
    assert as_rows(run(root, use_cache=True, jobs=1)) == as_rows(cold)
    assert sorted(parsed) == ["flow_0.py", "flow_1.py"]
