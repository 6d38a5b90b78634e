"""Every registered rule's VALID / INVALID examples, run through the real engine.

Each example is a whole module linted as a file of a throwaway project: a VALID one must produce no finding
of its rule; an INVALID one a finding of its rule whose line, column, message and fix (replacement and
safety) are exactly the ones the example pins (``rule.Invalid``), so an example drifts only with a test
failure. Every built-in rule pins all its INVALID examples this way.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.rule import Invalid
from replaytest.lint.rules import load_rules
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]


def _cases() -> list:
    cases = []
    for rule in load_rules():
        for kind in ("VALID", "INVALID"):
            for index, example in enumerate(getattr(rule, kind)):
                cases.append(pytest.param(rule.code, kind, example, id=f"{rule.code}-{kind.lower()}-{index}"))
    return cases


def test_every_rule_has_examples() -> None:
    for rule in load_rules():
        if rule.category == "syntax":
            continue
        assert rule.VALID and rule.INVALID, f"{rule.code} needs VALID and INVALID examples"


def test_every_built_in_invalid_example_is_exact() -> None:
    for rule in load_rules():
        if rule.category == "syntax" or not rule.__module__.startswith("replaytest.lint.rules."):
            continue  # CPython words and places syntax errors differently across versions
        loose = [index for index, example in enumerate(rule.INVALID) if not isinstance(example, Invalid)]
        assert not loose, f"{rule.code} INVALID examples {loose} do not pin line, column, message and fix"


@pytest.mark.parametrize(("code", "kind", "example"), _cases())
def test_rule_example(tmp_path: Path, code: str, kind: str, example: str | Invalid) -> None:
    source = example.code if isinstance(example, Invalid) else example
    module = tmp_path / "example.py"
    module.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    config = Config(root=tmp_path)
    result = lint_paths([module], config, PROFILES, use_cache=False, jobs=1, context=build_context(config, PROFILES),
                        cwd=tmp_path)
    found = [d for d in result.diagnostics if d.rule == code]
    if kind == "INVALID":
        assert found, f"{code} INVALID example produced no {code} finding:\n{source}\ngot: {result.diagnostics}"
        if isinstance(example, Invalid):
            first = min(found, key=lambda d: (d.line, d.column))
            actual = (first.line, first.column, first.message, first.fix.replacement if first.fix else None,
                      first.fix.safe if first.fix else None)
            expected = (example.line, example.column, example.message, example.fix, example.fix_safe)
            assert actual == expected, f"{code} INVALID example drifted:\n{source}\nexpected {expected}\ngot      {actual}"
    else:
        assert not found, f"{code} VALID example produced {found}:\n{source}"
