"""Each vocabulary is defined once (``config.CATEGORIES``, ``config.PROMPT_POLICIES``, ``config.HAZARD_POLICIES``); these tests fail
when something that names its members — rules, replacement tables, framework profiles, runtime guards,
command-line and pytest options, the README and docs/design.md — drifts away from it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import click
import pytest

from replaytest import pytest_plugin
from replaytest.cli import cli
from replaytest.config import CATEGORIES, HAZARD_POLICIES, PROMPT_POLICIES, HazardPolicy, PromptPolicy, ReplaySettings
from replaytest.lint.rule import DEFAULT_REPLACEMENTS
from replaytest.lint.rules import BUILTIN_RULES
from replaytest.plugins import load_plugins
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.guards import CALL_CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DESIGN = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
# Categories no framework replacement exists for: a file that could not be checked, an unused suppression.
SPECIAL_CATEGORIES = {"syntax", "suppression"}


# --- categories ----------------------------------------------------------------------------------


def test_every_rule_has_a_category_of_the_vocabulary_and_every_category_a_rule() -> None:
    categories = {rule.category for rule in BUILTIN_RULES}
    assert categories <= set(CATEGORIES), categories - set(CATEGORIES)
    assert set(CATEGORIES) <= categories, f"categories no built-in rule reports: {set(CATEGORIES) - categories}"
    assert len(CATEGORIES) == len(set(CATEGORIES))


def test_default_replacements_name_exactly_the_categories_a_framework_replaces() -> None:
    assert set(DEFAULT_REPLACEMENTS) == set(CATEGORIES) - SPECIAL_CATEGORIES


def test_framework_profiles_speak_the_same_vocabulary() -> None:
    profiles = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
    assert profiles
    for profile in profiles:
        assert set(profile.replacements) <= set(CATEGORIES), (profile.name, set(profile.replacements) - set(CATEGORIES))
        assert set(profile.extra_effects.values()) <= set(CATEGORIES), profile.name


def test_runtime_guards_report_lint_categories() -> None:
    assert set(CALL_CATEGORIES.values()) <= set(CATEGORIES) - SPECIAL_CATEGORIES


def test_the_design_documents_category_table_is_the_vocabulary_in_order() -> None:
    section = DESIGN.split("Categories (the fixed vocabulary", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.M)
    assert tuple(rows) == CATEGORIES


def test_the_readme_rule_table_uses_only_vocabulary_categories() -> None:
    used = set(re.findall(r"^\| `RT\d{3}` \| `([a-z-]+)` \|", README, flags=re.M))
    assert used and used <= set(CATEGORIES)


# --- prompt policies -----------------------------------------------------------------------------


def test_the_policy_type_and_the_policy_list_are_one() -> None:
    assert get_args(PromptPolicy) == PROMPT_POLICIES
    # The replay side's options are typed with the same alias.
    assert ReplayOptions.__dataclass_fields__["prompts_running"].type in ("PromptPolicy", PromptPolicy)
    assert ReplaySettings.__dataclass_fields__["prompts_pending"].type in ("PromptPolicy", PromptPolicy)


def _command(name: str) -> click.Command:
    """The group's command ``name``, loaded as the group loads it (a command's module on first use)."""
    command = cli.get_command(click.Context(cli), name)
    assert command is not None, name
    return command


@pytest.mark.parametrize(("command", "flag"), [("replay", "--prompts"), ("replay", "--prompts-pending")])
def test_command_line_choices_are_the_policies(command: str, flag: str) -> None:
    params = {opt: param for param in _command(command).params for opt in getattr(param, "opts", ())}
    choice = params[flag].type
    assert isinstance(choice, click.Choice) and tuple(choice.choices) == PROMPT_POLICIES


class _RecordingParser:
    """Just enough of pytest's parser to see which options the plugin adds and with which choices."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}

    def getgroup(self, *args: Any, **kwargs: Any) -> _RecordingParser:
        return self

    def addoption(self, name: str, **kwargs: Any) -> None:
        self.options[name] = kwargs

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def test_pytest_option_choices_are_the_policies() -> None:
    parser = _RecordingParser()
    pytest_plugin.pytest_addoption(parser)  # type: ignore[arg-type]
    for flag in ("--replay-prompts", "--replay-prompts-pending"):
        assert tuple(parser.options[flag]["choices"]) == PROMPT_POLICIES, flag


def test_pytest_rejects_a_policy_outside_the_vocabulary_naming_the_policies() -> None:
    with pytest.raises(ValueError, match=r"prompts must be fail, warn or ignore, not 'sometimes'"):
        pytest_plugin._policy("prompts", "sometimes", ValueError)
    assert [pytest_plugin._policy("prompts", p, ValueError) for p in PROMPT_POLICIES] == list(PROMPT_POLICIES)


def test_the_readme_replay_table_lists_the_policies_and_their_defaults() -> None:
    spelled = "/".join(f"`{policy}`" for policy in PROMPT_POLICIES)
    found = re.findall(r"^\| `(prompts-[a-z]+)` \| (\S+) \| .*\(default `(\w+)`\) \|$", README, flags=re.M)
    defaults = ReplaySettings()
    assert {key: (types, default) for key, types, default in found} == {
        "prompts-running": (spelled, defaults.prompts_running),
        "prompts-completed": (spelled, defaults.prompts_completed),
        "prompts-pending": (spelled, defaults.prompts_pending),
    }
    assert f"({'/'.join(PROMPT_POLICIES)}," in DESIGN


# --- run statuses --------------------------------------------------------------------------------


def test_run_statuses_are_the_history_statuses_split_into_in_flight_and_finished() -> None:
    from replaytest.history import STATUSES
    from replaytest.replay.divergence import FINISHED_STATUSES, IN_FLIGHT_STATUSES, RUN_STATUSES

    assert RUN_STATUSES is STATUSES
    assert sorted(IN_FLIGHT_STATUSES + FINISHED_STATUSES) == sorted(RUN_STATUSES)
    assert not set(IN_FLIGHT_STATUSES) & set(FINISHED_STATUSES)


def test_summaries_count_every_run_status_and_the_docs_name_them() -> None:
    from replaytest.replay.divergence import RUN_STATUSES
    from replaytest.replay.report import UNKNOWN_RUN_STATUS, diverged_by_run_status

    assert tuple(diverged_by_run_status(())) == (*RUN_STATUSES, UNKNOWN_RUN_STATUS)
    for text in (README, DESIGN):
        assert "in-flight runs that break" in text and "finished runs that diverge" in text
        assert all(f"`{field}`" in text for field in ("run_status", "in_flight", "diverged_by_run_status"))


def test_temporal_run_status_speaks_the_vocabulary() -> None:
    from replaytest.plugins.temporal.history import CLOSE_STATUS, run_status
    from replaytest.replay.divergence import RUN_STATUSES

    assert set(CLOSE_STATUS.values()) <= set(RUN_STATUSES)
    assert run_status(["WorkflowExecutionStarted"]) in RUN_STATUSES


# --- hazard policies -----------------------------------------------------------------------------


def test_the_hazard_policy_type_and_list_are_one_and_every_surface_offers_exactly_them() -> None:
    assert get_args(HazardPolicy) == HAZARD_POLICIES == ("fail", "warn")  # no "ignore": that would be a silent pass
    assert ReplayOptions.__dataclass_fields__["hazards"].type in ("HazardPolicy", HazardPolicy)
    assert ReplaySettings.__dataclass_fields__["hazards"].type in ("HazardPolicy", HazardPolicy)
    params = {opt: param for param in _command("replay").params for opt in getattr(param, "opts", ())}
    choice = params["--hazards"].type
    assert isinstance(choice, click.Choice) and tuple(choice.choices) == HAZARD_POLICIES
    parser = _RecordingParser()
    pytest_plugin.pytest_addoption(parser)  # type: ignore[arg-type]
    assert tuple(parser.options["--replay-hazards"]["choices"]) == HAZARD_POLICIES


def test_the_readme_and_design_name_the_hazard_policies_and_the_default() -> None:
    spelled = "/".join(f"`{policy}`" for policy in HAZARD_POLICIES)
    assert re.search(rf"^\| `hazards` \| {re.escape(spelled)} \| .*\(default `{ReplaySettings().hazards}`\) \|$", README, flags=re.M)
    flag = "\\|".join(HAZARD_POLICIES)
    assert f"| `replay_hazards` | `--replay-hazards={flag}` |" in README
    assert f"[--hazards {'|'.join(HAZARD_POLICIES)}]" in README
    assert f"`hazards` ({'/'.join(HAZARD_POLICIES)}, `replaytest.config.HAZARD_POLICIES`)" in DESIGN


# --- credential rules of the redactor --------------------------------------------------------------


def test_the_design_document_names_exactly_the_redactors_credential_rules() -> None:
    from replaytest.history.secret_rules import RULE_IDS

    section = DESIGN.split("Rule ids, the `<id>` of a credential's pseudonym", 1)[1].split("A\ncredential never becomes", 1)[0]
    named = re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`", section)  # ids; prefixes such as `glpat-` end in '-'
    assert sorted(named) == sorted(RULE_IDS), set(named) ^ set(RULE_IDS)
    assert len(RULE_IDS) == len(set(RULE_IDS))


def test_raw_fields_are_of_engines_replay_knows_and_the_design_names_each() -> None:
    from replaytest.history.redact import RAW_FIELDS, parse_json_path

    assert set(RAW_FIELDS) <= {plugin.name for plugin in load_plugins()}
    section = DESIGN.split("*Raw fields*", 1)[1].split("Temporal JSON is redacted whole", 1)[0]
    for engine, paths in RAW_FIELDS.items():
        for path in paths:
            name = parse_json_path(path)[-1][1]
            assert re.search(rf"\b{re.escape(name)}\b", section), f"docs/design.md does not name {engine}'s raw field {path}"


# --- configuration keys ------------------------------------------------------------------------------


def test_the_readme_configuration_table_lists_exactly_the_top_level_keys() -> None:
    from replaytest.config import CONFIG_KEYS

    section = README.split("## Configuration", 1)[1].split("\n\n| key | type | meaning |", 1)[1]
    table = section.split("\n\n", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.M))
    # The sub-tables have their own sections and tables below this one.
    assert documented == set(CONFIG_KEYS) - {"replay", "redact", "rules"}


def test_the_plugin_ini_options_are_the_one_list_the_readme_and_typo_check_use() -> None:
    from replaytest.replay.settings import PYTEST_INI_KEYS

    ini_section = README.split("### In pytest", 1)[1].split("\n### ", 1)[0]
    documented = set(re.findall(r"^\| `(replay_[a-z_]+)` \|", ini_section, flags=re.M))
    assert documented == set(PYTEST_INI_KEYS)


# --- divergence kinds ------------------------------------------------------------------------------


def test_the_readme_divergence_table_is_the_vocabulary_in_order() -> None:
    from replaytest.replay.divergence import DIVERGENCE_KINDS

    section = README.split("what each divergence is called:", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.M)
    assert tuple(rows) == DIVERGENCE_KINDS


def test_the_design_names_every_divergence_kind() -> None:
    from replaytest.replay.divergence import DIVERGENCE_KINDS

    section = DESIGN.split("Divergence kinds every replayer reports by name", 1)[1].split("\n\n", 1)[0]
    missing = [kind for kind in DIVERGENCE_KINDS if f"`{kind}`" not in section]
    assert missing == []
