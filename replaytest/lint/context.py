"""``LintContext``: rules, profiles and every lookup table derived from them, built once per process.

The batched pass asks it one question per call (``match_call``: which rule's table names this callee?)
and a handful of set lookups for decorators, bases and context types, so nothing rule- or
framework-specific is recomputed per file.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from replaytest import __version__
from replaytest.config import Config
from replaytest.lint.model import ORCHESTRATION, STEP
from replaytest.lint.options import rule_settings
from replaytest.lint.profile import FrameworkProfile, config_profile
from replaytest.lint.rule import HOOKS, Rule
from replaytest.lint.vocabulary import TYPE_ALIASES

# Import roots that are never project code, besides the ones rule tables and profiles name.
_EXTERNAL_ROOTS = frozenset(
    {"builtins", "typing", "typing_extensions", "dataclasses", "pydantic", "logging", "collections", "functools",
     "itertools", "json", "asyncio", "abc", "enum", "attr", "attrs", "numpy", "pandas", "click", "pytest"}
)


class LintContext:
    """Rules and profiles with their lookup tables. Build once, share (workers build their own once)."""

    def __init__(self, config: Config, profiles: Sequence[FrameworkProfile], rules: Iterable[type[Rule]]) -> None:
        self.config = config
        custom = config_profile(config)
        self.given_profiles = tuple(profiles)
        self.profiles: tuple[FrameworkProfile, ...] = tuple(profiles) + ((custom,) if custom else ())
        self.profile_by_name = {profile.name: profile for profile in self.profiles}
        rule_classes = list(rules)
        # Checked against the installed rules' declarations; a bad table is a ConfigError before any file is read.
        settings = rule_settings(config, rule_classes)
        self.rules: dict[str, Rule] = {}
        for rule_class in rule_classes:
            rule = rule_class(settings[rule_class.code])
            self.rules[rule.code] = rule
        self._build_call_tables()
        self._build_profile_tables()
        self.fingerprint = self._fingerprint()

    # --- rules --------------------------------------------------------------------------------

    def _build_call_tables(self) -> None:
        self.exact: dict[str, Rule] = {}
        self.one_level: dict[str, Rule] = {}
        self.any_depth: dict[str, Rule] = {}
        self.reads: dict[str, Rule] = {}
        self.by_category: dict[str, Rule] = {}
        roots: set[str] = set()
        for rule in self.rules.values():
            self.by_category.setdefault(rule.category, rule)
            for name in rule.calls:
                if name.endswith(".**"):
                    self.any_depth.setdefault(name[:-3], rule)
                elif name.endswith(".*"):
                    self.one_level.setdefault(name[:-2], rule)
                else:
                    self.exact.setdefault(name, rule)
                roots.add(name.split(".", 1)[0].split("[", 1)[0])
            for name in rule.reads:
                self.reads.setdefault(name, rule)
                roots.add(name.split(".", 1)[0])
        self.read_attributes = frozenset(name.rsplit(".", 1)[-1] for name in self.reads)
        # Structural hooks, bound, per hook name: only the rules that override it.
        self.hooks: dict[str, tuple[Callable, ...]] = {
            hook: tuple(getattr(r, hook) for r in self.rules.values() if getattr(type(r), hook) is not getattr(Rule, hook))
            for hook in HOOKS
        }
        self.taint_categories = frozenset(category for r in self.rules.values() for category in r.taint_categories)
        # Rules reading libcst's tree: none installed, and lint never imports libcst.
        self.libcst_rules: tuple[Rule, ...] = tuple(r for r in self.rules.values() if r.uses_libcst)
        for rule in self.rules.values():
            roots.update(rule.libraries)
        roots.discard("builtins")
        self.table_roots = frozenset(roots)

    def match_call(self, qualname: str) -> Rule | None:
        """The rule whose call table names ``qualname``: exact names first, then ``X.*``, then ``X.**``.
        ``boto3.client[s3].put_object`` also matches as ``boto3.client.put_object``."""
        rule = self.exact.get(qualname)
        if rule is not None:
            return rule
        candidates = (qualname, _strip_brackets(qualname)) if "[" in qualname else (qualname,)
        for name in candidates:
            if name is not qualname:
                rule = self.exact.get(name)
                if rule is not None:
                    return rule
            owner, _, _ = name.rpartition(".")
            if owner:
                rule = self.one_level.get(owner)
                if rule is not None:
                    return rule
            if self.any_depth:
                while owner:
                    rule = self.any_depth.get(owner)
                    if rule is not None:
                        return rule
                    owner = owner.rpartition(".")[0]
        return None

    # --- profiles -----------------------------------------------------------------------------

    def _build_profile_tables(self) -> None:
        self.orchestration_decorators: dict[str, FrameworkProfile] = {}
        self.class_decorators: dict[str, FrameworkProfile] = {}
        self.base_classes: dict[str, FrameworkProfile] = {}
        self.registration_calls: dict[str, FrameworkProfile] = {}
        self.step_decorators: dict[str, FrameworkProfile] = {}
        # Decorators that are methods of an app object (``DFApp.orchestration_trigger``), by method name: the object
        # may live in another project module (``from . import bp``), where only the method name tells.
        self.app_method_decorators: dict[str, list[tuple[str, FrameworkProfile]]] = {}
        self.step_calls: set[str] = set()
        self.step_names: dict[str, tuple[int, str, str]] = {}
        self.step_name_keys: dict[str, str] = {}
        self.node_registrations: dict[str, FrameworkProfile] = {}
        # Calls running the tools they are given as a graph node: call -> (tools argument's position, profile).
        self.tool_registrations: dict[str, tuple[int, FrameworkProfile]] = {}
        self.pause_calls: set[str] = set()
        # (call, the import roots of its framework) of every profile's ``outside_only_failures``.
        self.outside_only_failures: dict[str, tuple[str, ...]] = {}
        self.result_calls: set[str] = set()
        self.shared_instance_bases: set[str] = set()
        self.recording_arguments: set[str] = set()
        self.type_aliases: dict[str, str] = dict(TYPE_ALIASES)
        # Methods returning the object they are called on: qualified method name -> that object's type.
        self.builder_methods: dict[str, str] = {}
        self.context_types: dict[str, FrameworkProfile] = {}
        self.extra_effects: dict[str, list[tuple[str, str]]] = {}
        self.concurrent_calls: set[str] = set()
        self.order_sensitive_calls: dict[str, list[str]] = {}
        self.fix_names: set[str] = set()
        # Context managers naming the next child run -> (framework, the calls that start one there).
        self.child_id_scopes: dict[str, tuple[str, frozenset[str]]] = {}
        # Rules that look at every file (idempotency keys) say which bytes make a file worth parsing.
        screen: set[bytes] = {token.lower() for rule in self.rules.values() for token in rule.screen}
        external = set(_EXTERNAL_ROOTS) | self.table_roots | set(getattr(sys, "stdlib_module_names", ()))
        for profile in self.profiles:
            for name in profile.orchestration_decorators:
                self.orchestration_decorators.setdefault(name, profile)
            for name in profile.orchestration_class_decorators:
                self.class_decorators.setdefault(name, profile)
            for name in profile.orchestration_base_classes:
                self.base_classes.setdefault(name, profile)
            for name in profile.registration_calls:
                self.registration_calls.setdefault(name, profile)
            for name in profile.step_decorators:
                self.step_decorators.setdefault(name, profile)
            for kind, names in ((ORCHESTRATION, profile.orchestration_decorators), (STEP, profile.step_decorators)):
                for name in names:
                    owner, _, method = name.rpartition(".")
                    if owner.rpartition(".")[2][:1].isupper():
                        self.app_method_decorators.setdefault(method, []).append((kind, profile))
            for name in profile.context_types:
                self.context_types.setdefault(name, profile)
            for name in profile.node_registrations:
                self.node_registrations.setdefault(name, profile)
            for name, position in profile.tool_registrations.items():
                self.tool_registrations.setdefault(name, (position, profile))
            self.pause_calls.update(profile.pause_calls)
            for name in profile.outside_only_failures:
                self.outside_only_failures.setdefault(name, profile.modules)
            self.step_calls.update(profile.step_calls)
            for name, argument in profile.step_names.items():
                self.step_names.setdefault(name, argument)
            for name, key in profile.step_name_keys.items():
                self.step_name_keys.setdefault(name, key)
            self.result_calls.update(profile.step_calls)
            self.result_calls.update(profile.result_calls)
            self.shared_instance_bases.update(profile.shared_instance_bases)
            self.recording_arguments.update(profile.recording_arguments)
            self.type_aliases.update(profile.type_aliases)
            for name in profile.builder_methods:
                self.builder_methods.setdefault(name, name.rpartition(".")[0])
            for name, category in profile.extra_effects.items():
                self.extra_effects.setdefault(name, []).append((category, profile.name))
            self.fix_names.update(profile.fixes)
            for name in profile.child_id_scopes:
                self.child_id_scopes.setdefault(name, (profile.name, frozenset(profile.child_starts)))
            self.concurrent_calls.update(profile.concurrent_calls)
            for name in profile.order_sensitive_calls:
                self.order_sensitive_calls.setdefault(name, []).append(profile.name)
            screen.update(token.lower() for token in profile.screen)
            external.update(module.split(".", 1)[0] for module in profile.modules)
        self.screen_tokens = tuple(sorted(screen))
        self.external_roots = frozenset(external)

    def profiles_for_imports(self, qualnames: Iterable[str]) -> list[FrameworkProfile]:
        """The profiles whose framework a module imports (by the qualified names it imports)."""
        names = list(qualnames)
        return [
            profile
            for profile in self.profiles
            if any(name == module or name.startswith(module + ".") for name in names for module in profile.modules)
        ]

    def libcst_rules_for(self, text: str) -> tuple[Rule, ...]:
        """The rules reading libcst's tree that a parsed module's text selects (by their ``libcst_screen``)."""
        if not self.libcst_rules:
            return ()
        lowered = text.lower()
        return tuple(rule for rule in self.libcst_rules
                     if not rule.libcst_screen or any(token.decode() in lowered for token in rule.libcst_screen))

    def screen(self, data: bytes) -> bool:
        """Whether a file's bytes mention anything a rule or profile could fire on (no parse)."""
        lowered = data.lower()
        return any(token in lowered for token in self.screen_tokens)

    def _fingerprint(self) -> str:
        digest = hashlib.sha256()
        digest.update(__version__.encode())
        digest.update(self.config.fingerprint().encode())
        for code, rule in sorted(self.rules.items()):
            digest.update(f"{code}:{type(rule).__module__}.{type(rule).__qualname__}".encode())
            # The values the rule received (a changed option changes what summaries hold, e.g. key uses).
            digest.update(repr(sorted(rule.settings.items())).encode())
        for profile in self.profiles:
            digest.update(profile.fingerprint().encode())
        # The analyzer's own code: a changed rule table or collector must not reuse old summaries.
        files = sorted(_python_files(os.path.dirname(__file__)))
        files += sorted({Path(sys.modules[type(rule).__module__].__file__ or "") for rule in self.rules.values()})
        for path in files:
            try:
                digest.update(path.read_bytes())
            except OSError:
                continue
        return digest.hexdigest()


def _python_files(folder: str) -> list[Path]:
    """The ``*.py`` files under ``folder``, as ``Path(folder).glob("**/*.py")`` finds them (symbolic links to
    folders not followed), listed with ``os.walk``: the glob cost a warm run about 0.7 ms."""
    return [Path(directory, name) for directory, _, names in os.walk(folder) for name in names if name.endswith(".py")]


def _strip_brackets(name: str) -> str:
    out = []
    depth = 0
    for char in name:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)
