"""Rule options: what a rule declares (``Option``), checking ``[tool.replaytest.rules.<CODE>]`` tables
against the installed rules' declarations (``rule_settings``), and the options' documentation.

A rule lists its options as data (``Rule.options``); the lint context checks the configured values here,
fills in the defaults and hands every rule its settings when it builds the rule, once per process (pool
workers build their own context from the same configuration). The settings are part of the cache
fingerprint, so changing an option never reuses summaries made under the old value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from replaytest.config import Config, ConfigError
from replaytest.records import FrozenRecord

if TYPE_CHECKING:
    from replaytest.lint.rule import Rule

# The types an option may have, as a rule declares them.
OptionType = Literal["bool", "int", "str", "list[str]", "list[qualified-name]"]


class Option(FrozenRecord):
    """One option of a rule, set as ``name = value`` in ``[tool.replaytest.rules.<CODE>]``. ``default`` is
    what the rule receives when the option is not set; ``doc`` is one line for ``replaytest rules CODE``."""

    name: str
    type: OptionType
    default: Any
    doc: str

    def __init__(self, name: str, type: OptionType, default: Any, doc: str) -> None:
        self.__dict__.update(name=name, type=type, default=default, doc=doc)


def _is_qualified_name(value: str) -> bool:
    return all(part.isidentifier() for part in value.split("."))


def _is_string_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)


# type -> (how it reads in a message and in the documentation, whether a TOML value has it)
_TYPES: Mapping[str, tuple[str, Callable[[Any], bool]]] = {
    "bool": ("true or false", lambda value: isinstance(value, bool)),
    # TOML's true is a bool, and Python's bool is an int: refuse it where a number is asked for.
    "int": ("an integer", lambda value: isinstance(value, int) and not isinstance(value, bool)),
    "str": ("a string", lambda value: isinstance(value, str)),
    "list[str]": ("a list of strings", _is_string_list),
    "list[qualified-name]": ("a list of dotted qualified names", _is_string_list),
}


def declaration_problem(rule: type[Rule]) -> str | None:
    """What is wrong with a rule's option declarations (a third-party rule's mistake), or None."""
    options = getattr(rule, "options", ())
    if not isinstance(options, (tuple, list)) or not all(isinstance(option, Option) for option in options):
        return "options must be a tuple of replaytest.lint.rule.Option"
    seen: set[str] = set()
    for option in options:
        if not option.name or option.name in seen:
            return f"declares the option {option.name!r} twice or without a name"
        seen.add(option.name)
        if option.type not in _TYPES:
            return f"option {option.name}: type {option.type!r} is not one of {', '.join(_TYPES)}"
        if _value_problem(option, option.default) is not None:
            return f"option {option.name}: the default {_toml(option.default)} is not {_TYPES[option.type][0]}"
    return None


def defaults(rule: type[Rule]) -> Mapping[str, Any]:
    """The settings of a rule whose table sets nothing: every option at its default."""
    return MappingProxyType({option.name: _frozen(option.default) for option in rule.options})


def rule_settings(config: Config, rules: Iterable[type[Rule]]) -> dict[str, Mapping[str, Any]]:
    """Every rule's settings (code -> option -> value, defaults filled in) from the configuration's rule
    tables; a table for a code no installed rule has, an option its rule does not declare, or a value of
    the wrong type is a ``ConfigError`` naming the table and the key."""
    by_code = {rule.code: rule for rule in rules}
    settings = {code: dict(defaults(rule)) for code, rule in by_code.items()}
    for code, table in config.rules.items():
        rule = by_code.get(code)
        if rule is None:
            _unknown_rule(config, code, table.legacy, by_code)
            continue
        declared = {option.name: option for option in rule.options}
        for name, value in table.values.items():
            legacy = table.legacy.get(name)
            where: dict[str, Any] = {"table": config.table_name(f"rules.{code}" if legacy is None else "")}
            option = declared.get(name)
            if option is None:
                has = f"its options are {', '.join(declared)}" if declared else "it has no options"
                raise ConfigError(config.path, name, f"{code} ({rule.name}) has no option {name!r}; {has}", **where)
            problem = _value_problem(option, value)
            if problem is not None:
                raise ConfigError(config.path, legacy or name, problem, **where)
            settings[code][name] = _frozen(value)
    return {code: MappingProxyType(values) for code, values in settings.items()}


def _unknown_rule(config: Config, code: str, legacy: Mapping[str, str], by_code: Mapping[str, type[Rule]]) -> None:
    if legacy:  # an older top-level key whose rule is not installed (a run with a custom rule set)
        key = next(iter(legacy.values()))
        raise ConfigError(config.path, key, f"sets an option of {code}, and no installed rule has that code",
                          table=config.table_name())
    names = {rule.name: rule.code for rule in by_code.values()}
    if code in names:  # the rule's name where its code belongs
        hint = f"; did you mean {names[code]} ({code})?"
    else:
        import difflib  # only for this error's hint

        close = difflib.get_close_matches(code.upper(), list(by_code), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
    raise ConfigError(config.path, "", f"no installed rule has the code {code!r}{hint} (`replaytest rules` lists them)",
                      table=config.table_name(f"rules.{code}"))


def _value_problem(option: Option, value: Any) -> str | None:
    description, fits = _TYPES[option.type]
    if not fits(value):
        if option.type.startswith("list") and isinstance(value, str):  # the commonest slip: one name, no list
            return f"must be {description}, e.g. [{_toml(value)}]"
        return f"must be {description}, not {_toml(value)}"
    if option.type == "list[qualified-name]":
        for entry in value:
            if not _is_qualified_name(entry):
                return f"{entry!r} is not a dotted qualified name"
    return None


def _frozen(value: Any) -> Any:
    """Lists become tuples: a rule cannot change what another process (or the fingerprint) saw."""
    return tuple(value) if isinstance(value, list) else value


def _toml(value: Any) -> str:
    """A value as TOML spells it (short), for messages and documentation."""
    try:
        text = json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def options_documentation(rule: type[Rule]) -> str:
    """The ``## Options`` section of a rule's documentation: each option with its type and default."""
    if not rule.options:
        return ""
    lines = ["## Options", f"Set in `[tool.replaytest.rules.{rule.code}]` of pyproject.toml.", ""]
    for option in rule.options:
        lines.append(f"- `{option.name}` ({_TYPES[option.type][0]}, default `{_toml(option.default)}`): {option.doc}")
    return "\n".join(lines)
