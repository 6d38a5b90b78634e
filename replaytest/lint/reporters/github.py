"""GitHub Actions workflow commands: one ``::error`` annotation per diagnostic and per other line it stands for
(``Diagnostic.related``), and per external result (a replay divergence at the source line that issued the
diverging command) that is a problem.

Escaping follows the runner: ``%``, CR and LF are percent-encoded in the message, and additionally
``:`` and ``,`` in property values. File paths are relative to the repository root when ``cwd`` is given
and lies in a git checkout (the runner resolves ``file=`` from there, whatever the step's working directory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from replaytest.lint.model import LintResult
from replaytest.lint.reporters.external import ExternalResult, PathRebaser
from replaytest.lint.rule import Rule


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _properties(pairs: Sequence[tuple[str, object]]) -> str:
    return ",".join(f"{name}={escape_property(str(value))}" for name, value in pairs)


def render_github(
    result: LintResult, rules: Mapping[str, Rule], *, extra: Sequence[ExternalResult] = (), cwd: Path | None = None
) -> str:
    rebase = PathRebaser(cwd)
    lines = []
    for d in result.diagnostics:
        properties = _properties(
            (("file", rebase(d.path)), ("line", d.line), ("col", d.column), ("endLine", d.end_line),
             ("endColumn", d.end_column), ("title", d.rule))
        )
        message = d.message
        if d.trace:
            message += "\nvia " + " -> ".join(d.trace)
        if d.related:
            message += "\nalso at: " + ", ".join(f"{rebase(place.path)}:{place.line}" for place in d.related)
        lines.append(f"::error {properties}::{escape_data(message)}")
        # Each other line the finding stands for gets its own annotation, so the diff shows every line to fix.
        for place in d.related:
            where = _properties((("file", rebase(place.path)), ("line", place.line), ("col", place.column),
                                 ("title", f"{d.rule} (also at)")))
            text = f"{place.message}: part of the {d.rule} finding at {rebase(d.path)}:{d.line}: {d.message}"
            lines.append(f"::error {where}::{escape_data(text)}")
    for item in extra:
        if item.level is None:
            continue
        properties = _properties((("file", rebase(item.path)), ("line", item.line), ("title", item.title)))
        text = item.details or item.message  # the details open with the message's facts
        lines.append(f"::{item.level} {properties}::{escape_data(text)}")
    return "".join(line + "\n" for line in lines)
