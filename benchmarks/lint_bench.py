"""Benchmark of ``replaytest lint`` on a realistic corpus of at least 500 files.

The corpus is built in a temporary directory (or taken from ``--corpus``): a deterministic selection of
standard-library modules (library code the analyzer must screen out cheaply) plus generated service
packages (``orchestration_corpus.py``): per package a Temporal workflows module and a DBOS flows module of
150-400 lines (the orchestration code, about 15 % of all files), activities, and a helpers module the
workflows call into. Measured:

* the real command line: cold (empty cache), warm (cache filled), ``--no-cache``; wall and CPU time
  (user + system of the process and its workers), best of ``--repeat`` runs;
* the engine in-process (``replaytest.lint.engine.lint_paths`` after a warm-up run, so interpreter
  start-up and imports are excluded): ``jobs=1`` and the default job count, without cache, and warm;
* the yardstick: bare ``libcst.parse_module`` over (a) every file, (b) the files containing
  orchestration code, (c) every file the engine actually parsed (orchestration modules, activities and
  the helpers reached from them; recorded in-process).

The acceptance target is a whole-run cost within 2x of (b); the ratios are printed.

``--peer DIR`` instead times replaytest next to ``temporalint`` (an ``ast``-based Temporal linter,
installed separately: it is a benchmark peer, not a dependency) on a real project, in the same run,
and prints the three speed targets: cold CPU at most 2x temporalint's, a warm run at most 0.3 s, and
the default (parallel) mode never slower than ``--jobs 1``.

Usage: ``python benchmarks/lint_bench.py [--stdlib-files 375] [--packages 45] [--repeat 3] [--corpus DIR]``
or ``python benchmarks/lint_bench.py --peer PATH/TO/samples-python [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from orchestration_corpus import ORCHESTRATION_FILES, write_package


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


def build_corpus(root: Path, stdlib_files: int, packages: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    stdlib_root = Path(sysconfig.get_paths()["stdlib"])
    for source in pick_stdlib_files(stdlib_files):
        target = root / "stdlib_copy" / source.relative_to(stdlib_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for index in range(packages):
        write_package(root, index)


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


def run_peer(corpus: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and the finding count of one ``temporalint`` run over ``corpus``."""
    executable = shutil.which("temporalint")
    if executable is None:
        raise SystemExit("temporalint is not installed: python -m pip install temporalint")
    cpu_before = _children_cpu()
    started = time.perf_counter()
    completed = subprocess.run([executable, "."], cwd=corpus, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    findings = sum(1 for line in completed.stdout.splitlines() if line.strip() and ":" in line)
    return elapsed, _children_cpu() - cpu_before, findings


def compile_bytecode() -> str:
    """Write replaytest's bytecode as an installation does: pip compiles the peer's at install time, while
    an editable checkout under PYTHONDONTWRITEBYTECODE would recompile replaytest's modules on every run
    (0.07 s CPU a run, measured). Returns what was done, for the report."""
    import compileall

    import replaytest

    package = Path(replaytest.__file__).parent
    compileall.compile_dir(package, quiet=1)
    return f"replaytest bytecode compiled ({package.name}/, as pip install does)"


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def peer_targets(corpus: Path, repeat: int) -> None:
    """replaytest and temporalint on the same real corpus, one run, the three targets judged.

    The measurements are interleaved (each round runs every one once: the peer, replaytest cold with an
    emptied cache, warm right after it, then without cache serially and with the default workers), so a
    change of the machine's load during the run affects all of them alike; the fastest round of each is
    kept, and the median printed beside it (on a shared machine the spread is wide). CPU is user +
    system time of the process and every child it waited for (workers, bounded parses, git):
    ``RUSAGE_CHILDREN`` of this process."""
    note = compile_bytecode()
    names = ["temporalint", "replaytest cold (empty cache)", "replaytest warm (cache)",
             "replaytest --no-cache --jobs 1", "replaytest --no-cache (default jobs)"]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    loads: dict[str, list[float]] = {name: [] for name in names}
    reports: dict[str, list[dict]] = {name: [] for name in names[1:]}
    peer_findings = 0
    for _ in range(repeat):
        for name in names:
            loads[name].append(_load())
            if name == "temporalint":
                wall, cpu, peer_findings = run_peer(corpus)
                runs[name].append((wall, cpu))
                continue
            if name.startswith("replaytest cold"):
                shutil.rmtree(corpus / ".replaytest_cache", ignore_errors=True)
            options = {"replaytest cold (empty cache)": (), "replaytest warm (cache)": (),
                       "replaytest --no-cache --jobs 1": ("--no-cache", "--jobs", "1"),
                       "replaytest --no-cache (default jobs)": ("--no-cache",)}[name]
            wall, cpu, report = run_lint(corpus, *options)
            runs[name].append((wall, cpu))
            reports[name].append(report)
    first = reports[names[1]][0]
    assert all(report == first for done in reports.values() for report in done), "runs disagree"
    best = {name: (min(r[0] for r in done), min(r[1] for r in done)) for name, done in runs.items()}
    files = sum(1 for _ in corpus.rglob("*.py"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; corpus {corpus.name} ({files} .py files); "
          f"best of {repeat} interleaved rounds; {note}")
    print(f"{'run':<38}{'wall s':>8}{'cpu s':>8}{'median':>14}   load average (1 min) at its rounds")
    for name in names:
        shown = " ".join(f"{load:.1f}" for load in loads[name])
        middle = (statistics.median(r[0] for r in runs[name]), statistics.median(r[1] for r in runs[name]))
        print(f"{name:<38}{best[name][0]:>8.2f}{best[name][1]:>8.2f}{middle[0]:>8.2f}{middle[1]:>6.2f}   {shown}")
    print(f"findings: temporalint {peer_findings} lines, replaytest {first['summary']['diagnostics']}")
    peer, cold, warm = best["temporalint"], best[names[1]], best[names[2]]
    serial, default = best[names[3]], best[names[4]]
    verdict = {True: "met", False: "NOT MET"}
    print(f"target cold CPU <= 2x temporalint: {cold[1]:.2f} s / {peer[1]:.2f} s = {cold[1] / peer[1]:.2f}x  "
          f"{verdict[cold[1] <= 2 * peer[1]]}")
    print(f"target warm <= 0.3 s: {warm[0]:.2f} s  {verdict[warm[0] <= 0.3]}")
    print(f"target parallel never slower than serial: {default[0]:.2f} s vs {serial[0]:.2f} s  "
          f"{verdict[default[0] <= serial[0] * 1.05]} (5 % measurement tolerance)")


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


def in_process(corpus: Path, repeat: int) -> dict[str, tuple[float, float]]:
    """Engine-only figures (no interpreter start-up): jobs=1 and default jobs without cache, then warm.
    Also records which files the engine parsed, by wrapping its per-file summariser (jobs=1 run)."""
    from replaytest.config import load_config
    from replaytest.lint import engine
    from replaytest.plugins import load_plugins

    config = load_config(corpus)
    profiles = [plugin.profile for plugin in load_plugins(config.frameworks) if plugin.profile]

    def measure(**options) -> tuple[float, float]:
        best = (float("inf"), float("inf"))
        for _ in range(repeat):
            cpu_before = time.process_time() + _children_cpu()
            started = time.perf_counter()
            engine.lint_paths([corpus], config, profiles, cwd=corpus, **options)
            best = (min(best[0], time.perf_counter() - started),
                    min(best[1], time.process_time() + _children_cpu() - cpu_before))
        return best

    measure(use_cache=False, jobs=1)  # warm-up: imports, rule tables, first-use caches
    parsed: list[str] = []
    original = engine.summarise_source

    def recording(context, path, *rest):
        parsed.append(path)
        return original(context, path, *rest)

    engine.summarise_source = recording
    try:
        engine.lint_paths([corpus], config, profiles, cwd=corpus, use_cache=False, jobs=1)
    finally:
        engine.summarise_source = original
    figures = {
        "jobs=1, no cache": measure(use_cache=False, jobs=1),
        "default jobs, no cache": measure(use_cache=False),
    }
    shutil.rmtree(corpus / config.cache_dir, ignore_errors=True)
    engine.lint_paths([corpus], config, profiles, cwd=corpus, use_cache=True, jobs=1)
    figures["jobs=1, warm cache"] = measure(use_cache=True, jobs=1)
    figures["parsed"] = sorted(set(parsed))  # type: ignore[assignment]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib-files", type=int, default=375)
    parser.add_argument("--packages", type=int, default=45, help="generated service packages (2 orchestration modules each)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is kept")
    parser.add_argument("--corpus", type=Path, help="lint this directory instead of building one")
    parser.add_argument("--peer", type=Path, help="time replaytest next to temporalint on this real project")
    args = parser.parse_args()
    if args.peer:
        peer_targets(args.peer.resolve(), args.repeat)
        return

    with tempfile.TemporaryDirectory(prefix="replaytest-bench-") as scratch:
        corpus = args.corpus.resolve() if args.corpus else Path(scratch) / "corpus"
        if not args.corpus:
            build_corpus(corpus, args.stdlib_files, args.packages)
        files = sorted(corpus.rglob("*.py"))
        orchestration = [p for p in files if p.name in ORCHESTRATION_FILES and p.parent.name.startswith("svc_")]

        no_cache = best_lint(corpus, args.repeat, "--no-cache")
        cold = best_lint(corpus, args.repeat, clear_cache=True)
        warm = best_lint(corpus, args.repeat)
        assert warm[2] == cold[2] == no_cache[2], "cached and uncached runs disagree"
        engine_figures = in_process(corpus, args.repeat)
        parsed = [Path(p) for p in engine_figures.pop("parsed")]  # type: ignore[union-attr]
        parse_all = parse_time(files)
        parse_orch = parse_time(orchestration)
        parse_parsed = parse_time(parsed)

        def size(subset: list[Path]) -> tuple[int, float]:
            return len(subset), sum(path.read_bytes().count(b"\n") for path in subset) / 1000

        summary = no_cache[2]["summary"]
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        count, kloc = size(files)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f}, "
              f"corpus {corpus if args.corpus else '(temporary)'}")
        print(f"files {count}, {kloc:.1f} kLOC; orchestration modules {len(orchestration)} "
              f"({100 * len(orchestration) / count:.0f} %, {size(orchestration)[1]:.1f} kLOC); "
              f"engine parsed {len(parsed)} files; lint checked {summary['files']} files, "
              f"{summary['diagnostics']} diagnostics")
        rows = [
            ("CLI lint cold (empty cache)", cold[:2], size(files)),
            ("CLI lint warm (cache)", warm[:2], size(files)),
            ("CLI lint --no-cache", no_cache[:2], size(files)),
        ] + [(f"in-process {name}", figure, size(files)) for name, figure in engine_figures.items()] + [
            ("libcst parse (a) all files", parse_all[:2], size(files)),
            ("libcst parse (b) orchestration files", parse_orch[:2], size(orchestration)),
            ("libcst parse (c) files engine parsed", parse_parsed[:2], size(parsed)),
        ]
        print(f"{'run':<40}{'files':>6}{'kLOC':>7}{'wall s':>8}{'cpu s':>8}{'files/s':>9}{'kLOC/s':>8}"
              "   (rates from wall time)")
        for name, (wall, cpu), (n, k) in rows:
            print(f"{name:<40}{n:>6}{k:>7.1f}{wall:>8.2f}{cpu:>8.2f}{n / wall:>9.0f}{k / wall:>8.1f}")
        print("ratios to bare parsing (wall / cpu):")
        for name, (wall, cpu), _ in rows[:-3]:
            print(f"  {name:<38} / (b) {wall / parse_orch[0]:5.2f} / {cpu / parse_orch[1]:5.2f}"
                  f"    / (c) {wall / parse_parsed[0]:5.2f} / {cpu / parse_parsed[1]:5.2f}")
        if parse_all[2]:
            print(f"(libcst could not parse {parse_all[2]} corpus files)")

if __name__ == "__main__":
    main()
