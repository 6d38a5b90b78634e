"""Robustness run: lint the whole standard library of the running interpreter and a copy of its
site-packages, and print files, diagnostics, files that could not be checked, internal errors and time.

The standard library is linted in place (from an empty working directory with its own empty
``[tool.replaytest]`` table, so no project configuration applies); site-packages is copied into a
temporary directory first for the same reason. Internal errors (a rule or the engine failing on a file)
are diagnostics whose message starts with "internal error" (category ``syntax``, counted in
``summary.errors``); tracebacks on stderr are counted too. Any of them is a bug to report with the file
path, which is printed.

``--summarise-all`` additionally runs the engine's per-file summariser (parse + the batched rule pass,
``replaytest.lint.engine.summarise_source``) on every file, screened or not, in a process pool: the CLI
screens most library files out, so this is what shows whether the collector survives all real-world code.

Usage: ``python benchmarks/lint_corpus.py [--skip-site-packages] [--no-cache] [--summarise-all]``
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path


def lint(target: Path, cwd: Path, no_cache: bool) -> dict:
    # A corpus (the stdlib, site-packages) is linted whole: a .gitignore above it must not leave it out.
    options = ["--no-respect-gitignore", *(["--no-cache"] if no_cache else [])]
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "lint", "--format", "json", *options, str(target)],
        cwd=cwd, capture_output=True, text=True, errors="replace",
    )
    seconds = time.perf_counter() - started
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError:
        report = {"diagnostics": [], "summary": {}}
    return {"report": report, "seconds": seconds, "exit": completed.returncode, "stderr": completed.stderr}


def describe(name: str, target: Path, outcome: dict) -> None:
    report, summary = outcome["report"], outcome["report"].get("summary", {})
    files_on_disk = sum(1 for _ in target.rglob("*.py"))
    by_category = collections.Counter(d["category"] for d in report["diagnostics"])
    tracebacks = outcome["stderr"].count("Traceback (most recent call last)")
    internal = [d for d in report["diagnostics"] if d["message"].lower().startswith("internal error")]
    print(f"== {name}: {target}")
    print(f"   .py files on disk {files_on_disk}, checked {summary.get('files', '?')}, "
          f"diagnostics {summary.get('diagnostics', len(report['diagnostics']))}, "
          f"not checked (errors) {summary.get('errors', '?')}, "
          f"internal errors {len(internal)}, tracebacks on stderr {tracebacks}")
    print(f"   exit {outcome['exit']}, {outcome['seconds']:.1f} s, "
          f"{files_on_disk / outcome['seconds']:.0f} files/s")
    print("   by category: " + ", ".join(f"{c} {n}" for c, n in sorted(by_category.items())))
    for diagnostic in internal[:20]:
        print(f"   internal error: {diagnostic['path']}:{diagnostic['line']}: {diagnostic['message']}")
    syntax = sorted({d["path"] for d in report["diagnostics"] if d["category"] == "syntax"} - {d["path"] for d in internal})
    if syntax:
        print(f"   syntax/undecodable files ({len(syntax)}): " + ", ".join(syntax[:8]) + (" …" if len(syntax) > 8 else ""))
    problem_lines = [line for line in outcome["stderr"].splitlines() if "internal" in line.lower() or "Error" in line]
    for line in problem_lines[:20]:
        print(f"   stderr: {line}")
    if not report["diagnostics"] and not summary:
        print(f"   no JSON report; stderr tail:\n{outcome['stderr'][-2000:]}")


_CONTEXT = None


def _init_summariser() -> None:
    global _CONTEXT
    from replaytest.config import Config
    from replaytest.lint.engine import build_context
    from replaytest.plugins import load_plugins

    config = Config()
    _CONTEXT = build_context(config, [plugin.profile for plugin in load_plugins() if plugin.profile])


def _summarise(path: str) -> tuple[str, str, str]:
    """(path, rule or "", message) of one file's summary: rule is set when the file could not be summarised."""
    from replaytest.lint.engine import summarise_source

    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return path, "unreadable", str(error)
    try:
        summary = summarise_source(_CONTEXT, path, Path(path).stem, Path(path).name == "__init__.py", data)
    except Exception as error:  # summarise_source promises never to raise; count it if it does
        return path, "raised", repr(error)
    if summary.error is not None:
        return path, summary.error.rule, summary.error.subject
    return path, "", ""


def _compiles(path: str) -> bool:
    try:
        compile(Path(path).read_bytes(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def summarise_all(name: str, target: Path) -> None:
    import multiprocessing

    files = sorted(str(path) for path in target.rglob("*.py") if path.is_file())
    started = time.perf_counter()
    with multiprocessing.Pool(initializer=_init_summariser) as pool:
        outcomes = pool.map(_summarise, files, chunksize=32)
    seconds = time.perf_counter() - started
    by_rule = collections.Counter(rule for _, rule, _ in outcomes if rule)
    print(f"== summarise every file of {name}: {len(files)} files in {seconds:.1f} s; "
          f"could not summarise: {dict(sorted(by_rule.items())) or 'none'}")
    syntax_messages = collections.Counter(message.split(":")[0] for _, rule, message in outcomes if rule == "RT001")
    if syntax_messages:
        print("   RT001 kinds: " + ", ".join(f"{kind} {n}" for kind, n in syntax_messages.most_common()))
    for path, rule, message in outcomes:
        # Every file the engine cannot summarise is listed; RT001 is expected for deliberately broken test
        # data, anything else (and RT001 on a file CPython compiles) is worth a bug report.
        if rule:
            compiles = _compiles(path)
            print(f"   {rule}: {path}: {message[:200]}" + ("   [CPython compiles this file]" if compiles else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-site-packages", action="store_true")
    parser.add_argument("--no-cache", action="store_true", help="pass --no-cache (the default uses a scratch cache)")
    parser.add_argument("--summarise-all", action="store_true", help="also summarise every file in-process")
    args = parser.parse_args()

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    with tempfile.TemporaryDirectory(prefix="replaytest-corpus-") as scratch:
        workdir = Path(scratch) / "work"
        workdir.mkdir()
        (workdir / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
        describe("standard library", stdlib, lint(stdlib, workdir, args.no_cache))
        if args.summarise_all:
            summarise_all("standard library", stdlib)
        if args.skip_site_packages:
            return
        for index, packages in enumerate(sorted({Path(p).resolve() for p in site.getsitepackages()})):
            if not packages.is_dir():
                continue
            copy = Path(scratch) / f"site-packages-{index}"
            shutil.copytree(packages, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            (copy / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
            describe(f"site-packages copy of {packages}", copy, lint(copy, copy, args.no_cache))
            if args.summarise_all:
                summarise_all(f"site-packages copy of {packages}", copy)


if __name__ == "__main__":
    main()
