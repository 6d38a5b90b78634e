"""Benchmark of ``replaytest lint`` on a corpus of at least 500 files.

The corpus is built in a temporary directory (or taken from ``--corpus``): a deterministic selection of
standard-library modules (ordinary code the analyzer must screen quickly) plus generated orchestration
packages — Temporal and DBOS workflows that call helpers across modules, some of which read the clock —
making up roughly 15 % of the files. The script times the real command line:

* cold: empty cache directory (summaries computed and written),
* warm: the same command again (summaries read from the cache),
* no-cache: ``--no-cache`` (computed, nothing written),

and, as the yardstick, bare ``libcst.parse_module`` over (a) every file, (b) only the files that contain
orchestration code and (c) the generated orchestration packages (orchestration modules plus the helpers
they reach, the least an analyzer following calls must parse). An analyzer that screens well costs far
less than parsing everything.

Both wall time and CPU time (user + system, of the lint subprocess or of this process for parsing) are
printed: on a shared machine CPU time is the steadier figure. Lint runs are repeated (``--repeat``) and
the fastest run is kept.

Usage: ``python benchmarks/lint_bench.py [--stdlib-files 450] [--orchestration-packages 7] [--repeat 3]
[--corpus DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ORCHESTRATION_MARKERS = (b"@workflow.defn", b"@DBOS.workflow")


def pick_stdlib_files(count: int) -> list[Path]:
    """``count`` stdlib modules, spread over the whole library (every k-th file in sorted order),
    skipping test data that is deliberately not valid Python 3."""
    root = Path(sysconfig.get_paths()["stdlib"])
    candidates = sorted(
        path for path in root.rglob("*.py")
        if "site-packages" not in path.parts and "lib2to3" not in path.parts and "__pycache__" not in path.parts
        and "bad" not in path.name and path.stat().st_size < 400_000
    )
    step = max(1, len(candidates) // count)
    return candidates[::step][:count]


def write_orchestration_package(root: Path, index: int, helpers: int = 8) -> int:
    """One package: helper modules (odd ones read the clock, every third one calls the next module),
    a Temporal workflow module, a DBOS workflow module and activities/steps. Returns files written."""
    package = root / f"orch_{index:02d}"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""Generated orchestration package {index}."""\n', encoding="utf-8")
    for number in range(helpers):
        calls_next = number % 3 == 0 and number + 1 < helpers
        lines = [f'"""Helpers {number} of package {index}."""', "import os", "import time"]
        if calls_next:
            lines.append(f"from orch_{index:02d}.helpers_{number + 1} import compute_{number + 1}")
        lines += ["", "", f"def compute_{number}(value: int) -> float:"]
        if calls_next:
            lines.append(f"    value = int(compute_{number + 1}(value))")
        lines.append("    return value + time.time()" if number % 2 else "    return value * 1.5")
        lines += ["", "", f"def region_{number}() -> str:", '    return os.environ.get("REGION", "eu")', ""]
        for extra in range(12):
            lines += [f"def pure_{number}_{extra}(items: list[int]) -> int:",
                      f"    total = {extra}", "    for item in sorted(items):", "        total += item * 2",
                      "    return total", "", ""]
        (package / f"helpers_{number}.py").write_text("\n".join(lines), encoding="utf-8")
    imports = "\n".join(f"    from orch_{index:02d}.helpers_{n} import compute_{n}, region_{n}" for n in range(helpers))
    calls = "\n".join(f"        total += compute_{n}(value)" for n in range(helpers))
    (package / "workflows.py").write_text(
        f'"""Temporal workflows of package {index}."""\n'
        "from datetime import timedelta\n\nfrom temporalio import workflow\n\n"
        f"with workflow.unsafe.imports_passed_through():\n{imports}\n"
        f"    from orch_{index:02d} import activities\n\n\n"
        "@workflow.defn\nclass Pipeline:\n    @workflow.run\n    async def run(self, value: int) -> float:\n"
        "        total = 0.0\n" + calls + "\n"
        "        region = region_0()\n"
        "        total += await workflow.execute_activity(activities.fetch, value,"
        " start_to_close_timeout=timedelta(seconds=5))\n"
        "        return total if region else 0.0\n",
        encoding="utf-8",
    )
    (package / "activities.py").write_text(
        f'"""Activities of package {index}."""\nimport time\nimport uuid\n\nfrom temporalio import activity\n\n\n'
        "@activity.defn\nasync def fetch(value: int) -> float:\n"
        "    return value + time.time() + len(str(uuid.uuid4()))\n",
        encoding="utf-8",
    )
    (package / "billing.py").write_text(
        f'"""DBOS workflow of package {index}."""\nimport random\n\nfrom dbos import DBOS\n\n'
        f"from orch_{index:02d}.helpers_1 import compute_1\n\n\n"
        "@DBOS.step()\ndef charge(amount: float) -> float:\n    return amount * random.random()\n\n\n"
        "@DBOS.workflow()\ndef bill(value: int) -> float:\n"
        "    amount = compute_1(value)\n    DBOS.sleep(1)\n    return charge(amount)\n",
        encoding="utf-8",
    )
    return helpers + 4


def build_corpus(root: Path, stdlib_files: int, packages: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    stdlib_root = Path(sysconfig.get_paths()["stdlib"])
    for source in pick_stdlib_files(stdlib_files):
        target = root / "stdlib_copy" / source.relative_to(stdlib_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for index in range(packages):
        write_orchestration_package(root, index)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_lint(corpus: Path, *options: str) -> tuple[float, float, dict]:
    """Wall seconds, CPU seconds (the subprocess and its workers) and the JSON report of one run."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "lint", "--format", "json", *options, "."],
        cwd=corpus, capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    if completed.returncode not in (0, 1):
        sys.stderr.write(completed.stderr[-3000:])
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"lint exited {completed.returncode} without JSON:\n{completed.stderr[-3000:]}")
    return elapsed, cpu, report


def best_lint(corpus: Path, repeat: int, *options: str, clear_cache: bool = False) -> tuple[float, float, dict]:
    runs = []
    for _ in range(repeat):
        if clear_cache:
            shutil.rmtree(corpus / ".replaytest_cache", ignore_errors=True)
        runs.append(run_lint(corpus, *options))
    wall = min(run[0] for run in runs)
    cpu = min(run[1] for run in runs)
    reports = [run[2] for run in runs]
    assert all(report == reports[0] for report in reports), "repeated runs disagree"
    return wall, cpu, reports[0]


def parse_time(files: list[Path]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and failures of ``libcst.parse_module`` over ``files``."""
    import libcst

    failures = 0
    cpu_started = time.process_time()
    started = time.perf_counter()
    for path in files:
        try:
            libcst.parse_module(path.read_bytes())
        except Exception:  # a file libcst rejects still cost the attempt; count it
            failures += 1
    return time.perf_counter() - started, time.process_time() - cpu_started, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib-files", type=int, default=450)
    parser.add_argument("--orchestration-packages", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="lint runs per measurement; the fastest is kept")
    parser.add_argument("--corpus", type=Path, help="lint this directory instead of building one")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="replaytest-bench-") as scratch:
        corpus = args.corpus.resolve() if args.corpus else Path(scratch) / "corpus"
        if not args.corpus:
            build_corpus(corpus, args.stdlib_files, args.orchestration_packages)
        files = sorted(corpus.rglob("*.py"))
        lines = sum(path.read_bytes().count(b"\n") for path in files)
        orchestration = [p for p in files if any(m in p.read_bytes() for m in ORCHESTRATION_MARKERS)]
        kloc = lines / 1000

        packages = [p for p in files if p.relative_to(corpus).parts[0].startswith("orch_")]

        no_cache = best_lint(corpus, args.repeat, "--no-cache")
        cold = best_lint(corpus, args.repeat, clear_cache=True)
        warm = best_lint(corpus, args.repeat)
        assert warm[2] == cold[2] == no_cache[2], "cached and uncached runs disagree"
        parse_all = parse_time(files)
        parse_orch = parse_time(orchestration)
        parse_packages = parse_time(packages)

        summary = no_cache[2]["summary"]
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f}, "
              f"corpus {corpus if args.corpus else '(temporary)'}")
        print(f"files {len(files)} ({len(orchestration)} with orchestration code, {len(packages)} in orchestration "
              f"packages), {kloc:.1f} kLOC; lint checked {summary['files']} files, {summary['diagnostics']} diagnostics")
        def size(subset: list[Path]) -> tuple[int, float]:
            return len(subset), sum(path.read_bytes().count(b"\n") for path in subset) / 1000

        rows = (
            ("lint cold (empty cache)", cold, size(files)),
            ("lint warm (cache)", warm, size(files)),
            ("lint --no-cache", no_cache, size(files)),
            ("libcst.parse_module (a) all files", parse_all, size(files)),
            ("libcst.parse_module (b) orch. files", parse_orch, size(orchestration)),
            ("libcst.parse_module (c) orch. pkgs", parse_packages, size(packages)),
        )
        print(f"{'run':<36}{'files':>6}{'kLOC':>7}{'wall s':>8}{'cpu s':>8}{'files/s':>9}{'kLOC/s':>8}"
              "   (rates from wall time)")
        for name, (wall, cpu, _), (count, subset_kloc) in rows:
            print(f"{name:<36}{count:>6}{subset_kloc:>7.1f}{wall:>8.2f}{cpu:>8.2f}"
                  f"{count / wall:>9.0f}{subset_kloc / wall:>8.1f}")
        for label, (wall, cpu, _) in (("(a) all", parse_all), ("(b) orch. files", parse_orch),
                                       ("(c) orch. packages", parse_packages)):
            print(f"ratio lint cold / parse {label}: wall {cold[0] / wall:.2f}, cpu {cold[1] / cpu:.2f}")
        print(f"ratio lint warm / parse (c) orch. packages: wall {warm[0] / parse_packages[0]:.2f}, "
              f"cpu {warm[1] / parse_packages[1]:.2f}")
        if parse_all[2]:
            print(f"(libcst could not parse {parse_all[2]} corpus files)")

if __name__ == "__main__":
    main()
