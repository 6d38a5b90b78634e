"""The ``replaytest lint`` output contract of DESIGN.md: JSON shape and types, paths relative to the
working directory, 1-based positions, the text format, exit codes, ``replaytest rules`` and ``--version``."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

from lintkit import CLOCK_WORKFLOW, CLOCK_WORKFLOW_LINE, findings, line_of, run_replaytest

# Written out by hand on purpose: this is the contract (docs/design.md) the JSON output is checked against,
# so it must not come from the code under test; tests/test_vocabularies.py holds the code to the same list.
CATEGORIES = {
    "clock", "random", "uuid", "idempotency-key", "step-name", "model-call", "iteration-order", "environment",
    "network", "filesystem", "concurrency", "sleep", "global-state", "rerun-on-resume", "pause", "syntax",
    "suppression",
}
RULE_CODE = re.compile(r"^[A-Z]+[0-9]+$")
TEXT_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<rule>[A-Z]+[0-9]+) (?P<message>\S.*)$")

HELPER = '''\
"""Stamps, read from the wall clock."""
import time


def stamp() -> float:
    return time.time()
'''

TRANSITIVE_WORKFLOW = '''\
"""A workflow whose helper reads the clock."""
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from app.stamps import stamp


@workflow.defn
class Stamped:
    @workflow.run
    async def run(self) -> float:
        return stamp()
'''
TRANSITIVE_LINE = line_of(TRANSITIVE_WORKFLOW, "return stamp()")

CLEAN_WORKFLOW = '''\
"""A deterministic Temporal workflow: only safe replacements."""
from temporalio import workflow


@workflow.defn
class Clean:
    @workflow.run
    async def run(self) -> str:
        return f"{workflow.now()} {workflow.uuid4()} {workflow.random().random()}"
'''


def _project(make_project):
    return make_project(
        {
            "app/__init__.py": "",
            "app/wf.py": CLOCK_WORKFLOW,
            "app/stamps.py": HELPER,
            "app/stamped.py": TRANSITIVE_WORKFLOW,
        }
    )


def test_json_report_has_every_key_of_the_contract_with_its_type(make_project) -> None:
    project = _project(make_project)
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    report = run.json()
    assert set(report) == {"version", "diagnostics", "summary"}
    assert report["version"] == 1
    assert isinstance(report["diagnostics"], list) and report["diagnostics"]
    keys = {"path", "line", "column", "end_line", "end_column", "rule", "category", "severity", "message",
            "framework", "fix", "trace", "also_at"}
    for diagnostic in report["diagnostics"]:
        assert set(diagnostic) == keys, f"keys differ: {sorted(set(diagnostic) ^ keys)}"
        for key in ("line", "column", "end_line", "end_column"):
            assert type(diagnostic[key]) is int and diagnostic[key] >= 1, (key, diagnostic)
        assert (diagnostic["end_line"], diagnostic["end_column"]) >= (diagnostic["line"], diagnostic["column"])
        assert RULE_CODE.match(diagnostic["rule"]), diagnostic["rule"]
        assert diagnostic["category"] in CATEGORIES
        assert diagnostic["severity"] in {"error", "warning", "info"}
        assert isinstance(diagnostic["message"], str) and diagnostic["message"].strip()
        assert diagnostic["framework"] is None or isinstance(diagnostic["framework"], str)
        fix = diagnostic["fix"]
        assert fix is None or (
            set(fix) == {"safe", "replacement"} and isinstance(fix["safe"], bool) and isinstance(fix["replacement"], str)
        ), fix
        assert isinstance(diagnostic["trace"], list) and all(isinstance(step, str) for step in diagnostic["trace"])
    summary = report["summary"]
    assert set(summary) >= {"files", "diagnostics", "errors"}
    assert all(type(summary[key]) is int for key in ("files", "diagnostics", "errors"))
    assert summary["diagnostics"] == len(report["diagnostics"])
    assert summary["files"] == 4  # app/__init__.py, wf.py, stamps.py, stamped.py


def test_direct_finding_position_points_at_the_call(make_project) -> None:
    project = _project(make_project)
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    [clock] = [d for d in report["diagnostics"] if d["path"] == "app/wf.py"]
    source_line = CLOCK_WORKFLOW.splitlines()[CLOCK_WORKFLOW_LINE - 1]
    start = source_line.index("datetime.now()") + 1  # 1-based
    assert (clock["line"], clock["column"]) == (CLOCK_WORKFLOW_LINE, start)
    # As in the contract's example: the span covers the call, end column just past it.
    assert (clock["end_line"], clock["end_column"]) == (CLOCK_WORKFLOW_LINE, start + len("datetime.now()"))
    assert clock["category"] == "clock"
    assert clock["framework"] == "temporal"
    assert clock["trace"] == []
    assert "workflow.now()" in clock["message"]  # the message names the safe replacement
    # As in the contract's example: naive local time has no exact deterministic twin, so the fix is unsafe.
    assert clock["fix"] == {"safe": False, "replacement": "workflow.now().replace(tzinfo=None)"}


def test_transitive_finding_is_reported_at_the_call_site_with_the_chain(make_project) -> None:
    project = _project(make_project)
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    assert findings(report) == {("app/wf.py", CLOCK_WORKFLOW_LINE, "clock"), ("app/stamped.py", TRANSITIVE_LINE, "clock")}
    [via] = [d for d in report["diagnostics"] if d["path"] == "app/stamped.py"]
    trace = via["trace"]
    assert len(trace) >= 2, trace
    assert trace[0].endswith("Stamped.run"), trace
    assert any(step.endswith("stamp") for step in trace[1:-1] or trace[1:]), trace
    assert trace[-1] == "time.time", trace


def test_paths_are_relative_to_the_working_directory(make_project) -> None:
    project = _project(make_project)
    expected = {("app/wf.py", CLOCK_WORKFLOW_LINE, "clock"), ("app/stamped.py", TRANSITIVE_LINE, "clock")}
    from_inside = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    assert findings(from_inside) == expected
    from_parent = run_replaytest("lint", "--format", "json", "--no-cache", project.name, cwd=project.parent).json()
    assert findings(from_parent) == {(f"{project.name}/{p}", line, c) for p, line, c in expected}
    absolute_argument = run_replaytest("lint", "--format", "json", "--no-cache", str(project), cwd=project).json()
    assert findings(absolute_argument) == expected
    single_file = run_replaytest("lint", "--format", "json", "--no-cache", "app/wf.py", cwd=project).json()
    assert findings(single_file) == {("app/wf.py", CLOCK_WORKFLOW_LINE, "clock")}


def test_text_format_prints_one_line_per_diagnostic(make_project) -> None:
    project = _project(make_project)
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    text = run_replaytest("lint", "--format", "text", "--no-cache", ".", cwd=project)
    default = run_replaytest("lint", "--no-cache", ".", cwd=project)
    assert text.returncode == 1 and default.returncode == 1, text.describe()
    assert default.stdout == text.stdout, "text is the default format"
    parsed = {
        (m["path"], int(m["line"]), int(m["col"]), m["rule"], m["message"])
        for m in map(TEXT_LINE.match, text.stdout.splitlines())
        if m
    }
    wanted = {(d["path"], d["line"], d["column"], d["rule"], d["message"]) for d in report["diagnostics"]}
    assert parsed == wanted, text.describe()


def test_exit_code_0_and_empty_report_when_clean(make_project) -> None:
    project = make_project({"app/__init__.py": "", "app/wf.py": CLEAN_WORKFLOW})
    run = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project)
    assert run.returncode == 0, run.describe()
    report = run.json()
    assert report["diagnostics"] == []
    assert report["summary"]["diagnostics"] == 0 and report["summary"]["files"] == 2
    text = run_replaytest("lint", "--no-cache", ".", cwd=project)
    assert text.returncode == 0
    assert not any(TEXT_LINE.match(line) for line in text.stdout.splitlines())


def test_exit_code_1_when_findings(make_project) -> None:
    project = make_project({"wf.py": CLOCK_WORKFLOW})
    for output_format in ("text", "json", "sarif", "github"):
        run = run_replaytest("lint", "--format", output_format, "--no-cache", ".", cwd=project)
        assert run.returncode == 1, run.describe()


def test_exit_code_2_for_usage_errors(make_project) -> None:
    project = make_project({"wf.py": CLOCK_WORKFLOW})
    unknown_option = run_replaytest("lint", "--no-such-option", ".", cwd=project)
    assert unknown_option.returncode == 2, unknown_option.describe()
    unknown_format = run_replaytest("lint", "--format", "xml", ".", cwd=project)
    assert unknown_format.returncode == 2, unknown_format.describe()
    missing_path = run_replaytest("lint", "--no-cache", "does/not/exist.py", cwd=project)
    assert missing_path.returncode == 2, missing_path.describe()
    assert "does/not/exist.py" in missing_path.stdout + missing_path.stderr
    assert "Traceback" not in missing_path.stderr


def test_the_pinned_categories_are_the_design_documents_vocabulary() -> None:
    design = (Path(__file__).resolve().parents[2] / "docs" / "design.md").read_text(encoding="utf-8")
    table = design.split("Categories (the fixed vocabulary", 1)[1].split("\n\n", 2)[1]
    assert set(re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.M)) == CATEGORIES


def test_rules_lists_codes_and_explains_each_with_ruff_headings(make_project) -> None:
    listing = run_replaytest("rules", cwd=make_project({}))
    assert listing.returncode == 0, listing.describe()
    codes = sorted(set(re.findall(r"\b[A-Z]+[0-9]{2,}\b", listing.stdout)))
    assert codes, listing.describe()
    for category in CATEGORIES - {"syntax"}:
        assert category in listing.stdout, f"no rule of category {category} listed"
    for code in codes:
        doc = run_replaytest("rules", code, cwd=make_project({}))
        assert doc.returncode == 0, doc.describe()
        for heading in ("What it does", "Why is this bad?", "Example", "Use instead"):
            assert heading in doc.stdout, f"{code}: missing heading {heading!r}\n{doc.stdout}"
    unknown = run_replaytest("rules", "ZZ999", cwd=make_project({}))
    assert unknown.returncode == 2, unknown.describe()
    assert "ZZ999" in unknown.stdout + unknown.stderr


def test_reported_rule_codes_are_documented(make_project) -> None:
    project = _project(make_project)
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    listing = run_replaytest("rules", cwd=project).stdout
    for diagnostic in report["diagnostics"]:
        assert diagnostic["rule"] in listing, diagnostic["rule"]
        doc = run_replaytest("rules", diagnostic["rule"], cwd=project)
        assert doc.returncode == 0 and "What it does" in doc.stdout, doc.describe()


def test_rule_docs_of_fixable_rules_say_whether_the_fix_is_safe(make_project) -> None:
    project = _project(make_project)
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    fixable = {d["rule"] for d in report["diagnostics"] if d["fix"] is not None}
    assert fixable, "datetime.now() in a Temporal workflow has a documented fix (workflow.now())"
    for code in fixable:
        doc = run_replaytest("rules", code, cwd=project)
        assert "Fix safety" in doc.stdout, f"{code} offers a fix but its doc has no 'Fix safety' section"


def test_version_flag(tmp_path: Path) -> None:
    run = run_replaytest("--version", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert version("replaytest") in run.stdout
    assert "replaytest" in run.stdout


ODD_KEY_ACTIVITY = '''\
"""An activity whose fresh idempotency key has a name spanning two source lines."""
import uuid

import requests
from temporalio import activity


@activity.defn
def pay() -> None:
    requests.post("https://pay", headers={"""Idempotency-Key
""": str(uuid.uuid4())})
'''


def test_text_format_keeps_each_diagnostic_on_one_line(make_project) -> None:
    # Messages quote names from the source; a newline in such a name must not split the
    # `path:line:col: RULE message` line that editors and problem matchers parse.
    project = make_project({"app/pay.py": ODD_KEY_ACTIVITY})
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    assert [d["category"] for d in report["diagnostics"]] == ["idempotency-key"]
    text = run_replaytest("lint", "--no-cache", ".", cwd=project)
    located = [line for line in text.stdout.splitlines() if line.startswith("app/pay.py:")]
    assert len(located) == 1 and TEXT_LINE.match(located[0]), text.describe()
    assert located[0].rstrip().endswith(report["diagnostics"][0]["message"].splitlines()[-1].strip()), text.describe()
