"""Output formats for lint results: ``text`` (default), ``json``, ``sarif`` (2.1.0), ``github`` and ``junit``
(as ruff's); and for ``replaytest check``, the CI formats ``github``, ``sarif`` and ``junit`` with external
results (replayed histories) beside the findings.

Each reporter is a function ``(result, rules) -> str`` returning the whole output; each CI reporter also
takes ``extra`` (``ExternalResult`` items) and ``cwd`` (paths become relative to the git top level).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from replaytest.lint.model import LintResult
from replaytest.lint.rule import Rule

Reporter = Callable[[LintResult, Mapping[str, Rule]], str]


class _Reporters(Mapping[str, Any]):
    """Format name -> reporter, each module imported when its format is first used: a run prints one
    format, and importing them all (the SARIF and JUnit ones bring ``xml.etree``) cost every run ~5 ms."""

    def __init__(self, targets: dict[str, str]) -> None:
        self._targets = targets
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        reporter = self._loaded.get(name)
        if reporter is None:
            module, _, attribute = self._targets[name].partition(":")
            reporter = self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return reporter

    def __iter__(self) -> Iterator[str]:
        return iter(self._targets)

    def __len__(self) -> int:
        return len(self._targets)


_PACKAGE = __name__
REPORTERS: Mapping[str, Reporter] = _Reporters({
    "text": f"{_PACKAGE}.text:render_text",
    "json": f"{_PACKAGE}.json_report:render_json",
    "sarif": f"{_PACKAGE}.sarif:render_sarif",
    "github": f"{_PACKAGE}.github:render_github",
    "junit": f"{_PACKAGE}.junit:render_junit",
})

CI_REPORTERS: Mapping[str, Any] = _Reporters({
    "github": f"{_PACKAGE}.github:render_github",
    "sarif": f"{_PACKAGE}.sarif:render_sarif",
    "junit": f"{_PACKAGE}.junit:render_junit",
})
