"""Output formats for lint results: ``text`` (default), ``json``, ``sarif`` (2.1.0) and ``github``; and
for ``replaytest check``, the CI formats ``github``, ``sarif`` and ``junit`` with external results
(replayed histories) beside the findings.

Each reporter is a function ``(result, rules) -> str`` returning the whole output; each CI reporter also
takes ``extra`` (``ExternalResult`` items) and ``cwd`` (paths become relative to the git top level).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from replaytest.lint.model import LintResult
from replaytest.lint.reporters.github import render_github
from replaytest.lint.reporters.json_report import render_json
from replaytest.lint.reporters.junit import render_junit
from replaytest.lint.reporters.sarif import render_sarif
from replaytest.lint.reporters.text import render_text
from replaytest.lint.rule import Rule

Reporter = Callable[[LintResult, Mapping[str, Rule]], str]

REPORTERS: dict[str, Reporter] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}

CI_REPORTERS = {
    "github": render_github,
    "sarif": render_sarif,
    "junit": render_junit,
}
