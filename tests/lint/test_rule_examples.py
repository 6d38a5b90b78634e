"""Every registered rule's VALID / INVALID examples, run through the real engine.

Each example is a whole module linted as a file of a throwaway project: an INVALID example must produce
at least one finding of its rule, a VALID one none of that rule.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.rules import load_rules
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]


def _cases() -> list:
    cases = []
    for rule in load_rules():
        for kind in ("VALID", "INVALID"):
            for index, source in enumerate(getattr(rule, kind)):
                cases.append(pytest.param(rule.code, kind, source, id=f"{rule.code}-{kind.lower()}-{index}"))
    return cases


def test_every_rule_has_examples() -> None:
    for rule in load_rules():
        if rule.category == "syntax":
            continue
        assert rule.VALID and rule.INVALID, f"{rule.code} needs VALID and INVALID examples"


@pytest.mark.parametrize(("code", "kind", "source"), _cases())
def test_rule_example(tmp_path: Path, code: str, kind: str, source: str) -> None:
    module = tmp_path / "example.py"
    module.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    config = Config(root=tmp_path)
    result = lint_paths([module], config, PROFILES, use_cache=False, jobs=1, context=build_context(config, PROFILES),
                        cwd=tmp_path)
    found = [d for d in result.diagnostics if d.rule == code]
    if kind == "INVALID":
        assert found, f"{code} INVALID example produced no {code} finding:\n{source}\ngot: {result.diagnostics}"
    else:
        assert not found, f"{code} VALID example produced {found}:\n{source}"
