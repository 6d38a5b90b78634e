"""Benchmark of ``exclude`` with many patterns: ``replaytest lint`` against ruff on the same tree.

Generated projects carry long ``exclude`` lists (one entry per generated or vendored file). Each pattern
used to be matched against every trailing part of every path one by one, so a walk cost
files x patterns x depth; ``path_patterns.ExcludeMatcher`` compiles them once (sets for the plain paths and
names, ``pathspec``'s gitignore matcher for the few wildcard patterns). The script builds a tree of ``--files`` small modules, writes
``--patterns`` literal entries (paths of files that do not exist, as a stale generated list has) plus a
few globs into ``[tool.replaytest] exclude`` and ruff's ``extend-exclude``, and times, interleaved and
best of ``--repeat``: ``replaytest lint --no-cache`` and ``ruff check --no-cache`` (the peer).

Usage: ``python benchmarks/exclude_bench.py [--files 400] [--patterns 20000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, files: int, patterns: int) -> None:
    for index in range(files):
        path = root / f"pkg{index % 20}" / f"mod{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{index}(x):\n    return x + {index}\n", encoding="utf-8")
    entries = [f"generated/area{i % 97}/module{i}.py" for i in range(patterns)] + ["*_pb2.py", "**/build", "pkg3"]
    listed = ",\n  ".join(f'"{entry}"' for entry in entries)
    (root / "pyproject.toml").write_text(
        f"[tool.replaytest]\nexclude = [\n  {listed}\n]\n\n[tool.ruff]\nextend-exclude = [\n  {listed}\n]\n",
        encoding="utf-8",
    )


def timed(command: list[str], cwd: Path) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, completed.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--patterns", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    commands = {
        "replaytest lint --no-cache": [sys.executable, "-m", "replaytest", "lint", "--no-cache", "--jobs", "1", "."],
        "ruff check --no-cache": [ruff, "check", "--no-cache", "--select", "E9", "--quiet", "."],
    }
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, args.files, args.patterns)
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for name, command in commands.items():
                wall, cpu, code = timed(command, root)
                if code not in (0, 1):
                    print(f"{name} exited {code}", file=sys.stderr)
                    return 2
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu)
    load = os.getloadavg()[0]
    print(f"{args.files} files, {args.patterns + 3} exclude patterns, best of {args.repeat} (load {load:.1f})")
    for name, (wall, cpu) in best.items():
        print(f"  {name:<28} wall {wall:6.2f} s  cpu {cpu:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
