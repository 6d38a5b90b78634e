"""The rule API: a rule is a small class that turns facts from the one batched pass into effects.

Most rules are declarative: ``calls`` maps qualified names to what the call does (the clock rule is a
table of clock functions), ``reads`` does the same for attribute reads (``os.environ``). A name ending in
``.*`` matches any one attribute of it (``httpx.Client.*`` matches ``httpx.Client.get``), one ending in
``.**`` any dotted path below it. ``accept_call`` refines a table match (``random.Random(seed)`` is fine).
Structural rules override a hook instead (``check_unordered``, ``check_global_write``, ``check_key``);
the collector only calls hooks a rule overrides.

At report time ``applies_to`` decides whether an effect counts in a given framework's orchestration code
and ``message`` words it with the framework's replacement. Findings of ``check_key`` are reported in any
code, steps included. Each rule carries ``VALID`` / ``INVALID`` example modules that the test suite runs.

Options: a rule declares what users may set as data, ``options = (Option("key-names", "list[str]", (),
"extra names ..."),)``; ``[tool.replaytest.rules.<CODE>]`` in pyproject.toml sets them, and a value the
declaration does not allow is a configuration error before anything runs (``lint.options``). The rule is
built once per process as ``RuleClass(settings)``: ``self.settings`` maps every declared option to this
run's value (lists as tuples, defaults filled in). A rule that derives tables from its settings overrides
``__init__(self, settings=None)`` and calls ``super().__init__(settings)`` first; ``settings=None`` means
the defaults.

Third-party rules subclass ``Rule`` and register under the entry-point group ``replaytest.rules``; their
``category`` must be one of ``config.CATEGORIES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from replaytest.lint.options import Option, defaults, options_documentation

if TYPE_CHECKING:
    import libcst as cst

    from replaytest.lint.model import Effect
    from replaytest.lint.profile import FrameworkProfile

DEFAULT_REPLACEMENTS: Mapping[str, str] = {
    "clock": "the framework's deterministic clock",
    "random": "the framework's deterministic random source",
    "uuid": "the framework's deterministic UUID",
    "idempotency-key": "a key derived from stable workflow data (workflow id + step name)",
    "model-call": "a recorded step",
    "network": "a recorded step",
    "filesystem": "a recorded step",
    "environment": "workflow input or a recorded step",
    "concurrency": "the framework's concurrency primitives or steps",
    "sleep": "the framework's durable sleep",
    "iteration-order": "sorted(...)",
    "global-state": "state held in the workflow's own variables",
}


@dataclass(frozen=True)
class CallFact:
    """A call as the batched pass sees it: resolved callee and a way to ask about its arguments."""

    qualname: str
    node: cst.Call
    kind_of: Callable[[cst.BaseExpression], str | None]

    @property
    def positional(self) -> list[cst.BaseExpression]:
        return [arg.value for arg in self.node.args if arg.keyword is None and not arg.star]

    def keyword(self, name: str) -> cst.BaseExpression | None:
        for arg in self.node.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
        return None


@dataclass(frozen=True)
class UnorderedUse:
    """A value whose order is not reproducible (set, directory listing, dict built from one) is
    iterated, indexed, joined or listed."""

    node: cst.CSTNode
    source: str  # "set", "listing" or "dict"
    how: str  # "iterates", "joins", "lists", ...
    text: str  # the expression as written, shortened


@dataclass(frozen=True)
class GlobalWrite:
    """A function writes module state: a name declared ``global``, a class attribute, or a mutation of a
    module-level container."""

    node: cst.CSTNode
    name: str
    how: str  # "assignment", "item assignment", "augmented assignment", "del", or "append()" etc.
    text: str = ""  # what is written, as the source spells it (shortened): "REGISTRY[run_id]", "SEEN.add(x)"


@dataclass(frozen=True)
class KeyUse:
    """A keyword argument, dict key or item assignment whose key names an idempotency key, with the
    call that makes its value differ per attempt and the retried unit both are in."""

    node: cst.CSTNode
    key: str
    source: str  # how the fresh value is made, e.g. "uuid.uuid4()"
    # The retried unit the value is made and used in ("step charge", "retry loop"), or "" when the
    # function's callers decide (a helper is a unit's part only when a step or retried function calls it).
    unit: str = ""


@dataclass(frozen=True)
class Invalid:
    """An INVALID example with the finding it must produce, exactly: the first finding of the rule (by
    position) has this line, 1-based column and message, and this fix (``fix`` is the replacement text,
    None when the finding carries no fix; ``fix_safe`` its safety). The test suite compares all of them."""

    code: str
    line: int
    column: int
    message: str
    fix: str | None = None
    fix_safe: bool | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[str]
    summary: ClassVar[str]
    # Message fragment: "<subject> <what> in workflow code; use <replacement>".
    what: ClassVar[str] = ""
    calls: ClassVar[Mapping[str, str]] = {}
    reads: ClassVar[Mapping[str, str]] = {}
    # Wording for names that only a framework profile turns into effects of this category.
    wording: ClassVar[Mapping[str, str]] = {}
    # For rules that report outside orchestration code: lowercase byte strings without which a file
    # cannot hold a finding; a file mentioning none of them (nor any framework marker) is not parsed.
    screen: tuple[bytes, ...] = ()
    VALID: ClassVar[Sequence[str]] = ()
    # Modules that must produce a finding of this rule; ``Invalid`` pins it exactly (built-in rules do).
    INVALID: ClassVar[Sequence[str | Invalid]] = ()
    # What ``[tool.replaytest.rules.<CODE>]`` may set (see the module docstring).
    options: ClassVar[Sequence[Option]] = ()

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.settings: Mapping[str, Any] = defaults(type(self)) if settings is None else settings

    def accept_call(self, call: CallFact) -> bool:
        return True

    def check_unordered(self, use: UnorderedUse) -> str | None:
        return None

    def check_global_write(self, write: GlobalWrite) -> str | None:
        return None

    def wants_key(self, name: str, how: str) -> bool:
        """Whether a key of this name used this way ("keyword" argument, "dict key", "item" assignment)
        is worth a ``check_key`` (cheap pre-filter)."""
        return False

    def check_key(self, use: KeyUse) -> str | None:
        return None

    def applies_to(self, effect: Effect, profile: FrameworkProfile) -> bool:
        return True

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        replacement = (profile.replacements.get(self.category) if profile else None) or DEFAULT_REPLACEMENTS.get(
            self.category, "a recorded step"
        )
        what = (
            self.calls.get(effect.qualname)
            or self.reads.get(effect.qualname)
            or self.wording.get(effect.qualname)
            or self.what
        )
        if via is not None:
            return f"{via} reaches {effect.subject}, which {what} in workflow code; use {replacement}"
        return f"{effect.subject} {what} in workflow code; use {replacement}"

    @classmethod
    def documentation(cls) -> str:
        import inspect

        docs = inspect.cleandoc(cls.__doc__ or "")
        options = options_documentation(cls)
        return f"{docs}\n\n{options}" if docs and options else docs or options
