"""What a rule reading libcst's tree costs a lint run: the built-in rules without RT206 (the built-in rule written
with libcst matchers, ``Rule.uses_libcst``) and with it, the default, on a real tree and on a file that holds
RT206's pattern.

Each round starts one child process per mode and tree, in alternating order; a child times ``lint_paths``
(``jobs=1``, no cache, CPU time of the process) twice: the first run pays for first-use imports (libcst's among
them, when a tree is built), the second shows the steady cost. Best over ``--rounds``. The child also counts the
files whose libcst tree was built, says whether libcst was imported at all, and returns RT206's findings.

Measured (2026-12-07, samples-python e652a4d0, 785 files; two cores shared with other work, load average about
7 while measuring, so the figures are noisy; Python 3.11, libcst 1.9), best of 3 rounds, CPU seconds of one run:

| tree | mode | first run in a process | second run | files parsed by libcst | libcst imported |
|---|---|---|---|---|---|
| samples-python | without RT206 | 0.30 | 0.28 | 0 | no |
| samples-python | default (RT206) | 0.29 | 0.28 | 0 | no |
| one file holding the pattern | without RT206 | 0.02 | 0.00 | 0 | no |
| one file holding the pattern | default (RT206) | 0.31 | 0.01 | 1 | yes |

samples-python is Temporal code with LangGraph samples: its human-in-the-loop workflows call ``interrupt()``,
but none inside a ``try`` with handlers, so RT206 never reads a tree there (its ``libcst_screen`` ``interrupt``
also selects the files naming ``KeyboardInterrupt``; the ``ast`` facts then show no pause call, or none in a
guarded ``try`` body). A file that does hold the pattern pays libcst's import once per process (about 0.3 s of
CPU) and a parse of that file (about 0.01 s for the 40-line module here, with the rest of its lint). Cached
summaries (warm runs, the pre-commit hook on unchanged files) pay nothing.

Usage: ``python benchmarks/libcst_rule_bench.py PATH/TO/samples-python [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = ("without", "default")

# A LangGraph node and entrypoint whose interrupt() a broad handler swallows: RT206 parses this file.
PATTERN = '''\
from typing import TypedDict

from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict):
    draft: str
    answer: str


def write(state: State) -> State:
    return {"draft": state["draft"].strip(), "answer": ""}


def review(state: State) -> State:
    try:
        answer = interrupt({"draft": state["draft"]})
    except Exception:
        answer = "rejected"
    return {"draft": state["draft"], "answer": answer}


builder = StateGraph(State)
builder.add_node("write", write)
builder.add_node("review", review)
builder.add_edge(START, "write")
builder.add_edge("write", "review")
builder.add_edge("review", END)


@entrypoint()
def approve(draft: str) -> str:
    try:
        return interrupt(draft)
    except BaseException:
        return "rejected"
'''


def child(tree: Path, mode: str) -> dict:
    from replaytest.config import load_config
    from replaytest.lint import libcst_facts
    from replaytest.lint.engine import build_context, lint_paths
    from replaytest.lint.rules import BUILTIN_RULES
    from replaytest.lint.rules.rt206_swallowed_interrupt import SwallowsInterrupt
    from replaytest.plugins import load_plugins

    rules = BUILTIN_RULES if mode == "default" else tuple(r for r in BUILTIN_RULES if r is not SwallowsInterrupt)
    # Counts the trees built, without importing libcst (whether a run imports it is part of what is measured).
    parsed = [0]
    original = libcst_facts._parse

    def counting(*args):  # type: ignore[no-untyped-def]
        parsed[0] += 1
        return original(*args)

    libcst_facts._parse = counting  # type: ignore[assignment]
    config = load_config(tree)
    plugins = load_plugins(config.frameworks)
    cpu = []
    findings: list = []
    for _ in range(2):
        started = time.process_time()
        context = build_context(config, plugins, rules)
        result = lint_paths([tree], config, plugins, use_cache=False, jobs=1, context=context, cwd=tree)
        cpu.append(time.process_time() - started)
        findings = sorted((d.path, d.line, d.column) for d in result.diagnostics if d.rule == "RT206")
    return {"cpu": cpu, "parsed": parsed[0] // 2, "findings": findings, "files": result.files_checked,
            "libcst": "libcst" in sys.modules}


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
    with tempfile.TemporaryDirectory() as folder:
        pattern = Path(folder)
        (pattern / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
        (pattern / "review.py").write_text(PATTERN, encoding="utf-8")
        trees = {tree.name: tree, "one file holding the pattern": pattern}
        runs: dict[tuple[str, str], list[dict]] = {(name, mode): [] for name in trees for mode in MODES}
        for round_number in range(options.rounds):
            order = MODES if round_number % 2 == 0 else tuple(reversed(MODES))
            for name, root in trees.items():
                for mode in order:
                    completed = subprocess.run([sys.executable, __file__, str(root), "--child", mode],
                                               capture_output=True, text=True, check=False)
                    if completed.returncode != 0:
                        raise SystemExit(f"{name} {mode}: {completed.stderr[-3000:]}")
                    runs[(name, mode)].append(json.loads(completed.stdout.splitlines()[-1]))
    print(f"{tree.name}: {runs[(tree.name, 'without')][0]['files']} files; best of {options.rounds} rounds, "
          "CPU seconds of one run")
    print("| tree | mode | first run in a process | second run | files parsed by libcst | libcst imported "
          "| RT206 findings |")
    print("|---|---|---|---|---|---|---|")
    for (name, mode), done in runs.items():
        first = min(run["cpu"][0] for run in done)
        second = min(run["cpu"][1] for run in done)
        label = "default (RT206)" if mode == "default" else "without RT206"
        print(f"| {name} | {label} | {first:.2f} | {second:.2f} | {done[0]['parsed']} | "
              f"{'yes' if done[0]['libcst'] else 'no'} | {len(done[0]['findings'])} |")
    if runs[(tree.name, "default")][0]["libcst"]:
        print(f"libcst was imported in a default run over {tree.name}")
    if len(runs[("one file holding the pattern", "default")][0]["findings"]) != 2:
        raise SystemExit("RT206 did not report the two swallowed interrupts of the pattern file")


if __name__ == "__main__":
    main()
