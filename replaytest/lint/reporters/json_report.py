"""The JSON report, exactly the shape of the lint contract: version, diagnostics, summary."""

from __future__ import annotations

import json
from collections.abc import Mapping

from replaytest.lint.model import LintResult
from replaytest.lint.rule import Rule

JSON_VERSION = 1


def render_json(result: LintResult, rules: Mapping[str, Rule]) -> str:
    document = {
        "version": JSON_VERSION,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        "summary": {"files": result.files_checked, "diagnostics": len(result.diagnostics), "errors": result.errors},
    }
    return json.dumps(document, indent=2) + "\n"
