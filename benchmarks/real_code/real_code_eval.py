#!/usr/bin/env python3
"""Precision and recall of `replaytest lint` on real public durable-workflow code.

Re-run after a change to the linter:

    python benchmarks/real_code/real_code_eval.py --root DIR

where DIR holds each repository of real_code_repos.toml at its commit, extracted as DIR/<name>/ (the
repositories' code is never part of this project).

For every repository of real_code_repos.toml present under ROOT/<name>/ this runs
`replaytest lint --format json --no-cache <path>` from inside ROOT/<name>/ (so paths are relative
to the repository), matches each finding against the human verdicts in real_code_verdicts.json and
prints:

* per repository and overall: findings, true / false positives, unjudged, precision (also outside
  the frameworks' own test suites, and without hazards planted on purpose by those suites);
* a per-rule table, and RT104 (idempotency keys) separately;
* recall: the hazards a human recorded (`expected`) that the linter reports, with every miss;
* every unjudged finding, so that a human judges it and adds a verdict.

A finding matches a verdict by (repo, path, rule, line); when the line moved (the linter now
reports a helper's hazard at another call site, say) it falls back to the same (repo, path, rule)
and the same message fingerprint, nearest line first.  An expected hazard is reported when a
finding of its category is at its line (or one of its `alt_lines`, the other call sites of a
helper).

Exit status: 0 when every finding is judged; 1 when any finding is unjudged (the measurement is
then incomplete and must not silently pass); 2 when the linter failed on a repository, no listed
repository is present, a listed repository is missing with --require-all, or the input files are
malformed.

Each repository belongs to a set (`set` in real_code_repos.toml; "original" when absent).  The
original set is the one the linter was tuned on: its recall misses were fixed, so recall measured
on it is optimistic.  Repositories added later as a held-out measurement (set "holdout-2", ...)
were chosen and judged after those fixes and were never used to change the linter; the section
"By set" reports precision and recall for each set separately, next to the overall figures.

Options beyond --root: --only NAME (repeatable), --set NAME (only the repositories of that set;
repeatable), --json-out FILE (machine-readable results),
--temporalint (also run the peer linter temporalint on the Temporal repositories and list its
findings that replaytest does not have at the same place), --check-sample (re-draw the recall
sample from the sources and compare it with the recorded one), --replaytest CMD, --jobs N.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10, where tomli (a dependency there) provides the same parser
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
RULE_CATEGORY = {
    "RT001": "syntax",
    "RT002": "syntax",
    "RT003": "suppression",
    "RT101": "clock",
    "RT102": "random",
    "RT103": "uuid",
    "RT104": "idempotency-key",
    "RT105": "step-name",
    "RT201": "model-call",
    "RT202": "network",
    "RT203": "filesystem",
    "RT204": "environment",
    "RT205": "rerun-on-resume",
    "RT206": "pause",
    "RT301": "iteration-order",
    "RT302": "concurrency",
    "RT303": "sleep",
    "RT304": "global-state",
}


# --------------------------------------------------------------------------- fingerprints


_ALSO_REACHED = re.compile(r"\s*\(also reached from [^)]*\)")


def fingerprint(rule: str, message: str) -> str:
    """A line-independent identity of a finding: the rule and what the message says was found.

    Only the part of the message before the first ';' is kept (the advice after it names the
    framework's replacement and may be reworded); the "(also reached from N other call sites ...)"
    note is dropped, since it changes whenever another call site is added.
    """
    core = _ALSO_REACHED.sub("", message).split(";", 1)[0]
    return f"{rule}|{' '.join(core.split())}"


# --------------------------------------------------------------------------- inputs


@dataclass
class Repo:
    name: str
    source: str
    commit: str
    path: str
    kind: str
    frameworks: list[str]
    recall: str
    set: str = "original"


def load_repos(path: Path) -> list[Repo]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    repos = []
    for raw in data.get("repo", []):
        try:
            repos.append(
                Repo(
                    name=raw["name"],
                    source=raw["source"],
                    commit=raw["commit"],
                    path=raw.get("path", "."),
                    kind=raw.get("kind", "application"),
                    frameworks=list(raw.get("frameworks", [])),
                    recall=raw.get("recall", "all"),
                    set=raw.get("set", "original"),
                )
            )
        except KeyError as exc:
            raise SystemExit(f"{path}: a [[repo]] lacks {exc}") from None
    names = [r.name for r in repos]
    dupes = [n for n, c in Counter(names).items() if c > 1]
    if dupes:
        raise SystemExit(f"{path}: repeated repo names {dupes}")
    return repos


def load_verdicts(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("verdicts", "expected"):
        if not isinstance(data.get(key), list):
            raise SystemExit(f"{path}: '{key}' must be a list")
    for i, v in enumerate(data["verdicts"]):
        missing = {"repo", "path", "line", "rule", "verdict", "planted", "reason"} - v.keys()
        if missing:
            raise SystemExit(f"{path}: verdicts[{i}] lacks {sorted(missing)}")
        if v["verdict"] not in ("tp", "fp"):
            raise SystemExit(f"{path}: verdicts[{i}] verdict must be 'tp' or 'fp'")
    for i, e in enumerate(data["expected"]):
        missing = {"repo", "path", "line", "category", "reason"} - e.keys()
        if missing:
            raise SystemExit(f"{path}: expected[{i}] lacks {sorted(missing)}")
        if e["category"] not in set(RULE_CATEGORY.values()):
            raise SystemExit(f"{path}: expected[{i}] has unknown category {e['category']!r}")
    return data


# --------------------------------------------------------------------------- running linters


def replaytest_command(arg: str | None) -> list[str]:
    if arg:
        return shlex.split(arg)
    exe = Path(sys.executable).with_name("replaytest")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("replaytest")
    if found:
        return [found]
    return [sys.executable, "-m", "replaytest"]


@dataclass
class LintRun:
    findings: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    errors: int = 0
    exit_code: int = 0
    failure: str | None = None


def run_replaytest(cmd: list[str], repo_dir: Path, sub: str, jobs: int | None) -> LintRun:
    argv = [*cmd, "lint", "--format", "json", "--no-cache", "--quiet"]
    if jobs:
        argv += ["--jobs", str(jobs)]
    argv.append(sub)
    proc = subprocess.run(argv, cwd=repo_dir, capture_output=True, text=True)
    run = LintRun(exit_code=proc.returncode)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        run.failure = f"exit {proc.returncode}, no JSON on stdout; stderr: {proc.stderr.strip()[-800:]}"
        return run
    run.findings = data.get("diagnostics", [])
    summary = data.get("summary", {})
    run.files = int(summary.get("files", 0))
    run.errors = int(summary.get("errors", 0))
    if proc.returncode not in (0, 1):
        run.failure = f"exit {proc.returncode}; stderr: {proc.stderr.strip()[-800:]}"
    return run


_TL_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$")


def run_temporalint(repo_dir: Path, sub: str) -> tuple[list[dict[str, Any]], list[str]]:
    exe = Path(sys.executable).with_name("temporalint")
    cmd = [str(exe)] if exe.exists() else [shutil.which("temporalint") or "temporalint"]
    proc = subprocess.run([*cmd, sub], cwd=repo_dir, capture_output=True, text=True)
    findings, other = [], []
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        m = _TL_LINE.match(line.strip())
        if m:
            path = os.path.normpath(m["path"])
            findings.append({"path": path, "line": int(m["line"]), "rule": m["code"], "message": m["msg"]})
        elif line.strip():
            other.append(line.strip())
    return findings, other


# --------------------------------------------------------------------------- matching


@dataclass
class Judged:
    finding: dict[str, Any]
    repo: str
    verdict: dict[str, Any] | None
    moved_from: int | None = None  # the verdict's line when matched by fingerprint


def match_findings(repo: str, findings: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> tuple[list[Judged], list[dict[str, Any]]]:
    pool = [v for v in verdicts if v["repo"] == repo]
    used: set[int] = set()
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for i, v in enumerate(pool):
        by_key[(v["path"], v["rule"], int(v["line"]))].append(i)
    out: list[Judged] = []
    pending: list[Judged] = []
    for f in findings:
        fp = fingerprint(f["rule"], f["message"])
        cands = [i for i in by_key.get((f["path"], f["rule"], int(f["line"])), []) if i not in used]
        if cands:
            same = [i for i in cands if pool[i].get("fingerprint") == fp]
            pick = (same or cands)[0]
            used.add(pick)
            out.append(Judged(f, repo, pool[pick]))
        else:
            j = Judged(f, repo, None)
            out.append(j)
            pending.append(j)
    # Fallback: same path and rule, same fingerprint, nearest line.
    for j in pending:
        f = j.finding
        fp = fingerprint(f["rule"], f["message"])
        cands = [
            i
            for i, v in enumerate(pool)
            if i not in used and v["path"] == f["path"] and v["rule"] == f["rule"] and v.get("fingerprint") == fp
        ]
        if cands:
            pick = min(cands, key=lambda i: abs(int(pool[i]["line"]) - int(f["line"])))
            used.add(pick)
            j.verdict = pool[pick]
            j.moved_from = int(pool[pick]["line"])
    stale = [v for i, v in enumerate(pool) if i not in used]
    return out, stale


def expected_hits(expected: list[dict[str, Any]], findings_by_repo: dict[str, list[dict[str, Any]]]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    index: dict[tuple, dict[str, Any]] = {}
    for repo, findings in findings_by_repo.items():
        for f in findings:
            cat = f.get("category") or RULE_CATEGORY.get(f["rule"], "?")
            index.setdefault((repo, f["path"], cat, int(f["line"])), f)
    out = []
    for e in expected:
        lines = [int(e["line"]), *[int(x) for x in e.get("alt_lines", [])]]
        hit = None
        for ln in lines:
            hit = index.get((e["repo"], e["path"], e["category"], ln))
            if hit:
                break
        out.append((e, hit))
    return out


# --------------------------------------------------------------------------- recall sample


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_unit(name: str, is_class: bool) -> bool:
    return (
        (is_class and name in ("workflow.defn", "defn"))
        or name.endswith("DBOS.workflow")
        or name == "entrypoint"
        or name.endswith("orchestration_trigger")
        or name.endswith(".main")
        or name.endswith(".handler")
    )


def _cst_decorator_name(node: Any) -> str:
    import libcst as cst

    if isinstance(node, cst.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
    return ".".join(reversed(parts))


def _units_by_cst(source: str) -> list[tuple[int, str]] | None:
    """The same scan with libcst, for a file the running Python's ast cannot parse (3.12 syntax
    such as `type X = ...`, `def f[T]()` or nested f-string quotes read by Python 3.11): without it
    the population, and so the sample, would depend on the Python that runs this script."""
    try:
        import libcst as cst
        from libcst.metadata import MetadataWrapper, PositionProvider
    except ImportError:  # pragma: no cover - libcst is a dependency of replaytest
        return None
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except Exception:
        return None
    positions = wrapper.resolve(PositionProvider)
    found: list[tuple[int, str]] = []

    class Visitor(cst.CSTVisitor):
        def _check(self, node: Any, is_class: bool) -> None:
            for d in node.decorators:
                if _is_unit(_cst_decorator_name(d.decorator), is_class):
                    # ast's lineno of a decorated definition is the line of `def` / `class`
                    found.append((positions[node.name].start.line, node.name.value))
                    break

        def visit_ClassDef(self, node: Any) -> None:
            self._check(node, True)

        def visit_FunctionDef(self, node: Any) -> None:
            self._check(node, False)

    wrapper.visit(Visitor())
    return found


def orchestration_units(root: Path) -> list[tuple[str, int, str]]:
    """Temporal @workflow.defn classes, @DBOS.workflow functions, @entrypoint functions,
    Azure @…orchestration_trigger functions and Restate @….main/@….handler functions, by a plain
    syntactic scan (this is how the recall sample was drawn; it is independent of replaytest).
    A file that Python's ast cannot parse is scanned with libcst instead (same rules)."""
    units = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "venv"))
        for fn in sorted(filenames):
            if not fn.endswith(".py"):
                continue
            p = Path(dirpath, fn)
            rel = p.relative_to(root).as_posix()
            try:
                source = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, ValueError, OSError):
                continue
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):
                units.extend((rel, ln, name) for ln, name in (_units_by_cst(source) or []))
                continue
            for node in ast.walk(tree):
                if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for d in node.decorator_list:
                    if _is_unit(_decorator_name(d), isinstance(node, ast.ClassDef)):
                        units.append((rel, node.lineno, node.name))
                        break
    return sorted(units)


def draw_sample(root: Path, repo: str, seed: str, k: int) -> list[str]:
    units = orchestration_units(root)
    picked = sorted(random.Random(f"{seed}:{repo}").sample(units, min(k, len(units))))
    return [f"{p}:{ln} {name}" for p, ln, name in picked]


# --------------------------------------------------------------------------- reporting


def pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:5.1f}%" if den else "   n/a"


def counts(judged: list[Judged]) -> tuple[int, int, int, int]:
    tp = sum(1 for j in judged if j.verdict and j.verdict["verdict"] == "tp")
    fp = sum(1 for j in judged if j.verdict and j.verdict["verdict"] == "fp")
    un = sum(1 for j in judged if j.verdict is None)
    return len(judged), tp, fp, un


def line_for(j: Judged) -> str:
    f = j.finding
    return f"{j.repo}:{f['path']}:{f['line']} {f['rule']} {f['message']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, type=Path, help="folder holding one extracted repository per name")
    ap.add_argument("--repos", type=Path, default=HERE / "real_code_repos.toml")
    ap.add_argument("--verdicts", type=Path, default=HERE / "real_code_verdicts.json")
    ap.add_argument("--only", action="append", default=[], help="only this repository (repeatable)")
    ap.add_argument("--set", dest="sets", action="append", default=[], help="only the repositories of this set (repeatable)")
    ap.add_argument("--replaytest", help="command that runs replaytest (default: the one beside this Python)")
    ap.add_argument("--jobs", type=int, help="passed to replaytest lint --jobs")
    ap.add_argument("--json-out", type=Path, help="write the results as JSON here")
    ap.add_argument("--temporalint", action="store_true", help="also compare with temporalint on Temporal repos")
    ap.add_argument("--check-sample", action="store_true", help="re-draw the recall sample and compare")
    ap.add_argument("--require-all", action="store_true", help="exit 2 when a listed repository is missing")
    args = ap.parse_args(argv)

    repos = load_repos(args.repos)
    data = load_verdicts(args.verdicts)
    if args.only:
        unknown = set(args.only) - {r.name for r in repos}
        if unknown:
            print(f"unknown repositories: {sorted(unknown)}", file=sys.stderr)
            return 2
        repos = [r for r in repos if r.name in args.only]
    if args.sets:
        unknown = set(args.sets) - {r.set for r in repos}
        if unknown:
            print(f"unknown sets: {sorted(unknown)}", file=sys.stderr)
            return 2
        repos = [r for r in repos if r.set in args.sets]
    cmd = replaytest_command(args.replaytest)
    exit_code = 0

    judged_by_repo: dict[str, list[Judged]] = {}
    stale_by_repo: dict[str, list[dict[str, Any]]] = {}
    findings_by_repo: dict[str, list[dict[str, Any]]] = {}
    present: list[Repo] = []
    print(f"replaytest: {' '.join(cmd)}")
    for repo in repos:
        repo_dir = args.root / repo.name
        if not repo_dir.is_dir():
            print(f"  {repo.name}: MISSING ({repo_dir}); extract {repo.source}@{repo.commit[:12]} there", file=sys.stderr)
            if args.require_all:
                exit_code = 2
            continue
        run = run_replaytest(cmd, repo_dir, repo.path, args.jobs)
        if run.failure:
            print(f"  {repo.name}: replaytest FAILED: {run.failure}", file=sys.stderr)
            exit_code = 2
            continue
        if run.errors:
            print(f"  {repo.name}: replaytest reported {run.errors} file error(s)", file=sys.stderr)
        present.append(repo)
        findings_by_repo[repo.name] = run.findings
        judged, stale = match_findings(repo.name, run.findings, data["verdicts"])
        judged_by_repo[repo.name] = judged
        stale_by_repo[repo.name] = stale
        print(f"  {repo.name}: {run.files} files, {len(run.findings)} findings")

    if not present:
        print("no listed repository is present under --root: nothing was measured", file=sys.stderr)
        return 2
    missing = [r.name for r in repos if not (args.root / r.name).is_dir()]
    if missing:
        print(f"  not measured (missing under --root): {', '.join(missing)}")

    all_judged = [j for r in present for j in judged_by_repo[r.name]]

    # ---- precision per repository
    print("\n== Precision per repository (TP = real hazard in code the framework re-runs) ==")
    w = max([20, *(len(r.name) for r in present)])
    print(f"{'repository':<{w}} {'kind':<18} {'set':<10} {'commit':<12} {'finds':>5} {'TP':>4} {'FP':>4} {'unj':>4} {'precision':>9}")
    for r in present:
        n, tp, fp, un = counts(judged_by_repo[r.name])
        print(f"{r.name:<{w}} {r.kind:<18} {r.set:<10} {r.commit[:12]:<12} {n:>5} {tp:>4} {fp:>4} {un:>4} {pct(tp, tp + fp):>9}")
    n, tp, fp, un = counts(all_judged)
    print(f"{'ALL':<{w}} {'':<18} {'':<10} {'':<12} {n:>5} {tp:>4} {fp:>4} {un:>4} {pct(tp, tp + fp):>9}")

    outside = [j for j in all_judged if j.verdict is None or not j.verdict.get("framework_test_suite", False)]
    n2, tp2, fp2, un2 = counts(outside)
    print(f"outside the frameworks' own test suites: {n2} findings, {tp2} TP, {fp2} FP, {un2} unjudged, precision {pct(tp2, tp2 + fp2).strip()}")
    unplanted = [j for j in all_judged if j.verdict is None or not j.verdict.get("planted", False)]
    n3, tp3, fp3, un3 = counts(unplanted)
    print(f"without hazards planted on purpose by test suites: {n3} findings, {tp3} TP, {fp3} FP, {un3} unjudged, precision {pct(tp3, tp3 + fp3).strip()}")
    borderline = [j for j in all_judged if j.verdict and j.verdict.get("borderline")]
    if borderline:
        bt = sum(1 for j in borderline if j.verdict["verdict"] == "tp")
        print(f"borderline verdicts: {len(borderline)} ({bt} judged TP, {len(borderline) - bt} FP); precision if all borderline TPs were FPs: {pct(tp - bt, tp + fp).strip()}")
    moved = [j for j in all_judged if j.moved_from is not None]
    if moved:
        print(f"matched by fingerprint after the line moved: {len(moved)}")
        for j in moved:
            print(f"    {line_for(j)}  (verdict recorded at line {j.moved_from})")

    # ---- per rule
    print("\n== Per rule ==")
    print(f"{'rule':<6} {'category':<16} {'finds':>5} {'TP':>4} {'FP':>4} {'unj':>4} {'precision':>9}  {'outside-suites':>14}")
    by_rule: dict[str, list[Judged]] = defaultdict(list)
    for j in all_judged:
        by_rule[j.finding["rule"]].append(j)
    for rule in sorted(set(by_rule) | {"RT104"}):
        js = by_rule.get(rule, [])
        n, tp, fp, un = counts(js)
        o = [j for j in js if j.verdict is None or not j.verdict.get("framework_test_suite", False)]
        _, otp, ofp, _ = counts(o)
        print(f"{rule:<6} {RULE_CATEGORY.get(rule, '?'):<16} {n:>5} {tp:>4} {fp:>4} {un:>4} {pct(tp, tp + fp):>9}  {pct(otp, otp + ofp):>14}")

    # ---- RT104 separately
    print("\n== RT104 (idempotency key fresh per attempt inside a retried unit) ==")
    rt104 = by_rule.get("RT104", [])
    n, tp, fp, un = counts(rt104)
    print(f"findings {n}, TP {tp}, FP {fp}, unjudged {un}, precision {pct(tp, tp + fp).strip()}")
    for j in rt104:
        v = j.verdict
        print(f"    {line_for(j)}  [{v['verdict'] if v else 'UNJUDGED'}] {v['reason'] if v else ''}")
    exp104 = [e for e in data["expected"] if e["category"] == "idempotency-key" and e["repo"] in findings_by_repo]
    print(f"expected RT104 hazards in the recall scope: {len(exp104)}")
    for note in data.get("rt104_notes", []):
        print(f"    note: {note}")

    # ---- recall
    print("\n== Recall (expected hazards a human recorded that the linter reports) ==")
    sample = data.get("recall_sample", {})
    if sample:
        print(f"sample: {sample.get('description', '')}")
    scoped = [e for e in data["expected"] if e["repo"] in findings_by_repo]
    hits = expected_hits(scoped, findings_by_repo)
    found = sum(1 for _, h in hits if h)
    print(f"overall: {found}/{len(hits)} = {pct(found, len(hits)).strip()}")
    for label, pred in (
        ("applications and samples read in full", lambda e: e.get("source") == "all"),
        ("random sample of orchestration units", lambda e: e.get("source") == "sample"),
        ("outside the frameworks' own test suites", lambda e: not e.get("framework_test_suite", False)),
        ("without hazards planted by test suites", lambda e: not e.get("planted", False)),
    ):
        sub = [(e, h) for e, h in hits if pred(e)]
        f_ = sum(1 for _, h in sub if h)
        print(f"  {label}: {f_}/{len(sub)} = {pct(f_, len(sub)).strip()}")
    by_cat: dict[str, list] = defaultdict(list)
    for e, h in hits:
        by_cat[e["category"]].append(h)
    print("  per category: " + ", ".join(f"{c} {sum(1 for h in hs if h)}/{len(hs)}" for c, hs in sorted(by_cat.items())))
    misses = [e for e, h in hits if not h]
    if misses:
        print("  misses:")
        for e in misses:
            print(f"    {e['repo']}:{e['path']}:{e['line']} {e['category']}: {e['reason']}")
    incidental = [e for e in data.get("incidental", []) if e["repo"] in findings_by_repo]
    if incidental:
        inc_hits = expected_hits(incidental, findings_by_repo)
        print(f"  outside the recall scope, noticed while judging findings (not in the ratio): {len(incidental)}, reported {sum(1 for _, h in inc_hits if h)}")
        for e, h in inc_hits:
            print(f"    {e['repo']}:{e['path']}:{e['line']} {e['category']} [{'reported' if h else 'missed'}]: {e['reason']}")

    # ---- per set
    set_summary = report_sets(present, judged_by_repo, hits)

    # ---- false positives
    fps = [j for j in all_judged if j.verdict and j.verdict["verdict"] == "fp"]
    print(f"\n== False positives ({len(fps)}) ==")
    for j in fps:
        print(f"    {line_for(j)}\n        why: {j.verdict['reason']}")

    # ---- stale verdicts
    stale = [v for r in present for v in stale_by_repo[r.name]]
    if stale:
        print(f"\n== Verdicts no finding matched ({len(stale)}): the linter no longer reports these ==")
        for v in stale:
            tag = "FIXED FP" if v["verdict"] == "fp" else "LOST TP"
            print(f"    [{tag}] {v['repo']}:{v['path']}:{v['line']} {v['rule']}: {v['reason']}")

    # ---- temporalint
    tl_summary: dict[str, Any] = {}
    if args.temporalint:
        tl_summary = compare_temporalint(present, args.root, findings_by_repo, data)

    # ---- recall sample check
    sample_ok = None
    if args.check_sample and sample:
        sample_ok = check_sample(args.root, sample, present)

    # ---- unjudged
    unjudged = [j for j in all_judged if j.verdict is None]
    print(f"\n== Unjudged findings ({len(unjudged)}) ==")
    for j in unjudged:
        print(f"    {line_for(j)}")
        if j.finding.get("trace"):
            print(f"        trace: {' -> '.join(j.finding['trace'])}")
    if unjudged:
        print("Judge each one in the source and add a record to real_code_verdicts.json "
              "(repo, path, line, rule, verdict tp/fp, planted, framework_test_suite, reason, fingerprint).")
        if exit_code == 0:
            exit_code = 1

    if args.json_out:
        n, tp, fp, un = counts(all_judged)
        result = {
            "repos": {
                r.name: dict(zip(("findings", "tp", "fp", "unjudged"), counts(judged_by_repo[r.name])), commit=r.commit)
                for r in present
            },
            "overall": {"findings": n, "tp": tp, "fp": fp, "unjudged": un},
            "outside_framework_test_suites": dict(zip(("findings", "tp", "fp", "unjudged"), counts(outside))),
            "per_rule": {rule: dict(zip(("findings", "tp", "fp", "unjudged"), counts(js))) for rule, js in sorted(by_rule.items())},
            "recall": {"found": found, "expected": len(hits), "misses": misses},
            "false_positives": [dict(j.finding, repo=j.repo, why=j.verdict["reason"]) for j in fps],
            "unjudged": [dict(j.finding, repo=j.repo) for j in unjudged],
            "stale_verdicts": stale,
            "temporalint": tl_summary,
            "sample_reproduced": sample_ok,
            "sets": set_summary,
        }
        args.json_out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return exit_code


def report_sets(present: list[Repo], judged_by_repo: dict[str, list[Judged]], hits: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> dict[str, Any]:
    """Precision and recall for each set of repositories (original, holdout-2, ...) on its own."""
    order: list[str] = []
    for r in present:
        if r.set not in order:
            order.append(r.set)
    print("\n== By set (original = the set the linter was tuned on; holdout-N = added later, honest when first measured — see real_code_repos.toml) ==")
    print(f"{'set':<12} {'repos':>5} {'finds':>5} {'TP':>4} {'FP':>4} {'unj':>4} {'precision':>9}  {'outside-suites':>14}  {'recall':>15}  {'recall-outside':>15}")
    summary: dict[str, Any] = {}
    rows = [(name, [r for r in present if r.set == name]) for name in order]
    if len(order) > 1:
        rows.append(("ALL", list(present)))
    for name, members in rows:
        names = {r.name for r in members}
        js = [j for n in names for j in judged_by_repo[n]]
        n, tp, fp, un = counts(js)
        o = [j for j in js if j.verdict is None or not j.verdict.get("framework_test_suite", False)]
        _, otp, ofp, _ = counts(o)
        sh = [(e, h) for e, h in hits if e["repo"] in names]
        found = sum(1 for _, h in sh if h)
        so = [(e, h) for e, h in sh if not e.get("framework_test_suite", False)]
        ofound = sum(1 for _, h in so if h)
        rec = f"{found}/{len(sh)} {pct(found, len(sh)).strip()}"
        orec = f"{ofound}/{len(so)} {pct(ofound, len(so)).strip()}"
        print(f"{name:<12} {len(members):>5} {n:>5} {tp:>4} {fp:>4} {un:>4} {pct(tp, tp + fp):>9}  {pct(otp, otp + ofp):>14}  {rec:>15}  {orec:>15}")
        summary[name] = {
            "repos": sorted(names),
            "findings": n, "tp": tp, "fp": fp, "unjudged": un,
            "outside_framework_test_suites": {"tp": otp, "fp": ofp},
            "recall": {"found": found, "expected": len(sh)},
            "recall_outside_framework_test_suites": {"found": ofound, "expected": len(so)},
        }
    for name in order:
        if name == "original" and len(order) == 1:
            break
        members = {r.name for r in present if r.set == name}
        js = [j for n in members for j in judged_by_repo[n]]
        print(f"  {name} per rule:")
        by_rule: dict[str, list[Judged]] = defaultdict(list)
        for j in js:
            by_rule[j.finding["rule"]].append(j)
        for rule in sorted(set(by_rule) | {"RT104"}):
            rj = by_rule.get(rule, [])
            n, tp, fp, un = counts(rj)
            print(f"    {rule:<6} {RULE_CATEGORY.get(rule, '?'):<16} {n:>5} {tp:>4} {fp:>4} {un:>4} {pct(tp, tp + fp):>9}")
        sh = [(e, h) for e, h in hits if e["repo"] in members]
        by_cat: dict[str, list] = defaultdict(list)
        for e, h in sh:
            by_cat[e["category"]].append(h)
        if by_cat:
            print(f"  {name} recall per category: " + ", ".join(f"{c} {sum(1 for h in hs if h)}/{len(hs)}" for c, hs in sorted(by_cat.items())))
        misses = [e for e, h in sh if not h]
        if misses:
            print(f"  {name} misses: {len(misses)}")
            for e in misses:
                print(f"    {e['repo']}:{e['path']}:{e['line']} {e['category']}: {e['reason']}")
    return summary


def compare_temporalint(present: list[Repo], root: Path, findings_by_repo: dict[str, list[dict[str, Any]]], data: dict[str, Any]) -> dict[str, Any]:
    print("\n== temporalint on the Temporal repositories ==")
    if not (Path(sys.executable).with_name("temporalint").exists() or shutil.which("temporalint")):
        print("temporalint is not installed (pip install temporalint); skipped")
        return {"skipped": True}
    reviews = data.get("temporalint_review", [])
    by_place = {(r["repo"], r["path"], int(r["line"]), r["rule"]): r for r in reviews if "line" in r}
    by_rule = {r["rule"]: r for r in reviews if "line" not in r}
    expected_places = {(e["repo"], e["path"], int(e["line"])) for e in data["expected"] + data.get("incidental", [])}
    summary: dict[str, Any] = {}
    for repo in present:
        if "temporal" not in repo.frameworks:
            continue
        tl, other = run_temporalint(root / repo.name, repo.path)
        ours = {(f["path"], int(f["line"])) for f in findings_by_repo[repo.name]}
        same = [f for f in tl if (f["path"], f["line"]) in ours]
        notours = [f for f in tl if (f["path"], f["line"]) not in ours]
        per_rule = Counter(f["rule"] for f in tl)
        summary[repo.name] = {"findings": len(tl), "same_place": len(same), "per_rule": dict(per_rule), "not_parsed": other}
        print(f"  {repo.name}: {len(tl)} findings ({', '.join(f'{k} {v}' for k, v in sorted(per_rule.items()))}); "
              f"{len(same)} at a place replaytest also reports; replaytest has {len(findings_by_repo[repo.name])}")
        for line in other:
            print(f"      temporalint could not check: {line}")
        grouped: dict[str, list] = defaultdict(list)
        for f in notours:
            grouped[f["rule"]].append(f)
        for rule, fs in sorted(grouped.items()):
            rule_review = by_rule.get(rule)
            print(f"    {rule}: {len(fs)} not reported by replaytest"
                  + (f" — {rule_review['verdict']}: {rule_review['reason']}" if rule_review else ""))
            for f in fs:
                r = by_place.get((repo.name, f["path"], f["line"], rule))
                mark = " [in expected]" if (repo.name, f["path"], f["line"]) in expected_places else ""
                if r or not rule_review:
                    print(f"      {f['path']}:{f['line']} {f['message']}"
                          f"  => {r['verdict'] + ': ' + r['reason'] if r else 'UNREVIEWED'}{mark}")
    return summary


def check_sample(root: Path, sample: dict[str, Any], present: list[Repo]) -> bool:
    print("\n== Recall sample reproducibility ==")
    ok = True
    for repo, units in sample.get("units", {}).items():
        if repo not in {r.name for r in present}:
            continue
        again = draw_sample(root / repo, repo, sample["seed"], sample["k"])
        if again == units:
            print(f"  {repo}: the {len(units)} sampled units are reproduced from seed {sample['seed']!r}")
        else:
            ok = False
            print(f"  {repo}: sample differs (source changed?): +{sorted(set(again) - set(units))} -{sorted(set(units) - set(again))}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
