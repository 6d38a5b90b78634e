"""Built-in rules (one per module here) and loading of third-party rules from ``replaytest.rules``."""

from __future__ import annotations

from replaytest.config import CATEGORIES
from replaytest.entry_points import entry_points
from replaytest.lint.options import declaration_problem
from replaytest.lint.rule import Rule
from replaytest.lint.rules.rt001_syntax import CannotParseFile, FailsInternally
from replaytest.lint.rules.rt003_unused_suppression import SuppressesNothing
from replaytest.lint.rules.rt101_clock import ReadsWallClock
from replaytest.lint.rules.rt102_random import DrawsUnrecordedRandomness
from replaytest.lint.rules.rt103_uuid import CreatesFreshUuid
from replaytest.lint.rules.rt104_idempotency_key import UsesFreshIdempotencyKey
from replaytest.lint.rules.rt105_unstable_step_name import NamesStepUnstably
from replaytest.lint.rules.rt201_model_call import CallsModelOutsideStep
from replaytest.lint.rules.rt202_network import DoesNetworkIoOutsideStep
from replaytest.lint.rules.rt203_filesystem import TouchesFilesystemOutsideStep
from replaytest.lint.rules.rt204_environment import ReadsProcessEnvironment
from replaytest.lint.rules.rt205_rerun_before_interrupt import RepeatsEffectBeforeInterrupt
from replaytest.lint.rules.rt206_swallowed_interrupt import SwallowsInterrupt
from replaytest.lint.rules.rt301_iteration_order import DependsOnUnstableOrder
from replaytest.lint.rules.rt302_concurrency import StartsUnrecordedConcurrency
from replaytest.lint.rules.rt303_sleep import SleepsWithoutDurableTimer
from replaytest.lint.rules.rt304_global_state import WritesModuleState

ENTRY_POINT_GROUP = "replaytest.rules"
SYNTAX_RULE = CannotParseFile.code
INTERNAL_ERROR_RULE = FailsInternally.code

BUILTIN_RULES: tuple[type[Rule], ...] = (
    CannotParseFile,
    FailsInternally,
    SuppressesNothing,
    ReadsWallClock,
    DrawsUnrecordedRandomness,
    CreatesFreshUuid,
    UsesFreshIdempotencyKey,
    NamesStepUnstably,
    CallsModelOutsideStep,
    DoesNetworkIoOutsideStep,
    TouchesFilesystemOutsideStep,
    ReadsProcessEnvironment,
    RepeatsEffectBeforeInterrupt,
    SwallowsInterrupt,
    DependsOnUnstableOrder,
    StartsUnrecordedConcurrency,
    SleepsWithoutDurableTimer,
    WritesModuleState,
)


class RuleLoadError(Exception):
    """A ``replaytest.rules`` entry point failed to load, is not a Rule subclass, has a category outside the
    vocabulary or declares its options wrongly."""


def load_rules() -> list[type[Rule]]:
    """Built-in rules plus third-party ones, sorted by code; a duplicate code is a RuleLoadError."""
    rules = list(BUILTIN_RULES)
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            candidate = entry.load()
        except Exception as error:  # a broken third-party rule must say which one it was
            raise RuleLoadError(f"rule entry point {entry.name} = {entry.value} failed to load: {error}") from error
        if not (isinstance(candidate, type) and issubclass(candidate, Rule)):
            raise RuleLoadError(f"rule entry point {entry.name} = {entry.value} is not a replaytest Rule subclass")
        # Every finding has one category of the fixed vocabulary: selectors, reports and docs rely on it.
        if getattr(candidate, "category", None) not in CATEGORIES:
            raise RuleLoadError(f"rule entry point {entry.name} = {entry.value} has the category "
                                f"{getattr(candidate, 'category', None)!r}; expected one of {', '.join(CATEGORIES)}")
        problem = declaration_problem(candidate)
        if problem is not None:
            raise RuleLoadError(f"rule entry point {entry.name} = {entry.value}: {problem}")
        rules.append(candidate)
    codes: dict[str, type[Rule]] = {}
    for rule in rules:
        if rule.code in codes and codes[rule.code] is not rule:
            raise RuleLoadError(f"rule code {rule.code} is used by both {codes[rule.code].__name__} and {rule.__name__}")
        codes[rule.code] = rule
    return sorted(codes.values(), key=lambda rule: rule.code)
