"""Mutation check: plant one deliberate bug at a time and count the tests that catch it.

Each mutation is a textual edit of one file (the old text must occur exactly once). It is applied to a
fresh copy of the project in a temporary folder, never to this tree; the copy is imported first
(``PYTHONPATH``, which also reaches the subprocesses tests start), the tests that concern the mutation
run there, and the copy is deleted. A mutation caught by fewer than two tests is a gap.

    python benchmarks/mutation_check.py                 # every mutation, markdown table on stdout
    python benchmarks/mutation_check.py --only sarif    # mutations whose name contains "sarif"
    python benchmarks/mutation_check.py --list
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_IGNORED = shutil.ignore_patterns(".git", ".venv*", "__pycache__", ".replaytest_cache", ".pytest_cache",
                                  ".mypy_cache", ".ruff_cache", "*.egg-info", ".hypothesis")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("sarif: drop ruleIndex", "replaytest/lint/reporters/sarif.py",
             '            "ruleIndex": index.get(d.rule, -1),\n', "",
             ("tests/lint/test_sarif.py",)),
    Mutation("sarif: ruleIndex off by one", "replaytest/lint/reporters/sarif.py",
             '"ruleIndex": index.get(d.rule, -1),', '"ruleIndex": index.get(d.rule, -1) + 1,',
             ("tests/lint/test_sarif.py",)),
    Mutation("RT101: drop time.process_time", "replaytest/lint/rules/rt101_clock.py",
             '"time.perf_counter_ns", "time.process_time", ', '"time.perf_counter_ns", ',
             ("tests/lint/test_rule_tables.py", "tests/lint/test_rule_examples.py")),
    Mutation("RT101: drop time.thread_time", "replaytest/lint/rules/rt101_clock.py",
             '"time.thread_time",\n', "\n",
             ("tests/lint/test_rule_tables.py", "tests/lint/test_rule_examples.py")),
    Mutation("RT101: drop pendulum.now and arrow.now", "replaytest/lint/rules/rt101_clock.py",
             '"pendulum.now", "pendulum.today", "arrow.now",', '"pendulum.today",',
             ("tests/lint/test_rule_tables.py", "tests/lint/test_rule_examples.py")),
    Mutation("RT101: ctime with no argument accepted", "replaytest/lint/rules/rt101_clock.py",
             '_NOW_WITHOUT_ARGUMENT = {"time.localtime", "time.gmtime", "time.ctime", "time.asctime"}',
             '_NOW_WITHOUT_ARGUMENT = {"time.localtime", "time.gmtime", "time.asctime"}',
             ("tests/lint/test_rule_tables.py", "tests/lint/test_rule_examples.py")),
    Mutation("RT303: never applies", "replaytest/lint/rules/rt303_sleep.py",
             "return bool(profile.durable_sleeps) and effect.qualname not in profile.durable_sleeps",
             "return False",
             ("tests/lint/test_rule_tables.py", "tests/lint/test_rule_examples.py")),
    Mutation("history: save drops idempotency_key", "replaytest/history/io.py",
             '        out["idempotency_key"] = event.idempotency_key\n', "        pass\n",
             ("tests/history",)),
    Mutation("history: JSON path names the wrong key", "replaytest/history/io.py",
             'return f"{path}.{key}" if _plain(key)', 'return f"{path}.{key}x" if _plain(key)',
             ("tests/history",)),
    Mutation("baseline: count always 1", "replaytest/lint/filtering.py",
             '"fingerprint": f, "count": n}', '"fingerprint": f, "count": 1}',
             ("tests/lint/test_baseline_cache.py", "tests/test_second_pins.py")),
    Mutation("baseline: recorded count not used up", "replaytest/lint/filtering.py",
             "            remaining[key] -= 1\n", "",
             ("tests/lint/test_baseline_cache.py", "tests/test_second_pins.py")),
    Mutation("replay: stale history exits 0", "replaytest/cli/replay_command.py",
             'if counts["stale"] or counts["error"]:', 'if counts["error"]:',
             ("tests/replay/test_cli.py", "tests/test_second_pins.py", "tests/test_cli_check.py")),
    Mutation("github: % not escaped", "replaytest/lint/reporters/github.py",
             'return value.replace("%", "%25").replace("\\r", "%0D")', 'return value.replace("\\r", "%0D")',
             ("tests/lint/test_github_format.py", "tests/test_second_pins.py")),
    Mutation("check json: replay half empty", "replaytest/cli/check_commands.py",
             '"replay": {**report_data(results), "skipped"',
             '"replay": {**report_data([]), "skipped"',
             ("tests/test_cli_check.py", "tests/test_second_pins.py")),
    Mutation("fix: remaining count off by one", "replaytest/lint/fix_runner.py",
             "        remaining = list(result.diagnostics)\n",
             "        remaining = list(result.diagnostics)[1:]\n",
             ("tests/test_readme.py", "tests/test_second_pins.py")),
    Mutation("discovery: no namespace-package names", "replaytest/lint/discovery.py",
             "        for source_root in self._source_roots:\n"
             "            parts = _relative_parts(path, source_root)",
             "        for source_root in ():\n"
             "            parts = _relative_parts(path, source_root)",
             ("tests/lint/test_import_roots.py", "tests/test_readme.py")),
    Mutation("discovery: no automatic source roots", "replaytest/lint/discovery.py",
             "        if top_name in _STDLIB_MODULES:\n            return []\n",
             "        return []\n",
             ("tests/lint/test_import_roots.py",)),
    Mutation("discovery: every unresolved import noted per name chain", "replaytest/lint/discovery.py",
             "            if not any(name.startswith(f\"{shorter}.\") for shorter in kept):\n",
             "            if True:\n",
             ("tests/lint/test_import_roots.py",)),
    Mutation("discovery: standard library looked up in the project", "replaytest/lint/discovery.py",
             "_STDLIB_MODULES = frozenset(getattr(sys, \"stdlib_module_names\", ())) | frozenset(sys.builtin_module_names)",
             "_STDLIB_MODULES: frozenset[str] = frozenset()",
             ("tests/lint/test_import_roots.py",)),
    Mutation("notes: classes of resolved modules noted as missing modules", "replaytest/lint/engine.py",
             "namer.unresolved_project_modules(_missing_modules(program))",
             "namer.unresolved_project_modules(program.unresolved)",
             ("tests/lint/test_import_roots.py", "tests/test_readme.py")),
    Mutation("config: root without pyproject is the linted folder", "replaytest/config.py",
             "        return Config(root=project_root_without_pyproject(start or Path.cwd()))",
             "        return Config(root=(start or Path.cwd()).resolve())",
             ("tests/lint/test_import_roots.py", "tests/test_readme.py")),
    Mutation("check: pytest ini replay_paths ignored", "replaytest/replay/settings.py",
             "    if ini.paths:\n", "    if False:\n",
             ("tests/replay/test_replay_settings.py", "tests/test_readme.py")),
    Mutation("temporal tests vanish without temporalio", "tests/temporal/conftest.py",
             "if str(HERE) not in sys.path:\n",
             "try:\n    import temporalio  # noqa: F401\nexcept ImportError:\n"
             "    collect_ignore_glob = ['test_*.py']\nif str(HERE) not in sys.path:\n",
             ("tests/test_test_dependencies.py",)),
)


def _copy() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="replaytest-mutant-"))
    shutil.copytree(ROOT, folder / "project", ignore=_IGNORED)
    return folder / "project"


def _apply(project: Path, mutation: Mutation) -> None:
    target = project / mutation.path
    text = target.read_text(encoding="utf-8")
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(f"{mutation.name}: the text to replace occurs {count} times in {mutation.path}")
    target.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")


def _environment(project: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), environment.get("PYTHONPATH", "")]))
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def _imports_the_copy(project: Path) -> bool:
    probe = subprocess.run([sys.executable, "-c", "import replaytest; print(replaytest.__file__)"],
                           cwd=project, env=_environment(project), capture_output=True, text=True, timeout=60)
    return probe.stdout.strip().startswith(str(project))


def run(mutation: Mutation) -> tuple[int, list[str], float]:
    """(number of failing tests, their ids, seconds) for one mutation, on a fresh copy."""
    project = _copy()
    try:
        if not _imports_the_copy(project):
            raise SystemExit("the copy is not what `import replaytest` loads; is PYTHONPATH overridden?")
        _apply(project, mutation)
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--no-header", *mutation.tests],
            cwd=project, env=_environment(project), capture_output=True, text=True, timeout=1800,
        )
        elapsed = time.perf_counter() - started
        failed = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+)", completed.stdout, flags=re.M)))
        return len(failed), failed, elapsed
    finally:
        shutil.rmtree(project.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only mutations whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    options = parser.parse_args()
    chosen = [m for m in MUTATIONS if options.only.lower() in m.name.lower()]
    if options.list:
        for mutation in chosen:
            print(f"{mutation.name}  ({mutation.path}; {' '.join(mutation.tests)})")
        return
    print(f"load: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} CPUs", file=sys.stderr)
    print("| mutation | file | caught by | seconds |\n|---|---|---|---|")
    gaps = 0
    for mutation in chosen:
        count, failed, elapsed = run(mutation)
        gaps += count < 2
        print(f"| {mutation.name} | {mutation.path} | {count} | {elapsed:.0f} |", flush=True)
        for test in failed:
            print(f"|   | | {test} | |", file=sys.stderr, flush=True)
    print(f"\n{len(chosen)} mutations, {gaps} caught by fewer than two tests", flush=True)
    sys.exit(1 if gaps else 0)


if __name__ == "__main__":
    main()
