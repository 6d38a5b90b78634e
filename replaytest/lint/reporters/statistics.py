"""``lint --statistics``: one line per rule instead of each finding, as ruff's ``--statistics``.

Text: ``count  code  [*] name``, most frequent first (``[*]`` when every finding of the rule has a safe fix
``replaytest fix`` applies); json: a list of ``{"code", "name", "count", "fixable"}`` objects. Files that
could not be checked count under their rule (RT001/RT002) like any finding, so an error is never hidden.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

from replaytest.lint.model import LintResult
from replaytest.lint.rule import Rule


def render_statistics(result: LintResult, rules: Mapping[str, Rule], output_format: str) -> str:
    counts = Counter(d.rule for d in result.diagnostics)
    fixable = {code for code in counts
               if all(d.fix is not None and d.fix.safe for d in result.diagnostics if d.rule == code)}
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    names = {code: getattr(rules.get(code), "name", "") for code in ordered}
    if output_format == "json":
        rows = [{"code": code, "name": names[code], "count": counts[code], "fixable": code in fixable}
                for code in ordered]
        return json.dumps(rows, indent=2) + "\n"
    if not ordered:
        return ""
    count_width = max(len(str(counts[code])) for code in ordered)
    code_width = max(len(code) for code in ordered)
    lines = [f"{counts[code]:>{count_width}}\t{code:<{code_width}}\t{'[*] ' if code in fixable else ''}{names[code]}"
             for code in ordered]
    return "\n".join(lines) + "\n"
