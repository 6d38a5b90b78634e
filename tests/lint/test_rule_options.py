"""Per-rule options (``[tool.replaytest.rules.<CODE>]``): each mistake is exit 2 with one line naming its
place for lint, fix and check; a set option changes findings (in pool workers too) and the cache key; the
older top-level keys still work; ``replaytest rules CODE`` documents the options; third-party rules
declare and receive options the same way."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from lintkit import CliRun, findings, line_of, run_recording_pools, run_replaytest

from replaytest.config import Config, ConfigError, RuleTable, config_from_table
from replaytest.lint import rules as rules_module
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.rule import Option, Rule
from replaytest.lint.rules import RuleLoadError, load_rules
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]

# A DBOS step that sends a fresh key under a name no API defines as an idempotency key, and a workflow
# that calls a home-grown model client: neither is a finding until the project configures the name.
STEP = '''\
"""A step with a custom-named idempotency key."""
import uuid

from dbos import DBOS

from app.payments import post


@DBOS.step()
def charge(order_id: str) -> None:
    post(order_id, acme_dedupe_token=str(uuid.uuid4()))
'''
KEY_LINE = line_of(STEP, "acme_dedupe_token=")
WORKFLOW = '''\
"""A workflow calling the project's own model client."""
from dbos import DBOS

from acme.llm import complete


@DBOS.workflow()
def summarise(text: str) -> str:
    return complete(text)
'''
MODEL_LINE = line_of(WORKFLOW, "complete(text)")
KEY_FINDING = ("app/step.py", KEY_LINE, "idempotency-key")
MODEL_FINDING = ("app/flow.py", MODEL_LINE, "model-call")
FILES = {"app/__init__.py": "", "app/payments.py": "def post(order_id, **headers):\n    pass\n",
         "app/step.py": STEP, "app/flow.py": WORKFLOW}


def _lint(project: Path, *options: str) -> CliRun:
    return run_replaytest("lint", "--format", "json", *options, ".", cwd=project)


def _one_error_line(run: CliRun, *expected: str) -> None:
    assert run.returncode == 2, run.describe()
    assert "Traceback" not in run.stderr + run.stdout, run.describe()
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, run.describe()
    for text in expected:
        assert text in errors[0], f"{text!r} not in {errors[0]!r}"


COMMANDS = [("lint", "--no-cache", "."), ("fix", "--no-cache", "."), ("check", "--no-cache", ".")]


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('[tool.replaytest.rules.RT1O4]\nkey-names = ["x"]\n',
         ("pyproject.toml: [tool.replaytest.rules.RT1O4]: no installed rule has the code 'RT1O4'; did you mean RT104?",)),
        # A rule's name where its code belongs gets the code suggested.
        ('[tool.replaytest.rules.calls-model-outside-step]\ncalls = ["x"]\n',
         ("[tool.replaytest.rules.calls-model-outside-step]:", "did you mean RT201 (calls-model-outside-step)?")),
        ('[tool.replaytest.rules.RT104]\nkey-name = ["x"]\n',
         ("[tool.replaytest.rules.RT104] key-name: RT104 (uses-fresh-idempotency-key) has no option 'key-name'; "
          "its options are key-names",)),
        ('[tool.replaytest.rules.RT101]\nstrict = true\n',
         ("[tool.replaytest.rules.RT101] strict: RT101 (reads-wall-clock) has no option 'strict'; it has no options",)),
        ('[tool.replaytest.rules.RT104]\nkey-names = "acme_dedupe_token"\n',
         ('[tool.replaytest.rules.RT104] key-names: must be a list of strings, e.g. ["acme_dedupe_token"]',)),
        ('[tool.replaytest.rules.RT104]\nkey-names = [3]\n',
         ("[tool.replaytest.rules.RT104] key-names: must be a list of strings, not [3]",)),
        ('[tool.replaytest.rules.RT201]\ncalls = ["acme.llm complete"]\n',
         ("[tool.replaytest.rules.RT201] calls: 'acme.llm complete' is not a dotted qualified name",)),
        ("[tool.replaytest.rules]\nRT104 = 3\n",
         ("[tool.replaytest.rules] RT104: must be a table of options",)),
    ],
    ids=["unknown-code", "rule-name-for-code", "unknown-option", "rule-without-options", "string-for-list",
         "list-of-numbers", "not-a-qualified-name", "not-a-table"],
)
@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_bad_rule_table_is_exit_2_naming_its_place(make_project, table: str, expected: tuple[str, ...],
                                                       command: tuple[str, ...]) -> None:
    project = make_project(FILES, pyproject=table)
    _one_error_line(run_replaytest(*command, cwd=project), *expected)


def test_an_old_key_and_its_new_spelling_together_are_exit_2_naming_both(make_project) -> None:
    # Which list should win is a guess; refusing it is the only answer that loses nothing silently.
    project = make_project(FILES, pyproject=(
        '[tool.replaytest]\nmodel-calls = ["acme.llm.complete"]\n\n'
        '[tool.replaytest.rules.RT201]\ncalls = ["acme.llm.chat"]\n'))
    for command in COMMANDS:
        _one_error_line(run_replaytest(*command, cwd=project),
                        "[tool.replaytest] model-calls: is the older spelling of [tool.replaytest.rules.RT201] calls, "
                        "which is set too")


def test_a_bad_value_under_an_old_key_is_reported_at_that_key(make_project) -> None:
    project = make_project(FILES, pyproject='[tool.replaytest]\nidempotency-key-names = "acme_dedupe_token"\n')
    _one_error_line(_lint(project, "--no-cache"),
                    '[tool.replaytest] idempotency-key-names: must be a list of strings, e.g. ["acme_dedupe_token"]')


@pytest.mark.parametrize(
    "pyproject",
    [
        '[tool.replaytest.rules.RT104]\nkey-names = ["acme-dedupe-token"]\n\n'
        '[tool.replaytest.rules.RT201]\ncalls = ["acme.llm.complete"]\n',
        # The older top-level keys mean the same.
        '[tool.replaytest]\nidempotency-key-names = ["acme-dedupe-token"]\nmodel-calls = ["acme.llm.complete"]\n',
    ],
    ids=["rule-tables", "old-keys"],
)
def test_configured_names_make_rt104_and_rt201_fire(make_project, pyproject: str) -> None:
    quiet = _lint(make_project(FILES, name="plain"), "--no-cache")
    assert quiet.returncode == 0 and findings(quiet.json()) == set(), quiet.describe()
    run = _lint(make_project(FILES, pyproject=pyproject), "--no-cache")
    assert findings(run.json()) == {KEY_FINDING, MODEL_FINDING}, run.describe()
    rules = {d["line"]: d["rule"] for d in run.json()["diagnostics"]}
    assert rules == {KEY_LINE: "RT104", MODEL_LINE: "RT201"}


def test_pool_workers_receive_the_options(make_project, tmp_path: Path) -> None:
    files = {**FILES, **{f"app/step_{n}.py": STEP for n in range(3)}}
    project = make_project(files, pyproject='[tool.replaytest.rules.RT104]\nkey-names = ["acme_dedupe_token"]\n')
    run, pools = run_recording_pools("lint", "--format", "json", "--no-cache", "--jobs", "2", ".", cwd=project,
                                     log=tmp_path / "pools.json")
    assert pools == ["created", "completed"], pools
    expected = {(f"app/step_{n}.py", KEY_LINE, "idempotency-key") for n in range(3)} | {KEY_FINDING}
    assert findings(run.json()) == expected, run.describe()


def _cache_entries(project: Path) -> set[Path]:
    return set((project / ".replaytest_cache" / "lint").rglob("*.json"))


def test_changing_an_option_invalidates_cached_summaries(make_project) -> None:
    project = make_project(FILES)
    assert findings(_lint(project).json()) == set()
    cold = _cache_entries(project)
    # app/flow.py holds a DBOS workflow, so it is summarised (and cached) in every run; its summary holds
    # the model-call effect only when the call is configured: a summary cached without the option would
    # hide the finding.
    assert cold, "the first run cached no summary"
    (project / "pyproject.toml").write_text('[tool.replaytest.rules.RT201]\ncalls = ["acme.llm.complete"]\n')
    assert findings(_lint(project).json()) == {MODEL_FINDING}
    with_option = _cache_entries(project)
    assert with_option > cold
    # Back to the first configuration: its summaries are served from the cache again, nothing new is written.
    (project / "pyproject.toml").write_text("[tool.replaytest]\n")
    assert findings(_lint(project).json()) == set()
    assert _cache_entries(project) == with_option


def test_an_old_key_and_the_rule_table_share_cached_summaries(make_project) -> None:
    project = make_project(FILES, pyproject='[tool.replaytest]\nmodel-calls = ["acme.llm.complete"]\n')
    assert findings(_lint(project).json()) == {MODEL_FINDING}
    entries = _cache_entries(project)
    (project / "pyproject.toml").write_text('[tool.replaytest.rules.RT201]\ncalls = ["acme.llm.complete"]\n')
    assert findings(_lint(project).json()) == {MODEL_FINDING}
    assert _cache_entries(project) == entries  # the same settings: the same cache key


def test_rules_command_lists_each_option_with_type_and_default(make_project) -> None:
    project = make_project({})
    rt104 = run_replaytest("rules", "RT104", cwd=project)
    assert rt104.returncode == 0, rt104.describe()
    assert "## Options\nSet in `[tool.replaytest.rules.RT104]` of pyproject.toml." in rt104.stdout
    assert "- `key-names` (a list of strings, default `[]`): extra keyword-argument" in rt104.stdout
    rt201 = run_replaytest("rules", "RT201", cwd=project)
    assert "- `calls` (a list of dotted qualified names, default `[]`): extra qualified names" in rt201.stdout
    assert "## Options" not in run_replaytest("rules", "RT101", cwd=project).stdout


# --- the API from a third-party rule's side --------------------------------------------------------


class ReadsFlags(Rule):
    """
    ## What it does
    Finds feature-flag reads (``acme.flags.is_on`` and the configured ``readers``).
    """

    code = "ACME201"
    name = "reads-flags"
    category = "environment"
    summary = "Feature flag read in orchestration code"
    what = "reads a feature flag"
    calls = {"acme.flags.is_on": ""}
    options = (
        Option("readers", "list[qualified-name]", (), "more flag readers"),
        Option("strict", "bool", False, "also flag reads in steps"),
        Option("limit", "int", 3, "how many"),
    )
    seen: list[dict[str, object]] = []

    def __init__(self, settings=None) -> None:
        super().__init__(settings)
        type(self).seen.append(dict(self.settings))
        vars(self)["calls"] = {**type(self).calls, **{name: "" for name in self.settings["readers"]}}


class _EntryPoint:
    def __init__(self, name: str, target: object) -> None:
        self.name, self.value, self._target = name, f"acme.rules:{name}", target

    def load(self) -> object:
        return self._target


def _with_entry_point(monkeypatch, target: object) -> list[type[Rule]]:
    monkeypatch.setattr(rules_module, "entry_points", lambda group: [_EntryPoint("flags", target)])
    return load_rules()


def test_a_third_party_rule_receives_its_options_with_defaults_filled_in(tmp_path: Path, monkeypatch) -> None:
    loaded = _with_entry_point(monkeypatch, ReadsFlags)
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        from acme.features import enabled
        from temporalio import workflow

        @workflow.defn
        class Checkout:
            @workflow.run
            async def run(self) -> bool:
                return enabled("new-checkout")
    '''), encoding="utf-8")
    config = config_from_table({"rules": {"ACME201": {"readers": ["acme.features.enabled"], "limit": 5}}},
                               tmp_path / "pyproject.toml")
    ReadsFlags.seen.clear()
    context = build_context(config, PROFILES, loaded)
    assert ReadsFlags.seen == [{"readers": ("acme.features.enabled",), "strict": False, "limit": 5}]
    result = lint_paths([tmp_path], config, PROFILES, use_cache=False, jobs=1, context=context, cwd=tmp_path)
    assert [(d.rule, d.line) for d in result.diagnostics] == [("ACME201", 9)]
    # Without the option the same code is quiet.
    plain = Config(root=tmp_path)
    quiet = lint_paths([tmp_path], plain, PROFILES, use_cache=False, jobs=1,
                       context=build_context(plain, PROFILES, loaded), cwd=tmp_path)
    assert quiet.diagnostics == []


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"strict": "yes"}, r"\[tool.replaytest.rules.ACME201\] strict: must be true or false, not \"yes\""),
        ({"limit": True}, r"\[tool.replaytest.rules.ACME201\] limit: must be an integer, not true"),
        ({"limits": 3}, r"\[tool.replaytest.rules.ACME201\] limits: .* its options are readers, strict, limit"),
    ],
)
def test_a_third_party_rules_options_are_checked_like_built_in_ones(monkeypatch, values, message) -> None:
    loaded = _with_entry_point(monkeypatch, ReadsFlags)
    config = Config(rules={"ACME201": RuleTable(values)})
    with pytest.raises(ConfigError, match=message):
        build_context(config, PROFILES, loaded)


class BadDefault(ReadsFlags):
    options = (Option("limit", "int", "three", "how many"),)


class OutsideTheVocabulary(ReadsFlags):
    category = "feature-flags"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (BadDefault, "option limit: the default \"three\" is not an integer"),
        (OutsideTheVocabulary, "has the category 'feature-flags'; expected one of clock, random"),
    ],
)
def test_a_rule_declaring_a_bad_option_or_category_is_refused_at_load(monkeypatch, rule, message) -> None:
    with pytest.raises(RuleLoadError, match=message):
        _with_entry_point(monkeypatch, rule)


def test_every_built_in_rule_declares_its_options_correctly() -> None:
    from replaytest.lint.options import declaration_problem
    from replaytest.lint.rules import BUILTIN_RULES

    assert {rule.code: declaration_problem(rule) for rule in BUILTIN_RULES} == dict.fromkeys(
        (rule.code for rule in BUILTIN_RULES), None)
    # The options the issue asked for (and the older keys map onto) exist under these names.
    declared = {(rule.code, option.name, option.type) for rule in BUILTIN_RULES for option in rule.options}
    assert declared == {("RT104", "key-names", "list[str]"), ("RT201", "calls", "list[qualified-name]")}
