"""What a rule reading libcst's tree receives (``LibcstFacts``), and running such rules on one module
(``run_libcst_rules``).

A rule declaring ``uses_libcst`` (``rule.Rule``) gets, after the ``ast`` pass walked a module, that module's
``libcst.Module`` next to the ``ast`` facts, and writes libcst matchers over it as a Fixit rule does. This
module is imported only when such a rule is installed and a parsed module's text selects it (its
``libcst_screen``), and libcst itself only when a rule first reads a tree, so a run without such a rule never
imports libcst. It uses libcst's public API only.

The tree is libcst's parse of the very text the ``ast`` pass parsed, so a call starts at the same line and
character column in both: ``LibcstFacts`` finds the call the walk saw there, which gives the callee as the walk
resolved it (imports, aliases, scopes, ``self`` attributes) and the function and place a finding belongs to.
``ast_tree`` and ``ast_qualname`` let a rule screen a module on CPython's tree before it reads libcst's (RT206
parses only modules where a pause call sits inside a ``try`` with handlers).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING

from replaytest.lint.facts import Pending
from replaytest.lint.model import STEP
from replaytest.lint.parse_guard import risky_tree
from replaytest.lint.rule import LibcstTreeUnavailable

if TYPE_CHECKING:
    import libcst
    from libcst.metadata import CodeRange

    from replaytest.lint.collector import CallSiteSeen, ModuleCollector
    from replaytest.lint.facts import ModuleFacts
    from replaytest.lint.rule import Rule


class LibcstFacts:
    """A module's libcst tree and the ``ast`` pass's facts about it, for a rule's ``on_libcst_module``.

    The tree is parsed when a rule first reads ``module`` (once for all the rules of the module): a rule that
    can tell from the ``ast`` facts that the module holds nothing for it (``callees``) costs no parse."""

    def __init__(self, collector: ModuleCollector, tree: ast.Module, codes: str) -> None:
        # The ``ast`` facts (``ModuleFacts``), as they stand after the walk: the module's name, its text,
        # module-level names (``lookup`` and ``resolve`` answer for the module scope now).
        self.ast_facts: ModuleFacts = collector
        self._collector = collector
        self._tree = tree
        # CPython's tree of the same text, as the walk saw it: for a screen cheaper than libcst's parse.
        self.ast_tree: ast.Module = tree
        self._codes = codes
        self._module: libcst.Module | None = None
        self._positions: object | None = None
        sites = list((collector.call_sites or {}).values())
        # Every callee the ``ast`` pass resolved in the module (``time.sleep``, ``app.helpers.fetch``), and those
        # of the calls ``report`` keeps a finding at (in a function that is not a step, run on replay too).
        self.callees: frozenset[str] = frozenset(site.qualname for site in sites if site.qualname)
        self.reportable_callees: frozenset[str] = frozenset(
            site.qualname for site in sites
            if site.qualname and site.function is not None and site.function.kind != STEP and not site.first_run_only
        )

    @property
    def module(self) -> libcst.Module:
        """libcst's tree of the module (the text the ``ast`` pass parsed), parsed on first use."""
        if self._module is None:
            self._module = _parse(self._collector.source.text, self._tree, self._codes)
        return self._module

    def position(self, node: libcst.CSTNode) -> CodeRange:
        """Where a node of ``module`` is (lines from 1, columns from 0, in characters), by libcst's
        ``PositionProvider`` (resolved on first use, once per module)."""
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            self._positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        return self._positions[node]  # type: ignore[index]

    def code(self, node: libcst.CSTNode) -> str:
        """The source of a node as written."""
        return self.module.code_for_node(node)

    def _seen(self, call: libcst.Call) -> CallSiteSeen | None:
        start = self.position(call).start
        text = self._collector.source.line(start.line)
        byte_column = len(text[: start.column].encode("utf-8"))
        sites = self._collector.call_sites
        return sites.get((start.line, byte_column)) if sites is not None else None

    def qualname(self, call: libcst.Call) -> str | None:
        """The callee of ``call`` as the ``ast`` pass resolved it (``time.sleep`` for ``sleep(1)`` after
        ``from time import sleep``), or None when it could not."""
        seen = self._seen(call)
        return seen.qualname if seen is not None else None

    def ast_qualname(self, call: ast.Call) -> str | None:
        """The callee of a call of ``ast_tree`` as the pass resolved it, or None when it could not."""
        sites = self._collector.call_sites
        seen = sites.get((call.lineno, call.col_offset)) if sites is not None else None
        return seen.qualname if seen is not None else None

    def resolve(self, node: libcst.BaseExpression) -> str | None:
        """The qualified name a name or dotted name denotes at module level (``Exception`` ->
        ``builtins.Exception``, ``errors.GraphInterrupt`` after ``from langgraph import errors`` ->
        ``langgraph.errors.GraphInterrupt``), as the pass resolves names; None for anything else."""
        dotted = _dotted(node)
        return self._collector.resolve(ast.parse(dotted, mode="eval").body) if dotted is not None else None

    def in_function(self, call: libcst.Call) -> str | None:
        """The function (qualified within the module, ``Flow.run``) the call is in, or None at module level."""
        seen = self._seen(call)
        return seen.function.name if seen is not None and seen.function is not None else None

    def report(self, rule: Rule, call: libcst.Call, subject: str, qualname: str) -> None:
        """An effect of ``rule`` at ``call``, as ``ModuleFacts.report`` at that call in the walk: in the
        call's function (orchestration code reports it, a helper's callers do), dropped outside functions, in
        steps and in code that never runs on replay. A fix the framework offers for ``qualname`` keeps the
        call's arguments."""
        seen = self._seen(call)
        if seen is None:
            raise ValueError(f"{rule.code}: {self.code(call)!r} is not a call of this module's tree")
        self._collector.effect_in(seen.function, seen.first_run_only, rule, seen.node, subject, qualname,
                                  args=seen.args)


    def report_anywhere(self, rule: Rule, call: libcst.Call, subject: str, detail: str) -> None:
        """A finding of ``rule`` at ``call`` wherever it is (steps, graph nodes, plain functions and module level
        included), as ``ModuleFacts.report_key`` reports: ``rule.message`` words it from the effect's ``subject``
        and ``qualname`` (here ``detail``)."""
        seen = self._seen(call)
        if seen is None:
            raise ValueError(f"{rule.code}: {self.code(call)!r} is not a call of this module's tree")
        self._collector.findings.append(Pending(seen.node, rule, subject, detail))


def _dotted(node: libcst.BaseExpression) -> str | None:
    """``a.b.c`` for a name or an attribute chain of names, else None."""
    import libcst

    if isinstance(node, libcst.Name):
        return node.value
    if isinstance(node, libcst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    return None


def run_libcst_rules(collector: ModuleCollector, tree: ast.Module, rules: Sequence[Rule]) -> None:
    """Hand the walked module to each rule reading libcst's tree (the tree parsed once, when first read)."""
    facts = LibcstFacts(collector, tree, ", ".join(rule.code for rule in rules))
    for rule in rules:
        rule.on_libcst_module(facts)


def _parse(text: str, tree: ast.Module, codes: str) -> libcst.Module:
    """libcst's tree of a text CPython parsed into ``tree``; never a text too long and deep for its native
    parser (``parse_guard``)."""
    import libcst

    risky = risky_tree(tree, text.encode("utf-8"))
    if risky is not None:
        raise LibcstTreeUnavailable(f"not checked by {codes}: the statement at line {risky} is too long and deeply "
                                    "nested for libcst's parser, which these rules read")
    try:
        return libcst.parse_module(text)
    except libcst.ParserSyntaxError as error:
        raise LibcstTreeUnavailable(f"not checked by {codes}: libcst cannot parse it ({error.message}, line "
                                    f"{error.raw_line})") from None
