"""Benchmark of ``replaytest lint`` on a corpus of at least 500 files.

The corpus is built in a temporary directory (or taken from ``--corpus``): a deterministic selection of
standard-library modules (ordinary code the analyzer must screen quickly) plus generated orchestration
packages — Temporal and DBOS workflows that call helpers across modules, some of which read the clock —
making up roughly 15 % of the files. The script times the real command line:

* cold: empty cache directory (summaries computed and written),
* warm: the same command again (summaries read from the cache),
* no-cache: ``--no-cache`` (computed, nothing written),

and, as the yardstick, bare ``libcst.parse_module`` over (a) every file and (b) only the files that contain
orchestration code. An analyzer that screens well costs far less than parsing everything.

Usage: ``python benchmarks/lint_bench.py [--stdlib-files 450] [--orchestration-packages 8] [--corpus DIR]``
"""

from __future__ import annotations

import argparse
import json
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
    (root / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    stdlib_root = Path(sysconfig.get_paths()["stdlib"])
    for source in pick_stdlib_files(stdlib_files):
        target = root / "stdlib_copy" / source.relative_to(stdlib_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for index in range(packages):
        write_orchestration_package(root, index)


def run_lint(corpus: Path, *options: str) -> tuple[float, dict]:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "lint", "--format", "json", *options, "."],
        cwd=corpus, capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        sys.stderr.write(completed.stderr[-3000:])
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"lint exited {completed.returncode} without JSON:\n{completed.stderr[-3000:]}")
    return elapsed, report


def parse_time(files: list[Path]) -> tuple[float, int]:
    import libcst

    failures = 0
    started = time.perf_counter()
    for path in files:
        try:
            libcst.parse_module(path.read_bytes())
        except Exception:  # a file libcst rejects still cost the attempt; count it
            failures += 1
    return time.perf_counter() - started, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib-files", type=int, default=450)
    parser.add_argument("--orchestration-packages", type=int, default=7)
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

        cache = corpus / ".replaytest_cache"
        shutil.rmtree(cache, ignore_errors=True)
        no_cache_s, report = run_lint(corpus, "--no-cache")
        cold_s, cold_report = run_lint(corpus)
        warm_s, warm_report = run_lint(corpus)
        assert warm_report == cold_report == report, "cached and uncached runs disagree"
        parse_all_s, parse_failures = parse_time(files)
        parse_orch_s, _ = parse_time(orchestration)

        summary = report["summary"]
        print(f"python {sys.version.split()[0]}  corpus {corpus if args.corpus else '(temporary)'}")
        print(f"files {len(files)} (orchestration {len(orchestration)}), {kloc:.1f} kLOC, "
              f"files reported by lint: {summary['files']}, diagnostics {summary['diagnostics']}")
        print(f"{'run':<28}{'seconds':>9}{'files/s':>10}{'kLOC/s':>9}")
        for name, seconds in (("lint cold (cache empty)", cold_s), ("lint warm (cache)", warm_s),
                              ("lint --no-cache", no_cache_s),
                              ("libcst.parse_module, all", parse_all_s),
                              ("libcst.parse_module, orch.", parse_orch_s)):
            print(f"{name:<28}{seconds:>9.2f}{len(files) / seconds:>10.0f}{kloc / seconds:>9.1f}")
        print(f"ratio lint cold / parse all:  {cold_s / parse_all_s:.2f}")
        print(f"ratio lint cold / parse orch: {cold_s / parse_orch_s:.2f}")
        print(f"ratio lint warm / parse orch: {warm_s / parse_orch_s:.2f}")
        if parse_failures:
            print(f"(libcst could not parse {parse_failures} corpus files)")


if __name__ == "__main__":
    main()
