"""The default human-readable report: ``path:line:col: RULE message``, trace, the other lines the finding
stands for (``also at: a.py:12, a.py:14``) and fix beneath, a summary."""

from __future__ import annotations

from collections.abc import Mapping

from replaytest.lint.model import LintResult
from replaytest.lint.rule import Rule


def render_text(result: LintResult, rules: Mapping[str, Rule]) -> str:
    lines = []
    for d in result.diagnostics:
        lines.append(f"{d.path}:{d.line}:{d.column}: {d.rule} {_one_line(d.message)}")
        if d.trace:
            lines.append(f"    via {' -> '.join(d.trace)}")
        # By line, as a reader looks them up; the finding's own line and a second column of a line are left out.
        own = f"{d.path}:{d.line}"
        places = [place for place in dict.fromkeys(f"{r.path}:{r.line}" for r in d.related) if place != own]
        if places:
            lines.append("    also at: " + ", ".join(places))
        if d.fix is not None:
            lines.append(f"    fix ({'safe' if d.fix.safe else 'unsafe'}): {d.fix.replacement}")
    findings = sum(1 for d in result.diagnostics if d.category != "syntax")
    files = f"{result.files_checked} file{'s' if result.files_checked != 1 else ''} checked"
    if not result.diagnostics and not result.errors:
        lines.append(f"All checks passed ({files}).")
    elif not result.diagnostics:
        # A path that could not be used is an error, not a pass: never "All checks passed" beside it.
        lines.append(f"No findings ({files}); {result.errors} error{'s' if result.errors != 1 else ''} "
                     "occurred (printed above), so the check failed.")
    else:
        fixable = sum(1 for d in result.diagnostics if d.fix is not None and d.fix.safe)
        summary = f"Found {findings} finding{'s' if findings != 1 else ''} ({files})"
        if result.errors:
            summary += f"; {result.errors} file{'s' if result.errors != 1 else ''} could not be checked"
        if fixable:
            summary += f"; {fixable} fixable with `replaytest fix`"
        lines.append(summary + ".")
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    """Keep one diagnostic per line even when a message quotes text with line breaks."""
    return text.replace("\r", "\\r").replace("\n", "\\n")
