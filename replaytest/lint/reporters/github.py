"""GitHub Actions workflow commands: one ``::error`` annotation per diagnostic.

Escaping follows the runner: ``%``, CR and LF are percent-encoded in the message, and additionally
``:`` and ``,`` in property values.
"""

from __future__ import annotations

from collections.abc import Mapping

from replaytest.lint.model import LintResult
from replaytest.lint.rule import Rule


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def render_github(result: LintResult, rules: Mapping[str, Rule]) -> str:
    lines = []
    for d in result.diagnostics:
        properties = ",".join(
            f"{name}={escape_property(str(value))}"
            for name, value in (("file", d.path), ("line", d.line), ("col", d.column), ("endLine", d.end_line),
                                ("endColumn", d.end_column), ("title", d.rule))
        )
        message = d.message
        if d.trace:
            message += "\nvia " + " -> ".join(d.trace)
        lines.append(f"::error {properties}::{escape_data(message)}")
    return "".join(line + "\n" for line in lines)
