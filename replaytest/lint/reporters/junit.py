"""JUnit XML, for CI systems that show test reports (GitLab, Jenkins, Azure Pipelines): a ``lint`` suite with
one test case per file that has findings (or one passing case when none has), and one suite per kind of
external result (``replay``: one case per replayed history, passed ones included; ``double-run``: one per
case). A report of a command that lints nothing (``double-run``) leaves the lint suite out (``lint_suite``).

Paths are relative to the repository root when ``cwd`` lies in a git checkout, as in the other CI formats;
control characters and bytes of a file name that are not UTF-8 are escaped as in the text report.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from replaytest.fileio import escape_controls
from replaytest.lint.model import Diagnostic, LintResult
from replaytest.lint.reporters.external import ExternalResult, PathRebaser
from replaytest.lint.rule import Rule


def render_junit(
    result: LintResult, rules: Mapping[str, Rule], *, extra: Sequence[ExternalResult] = (), cwd: Path | None = None,
    lint_suite: bool = True,
) -> str:
    rebase = PathRebaser(cwd)
    root = ET.Element("testsuites", name="replaytest")
    if lint_suite:
        _lint_suite(root, result, rebase)
    suites: dict[str, list[ExternalResult]] = defaultdict(list)
    for item in extra:
        suites[item.suite].append(item)
    for name, items in suites.items():
        suite = ET.SubElement(root, "testsuite", name=f"replaytest {name}")
        failures = 0
        for item in items:
            case = ET.SubElement(suite, "testcase", classname=f"replaytest.{name}", name=item.name,
                                 file=rebase(item.path), line=str(item.line))
            if item.properties:
                facts = ET.SubElement(case, "properties")
                for key, value in item.properties:
                    ET.SubElement(facts, "property", name=key, value=value)
            if item.level == "error":
                failures += 1
                failure = ET.SubElement(case, "failure", type=item.code, message=item.message)
                failure.text = item.details or item.message
            elif item.level == "warning":
                ET.SubElement(case, "system-out").text = f"warning: {item.message}\n{item.details}".rstrip()
        suite.set("tests", str(len(items)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in root)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in root)))
    root.set("errors", str(sum(int(s.get("errors", "0")) for s in root)))
    ET.indent(root)
    # Names, paths and messages come from the tree and the histories: a control character is no XML 1.0
    # character and a file name that is not UTF-8 cannot be written as UTF-8, so both are escaped (as in
    # the text report) and the report always parses.
    text = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + escape_controls(text, keep_newlines=True) + "\n"


def _lint_suite(root: ET.Element, result: LintResult, rebase: PathRebaser) -> None:
    suite = ET.SubElement(root, "testsuite", name="replaytest lint")
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for d in result.diagnostics:
        by_file[d.path].append(d)
    failures = errors = 0
    for path, found in by_file.items():
        case = ET.SubElement(suite, "testcase", classname="replaytest.lint", name=rebase(path), file=rebase(path))
        unreadable = [d for d in found if d.category == "syntax"]
        kind = "error" if unreadable else "failure"
        if unreadable:
            errors += 1
        else:
            failures += 1
        codes = sorted({d.rule for d in found})
        element = ET.SubElement(case, kind, type=",".join(codes), message=f"{len(found)} finding(s)")
        element.text = "\n".join(f"{rebase(d.path)}:{d.line}:{d.column}: {d.rule} {d.message}" for d in found)
    if not by_file:
        ET.SubElement(suite, "testcase", classname="replaytest.lint", name=f"lint ({result.files_checked} files checked)")
    suite.set("tests", str(max(len(by_file), 1)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
