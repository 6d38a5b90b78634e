"""What a rule reading libcst's tree costs a lint run: the built-in rules without RT303, with RT303 as the
``calls`` table it was, and with RT303 as it is (libcst matchers, ``Rule.uses_libcst``), on a real tree.

Each round starts one child process per mode, in alternating order; a child times ``lint_paths`` (``jobs=1``, no
cache, CPU time of the process) twice: the first run pays for first-use imports (the libcst mode imports libcst
before it, to count its parses: ``libcst_import`` is that import's CPU time, to add to its first run), the second
shows the steady cost. Best over ``--rounds``. The
child also counts the files whose libcst tree was built and returns RT303's findings, which must be the same for
the table and the libcst modes.

Measured (2026-12-07, samples-python e652a4d0, 785 files, two cores shared with other work, Python 3.11,
libcst 1.8), best of 3 rounds, CPU seconds of one run (RT303 finds nothing there: its workflows sleep with
Temporal's durable ``asyncio.sleep``, its activities are steps):

| mode | first run in a process | second run | files parsed by libcst |
|---|---|---|---|
| no RT303 | 0.25 | 0.23 | 0 |
| RT303 as a calls table | 0.25 | 0.24 | 0 |
| RT303 on libcst's tree | 0.65 | 0.40 | 11 |

The 11 files are the workflows that call a sleep outside steps (the rule asks ``facts.reportable_callees``
before reading the tree; without that, 26 files and 0.46 s; building the tree for each of the 42 files the
screen ``sleep`` selects, 0.68 s). Cached summaries (warm runs) pay nothing.

Usage: ``python benchmarks/libcst_rule_bench.py PATH/TO/samples-python [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

MODES = ("none", "table", "libcst")


def child(tree: Path, mode: str) -> dict:
    import ast

    from replaytest.config import load_config
    from replaytest.lint.engine import build_context, lint_paths
    from replaytest.lint.rule import CallFact
    from replaytest.lint.rules import BUILTIN_RULES
    from replaytest.lint.rules.rt303_sleep import SLEEPS, SleepsWithoutDurableTimer
    from replaytest.plugins import load_plugins

    class TableSleeps(SleepsWithoutDurableTimer):
        uses_libcst = False
        libcst_screen = ()
        libraries = ()
        calls = {name: "" for name in sorted(SLEEPS)}

        def accept_call(self, call: CallFact) -> bool:
            if call.qualname != "gevent.sleep" and call.positional:
                first = call.positional[0]
                return not (isinstance(first, ast.Constant) and type(first.value) in (int, float) and first.value == 0)
            return True

    if mode == "none":
        rules = tuple(rule for rule in BUILTIN_RULES if rule is not SleepsWithoutDurableTimer)
    elif mode == "table":
        rules = tuple(TableSleeps if rule is SleepsWithoutDurableTimer else rule for rule in BUILTIN_RULES)
    else:
        rules = BUILTIN_RULES
    parsed = [0]
    before_import = time.process_time()
    if mode == "libcst":
        # Counts the files whose tree is built (importing libcst before the first run: the first run's figure
        # of this mode leaves out that import, which the second run never pays anyway).
        import libcst

        original = libcst.parse_module

        def counting(text: str):  # type: ignore[no-untyped-def]
            parsed[0] += 1
            return original(text)

        libcst.parse_module = counting  # type: ignore[assignment]
    libcst_import = time.process_time() - before_import
    config = load_config(tree)
    plugins = load_plugins(config.frameworks)
    cpu = []
    findings: list = []
    for _ in range(2):
        started = time.process_time()
        context = build_context(config, plugins, rules)
        result = lint_paths([tree], config, plugins, use_cache=False, jobs=1, context=context, cwd=tree)
        cpu.append(time.process_time() - started)
        findings = sorted((d.path, d.line, d.column, d.message, d.fix is not None)
                          for d in result.diagnostics if d.rule == "RT303")
    return {"cpu": cpu, "parsed": parsed[0] // 2, "findings": findings, "files": result.files_checked,
            "libcst_import": libcst_import}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path, help="a real project tree (samples-python)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    options = parser.parse_args()
    tree = options.tree.resolve()
    if options.child:
        print(json.dumps(child(tree, options.child)))
        return
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for round_number in range(options.rounds):
        order = MODES if round_number % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            completed = subprocess.run([sys.executable, __file__, str(tree), "--child", mode], capture_output=True,
                                       text=True, check=False)
            if completed.returncode != 0:
                raise SystemExit(f"{mode}: {completed.stderr[-3000:]}")
            runs[mode].append(json.loads(completed.stdout.splitlines()[-1]))
    print(f"{tree.name}: {runs['none'][0]['files']} files; best of {options.rounds} rounds, CPU seconds of one run")
    print("| mode | first run in a process | second run | files parsed by libcst | RT303 findings |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        first = min(run["cpu"][0] + run["libcst_import"] for run in runs[mode])
        second = min(run["cpu"][1] for run in runs[mode])
        print(f"| {mode} | {first:.2f} | {second:.2f} | {runs[mode][0]['parsed']} | {len(runs[mode][0]['findings'])} |")
    same = runs["table"][0]["findings"] == runs["libcst"][0]["findings"]
    print(f"RT303 findings of the table and the libcst versions {'identical' if same else 'DIFFER'}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
