"""The rule API: a rule is a small class that turns facts from the one batched pass into effects.

Most rules are declarative: ``calls`` maps qualified names to what the call does (the clock rule is a
table of clock functions), ``reads`` does the same for attribute reads (``os.environ``). A name ending in
``.*`` matches any one attribute of it (``httpx.Client.*`` matches ``httpx.Client.get``), one ending in
``.**`` any dotted path below it. ``accept_call`` refines a table match (``random.Random(seed)`` is fine).

Structural rules (iteration order, module state, idempotency keys) own their detection: they override
hooks (``on_call``, ``on_loop``, ``on_assign`` … below) that the batched pass calls at fixed points of its
walk with a ``ModuleFacts`` (name resolution, value kinds, the current function, ways to report) and the
node, a CPython ``ast`` node (they were libcst nodes before; docs/design.md says how to port a rule).
The pass calls only the hooks a rule overrides, so a declarative rule costs nothing per node.

At report time ``applies_to`` decides whether an effect counts in a given framework's orchestration code
and ``message`` words it with the framework's replacement. Findings reported with ``report_key`` count in
any code, steps included. Each rule carries ``VALID`` / ``INVALID`` example modules that the test suite runs.

Options: a rule declares what users may set as data, ``options = (Option("key-names", "list[str]", (),
"extra names ..."),)``; ``[tool.replaytest.rules.<CODE>]`` in pyproject.toml sets them, and a value the
declaration does not allow is a configuration error before anything runs (``lint.options``). The rule is
built once per process as ``RuleClass(settings)``: ``self.settings`` maps every declared option to this
run's value (lists as tuples, defaults filled in). A rule that derives tables from its settings overrides
``__init__(self, settings=None)`` and calls ``super().__init__(settings)`` first; ``settings=None`` means
the defaults.

A rule may instead (or as well) read libcst's concrete tree, as a Fixit rule does: it declares
``uses_libcst = True`` and overrides ``on_libcst_module(facts)``, where ``facts`` (``lint.libcst_facts.LibcstFacts``)
holds the ``libcst.Module`` next to the ``ast`` facts, and writes libcst matchers
(``libcst.matchers.findall(facts.module, m.Call(...))``). The tree is built lazily, once per file, only for the
files the screen selects for parsing that also mention one of the rule's ``libcst_screen`` byte strings (any
parsed file when it declares none), and only when such a rule is installed: without one, lint never imports
libcst. ``facts.qualname(call)`` is the callee as the ``ast`` pass resolved it (imports, aliases, scopes);
``facts.report(self, call, subject, qualname)`` reports at a call as ``ModuleFacts.report`` would at that point
of the walk (in the call's function; dropped outside functions and in steps); ``facts.report_anywhere`` reports
at a call wherever it is, as ``report_key`` does. ``libraries`` names the import roots the rule's matchers look
for, so calls into them are never taken for project code. libcst's import costs about 0.3 s of CPU once per
process: a rule on by default reads ``facts.module`` only where its pattern really is (RT206 screens on
``facts.ast_tree`` first), so that a default run over code without it never imports libcst.

Third-party rules subclass ``Rule`` and register under the entry-point group ``replaytest.rules``; their
``category`` must be one of ``config.CATEGORIES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from replaytest.lint.options import Option, defaults, options_documentation
from replaytest.records import FrozenRecord

if TYPE_CHECKING:
    import ast

    from replaytest.lint.facts import ModuleFacts
    from replaytest.lint.libcst_facts import LibcstFacts
    from replaytest.lint.model import Effect
    from replaytest.lint.profile import FrameworkProfile

DEFAULT_REPLACEMENTS: Mapping[str, str] = {
    "clock": "the framework's deterministic clock",
    "random": "the framework's deterministic random source",
    "uuid": "the framework's deterministic UUID",
    "idempotency-key": "a key derived from stable workflow data (workflow id + step name)",
    "step-name": "a fixed name, passing what varies as an argument",
    "model-call": "a recorded step",
    "network": "a recorded step",
    "filesystem": "a recorded step",
    "environment": "workflow input or a recorded step",
    "concurrency": "the framework's concurrency primitives or steps",
    "sleep": "the framework's durable sleep",
    "iteration-order": "sorted(...)",
    "global-state": "state held in the workflow's own variables",
    "rerun-on-resume": "into a recorded step",
    "pause": "a handler that raises the pause again",
}


class CallFact(FrozenRecord):
    """A call as the batched pass sees it: resolved callee and a way to ask about its arguments."""

    qualname: str
    node: ast.Call
    kind_of: Callable[[ast.expr], str | None]

    def __init__(self, qualname: str, node: ast.Call, kind_of: Callable[[ast.expr], str | None]) -> None:
        self.__dict__.update(qualname=qualname, node=node, kind_of=kind_of)

    @property
    def positional(self) -> list[ast.expr]:
        return [arg for arg in self.node.args if type(arg).__name__ != "Starred"]

    def keyword(self, name: str) -> ast.expr | None:
        for keyword in self.node.keywords:
            if keyword.arg == name:
                return keyword.value
        return None


class Invalid(FrozenRecord):
    """An INVALID example with the finding it must produce, exactly: the first finding of the rule (by
    position) has this line, 1-based column and message, and this fix (``fix`` is the replacement text,
    None when the finding carries no fix; ``fix_safe`` its safety). The test suite compares all of them."""

    code: str
    line: int
    column: int
    message: str
    fix: str | None = None
    fix_safe: bool | None = None

    def __init__(
        self, code: str, line: int, column: int, message: str, fix: str | None = None, fix_safe: bool | None = None,
    ) -> None:
        self.__dict__.update(code=code, line=line, column=column, message=message, fix=fix, fix_safe=fix_safe)


class LibcstTreeUnavailable(Exception):
    """libcst cannot be given a module (a statement too long and deep for its native parser, or syntax it
    does not know): the rules reading its tree cannot check it, so the file is reported as not checked (RT002)."""


# The structural hooks of ``Rule``, in the order the walk may call them for one node.
HOOKS = (
    "on_function", "before_call", "on_call", "on_loop", "reruns_body", "on_comprehension", "on_assign", "on_del",
    "on_dict", "on_subscript", "on_starred", "on_return",
)


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
    # Calls of these categories make values that differ per attempt; the pass remembers them for
    # ``ModuleFacts.fresh_value`` (the idempotency-key rule asks for the clock, random and uuid).
    taint_categories: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[Sequence[str]] = ()
    # Modules that must produce a finding of this rule; ``Invalid`` pins it exactly (built-in rules do).
    INVALID: ClassVar[Sequence[str | Invalid]] = ()
    # What ``[tool.replaytest.rules.<CODE>]`` may set (see the module docstring).
    options: ClassVar[Sequence[Option]] = ()
    # The rule reads libcst's tree (``on_libcst_module``); built only for parsed files that mention one of
    # ``libcst_screen`` (lowercase byte strings; empty: every parsed file). See the module docstring.
    uses_libcst: ClassVar[bool] = False
    libcst_screen: ClassVar[tuple[bytes, ...]] = ()
    # Import roots of the libraries the rule looks for without a ``calls`` table (never project code).
    libraries: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.settings: Mapping[str, Any] = defaults(type(self)) if settings is None else settings

    def accept_call(self, call: CallFact) -> bool:
        return True

    def only_reads(self, call: CallFact) -> bool:
        """Whether a matched call only reads a value (the clock, a random number, a fresh id) and does nothing
        else: then a read whose value only fills log output is told apart (``Effect.log_only``), and engines
        that re-run the code without rejecting the read do not count it (``FrameworkProfile.log_only_harmless``)."""
        return False

    # --- structural hooks: the batched pass calls each only for rules that override it ------------

    def on_function(self, facts: ModuleFacts, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A function's body is about to be walked (``facts.function`` is that function)."""

    def before_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        """A call's arguments are about to be walked (``qualname``: the resolved callee, if known)."""

    def on_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        """A call's callee and arguments were walked; the call's own effect is recorded next."""

    def on_loop(self, facts: ModuleFacts, node: ast.For | ast.AsyncFor | ast.While) -> None:
        """A loop's iterable (or test) was walked; its body is walked next."""

    def reruns_body(self, facts: ModuleFacts, node: ast.For | ast.AsyncFor | ast.While) -> bool:
        """Whether a loop re-runs its body on failure (a retry loop): ``facts.function.retry_loops``
        counts such loops around the statements of their body."""
        return False

    def on_comprehension(
        self, facts: ModuleFacts, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp,
        clause: ast.comprehension,
    ) -> None:
        """A comprehension clause's iterable was walked."""

    def on_assign(self, facts: ModuleFacts, target: ast.expr, value: ast.expr | None) -> None:
        """An assignment target (``value`` None: an augmented assignment) after the value was walked."""

    def on_del(self, facts: ModuleFacts, target: ast.expr) -> None:
        """One target of a ``del`` statement, after it was walked."""

    def on_dict(self, facts: ModuleFacts, node: ast.Dict) -> None:
        """A dict display, after its keys and values were walked."""

    def on_subscript(self, facts: ModuleFacts, node: ast.Subscript) -> None:
        """A subscript read, after it was walked."""

    def on_starred(self, facts: ModuleFacts, node: ast.Starred) -> None:
        """A starred element in a display, after it was walked."""

    def on_return(self, facts: ModuleFacts, node: ast.Return) -> None:
        """A ``return`` with a value, after the value was walked."""

    def on_libcst_module(self, facts: LibcstFacts) -> None:
        """For a rule declaring ``uses_libcst``: the module's libcst tree (``facts.module``), after the
        ``ast`` pass walked the module."""

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
