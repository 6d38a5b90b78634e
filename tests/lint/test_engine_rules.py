"""The rule API from a third party's side: entry-point loading, declarative tables, documentation."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from replaytest.config import Config
from replaytest.lint import rules as rules_module
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.rule import Rule
from replaytest.lint.rules import RuleLoadError, load_rules
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


class ReadsFeatureFlags(Rule):
    """
    ## What it does
    Finds feature-flag reads in orchestration code.

    ## Why is this bad?
    Flags flip between the recorded run and the replay.

    ## Example
    ```python
    flags.is_on("new-checkout")
    ```

    ## Use instead
    Read the flag in a step.
    """

    code = "ACME101"
    name = "reads-feature-flags"
    category = "environment"
    summary = "Feature flag read in orchestration code"
    what = "reads a feature flag"
    calls = {"acme.flags.is_on": ""}


class _EntryPoint:
    def __init__(self, name: str, target: object) -> None:
        self.name, self.value, self._target = name, f"acme.rules:{name}", target

    def load(self) -> object:
        return self._target


def test_third_party_rules_load_from_entry_points_and_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(rules_module, "entry_points", lambda group: [_EntryPoint("flags", ReadsFeatureFlags)])
    loaded = load_rules()
    assert ReadsFeatureFlags in loaded and [r.code for r in loaded] == sorted(r.code for r in loaded)
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        from acme import flags
        from temporalio import workflow

        @workflow.defn
        class Checkout:
            @workflow.run
            async def run(self) -> bool:
                return flags.is_on("new-checkout")
    '''), encoding="utf-8")
    config = Config(root=tmp_path)
    result = lint_paths([tmp_path], config, PROFILES, use_cache=False, jobs=1,
                        context=build_context(config, PROFILES, loaded), cwd=tmp_path)
    assert [(d.rule, d.line, d.message) for d in result.diagnostics] == [
        ("ACME101", 9, "flags.is_on() reads a feature flag in workflow code; use workflow input or an activity")]


@pytest.mark.parametrize("target", [object(), int])
def test_an_entry_point_that_is_not_a_rule_is_refused(monkeypatch, target: object) -> None:
    monkeypatch.setattr(rules_module, "entry_points", lambda group: [_EntryPoint("bogus", target)])
    with pytest.raises(RuleLoadError, match="bogus"):
        load_rules()


def test_every_builtin_rule_documents_itself_with_ruff_headings() -> None:
    context = build_context(Config(), PROFILES)
    # A rule has a fix when some framework profile offers one for a call in its table.
    fixable = {
        (context.match_call(name) or context.by_category[profile.extra_effects[name]]).code
        for profile in PROFILES for name in profile.fixes
    }
    for rule in load_rules():
        docs = rule.documentation()
        missing = [heading for heading in HEADINGS if heading not in docs]
        assert not missing, f"{rule.code} lacks {missing}"
        assert rule.code[:2] == "RT" and rule.code[2:].isdigit() and len(rule.code) == 5
        assert ("## Fix safety" in docs) == (rule.code in fixable), rule.code
