"""RT301: depending on the order of a set, a directory listing or a str/bytes hash.

The rule's detection lives here: the batched pass calls its hooks where a value is iterated (``for``,
comprehensions, ``list()``/``enumerate()``/``next()``…, ``*`` unpacking, ``str.join``), indexed,
popped, picked by key or returned, and the rule asks the pass what kind of value it is
(``ModuleFacts.kind_of``). Whether a project function returns a set is known only at resolution, so
``for t in helper():`` is recorded as a call to ``helper.__iter__``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from replaytest.lint.model import STEP, Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import DEFAULT_REPLACEMENTS, CallFact, Invalid, Rule
from replaytest.lint.syntax import SourceText, call_args, dotted_text, first_arg_value, short_text, unawaited
from replaytest.lint.vocabulary import LISTING_CALLS, UNORDERED

if TYPE_CHECKING:
    from replaytest.lint.facts import ModuleFacts

_SOURCES = {"set": "a set", "listing": "a directory listing", "dict": "a dict built from a set or listing"}
# Calls whose result does not depend on the order of what they consume.
_ORDER_FREE = frozenset({"builtins.sorted", "builtins.len", "builtins.sum", "builtins.min", "builtins.max",
                         "builtins.any", "builtins.all", "builtins.set", "builtins.frozenset", "collections.Counter"})
# Calls that consume their first argument in its order, and how the message says it.
_SINKS = {"builtins.list": "lists", "builtins.tuple": "lists", "builtins.enumerate": "iterates",
          "builtins.next": "takes the first item of", "builtins.iter": "iterates", "builtins.zip": "iterates",
          "builtins.reversed": "iterates", "builtins.map": "iterates", "builtins.filter": "iterates"}
# What a trace names as the origin of an unordered value.
_SET_ORIGINS = frozenset({"builtins.set", "builtins.frozenset", "builtins.dict", "builtins.dict.fromkeys"})
_DEFAULT_ORIGINS = {"set": "builtins.set", "listing": "os.listdir", "dict": "builtins.dict"}
_ORDER_FREE_ARGUMENT = "order-free"


def _returned_set(source: SourceText, node: ast.expr, function: str, how: str) -> str:
    """The subject of using what a project function returns, should it return a set:
    ``tags(): iterates the set it returns``, ``tags: joins the set fetch_tags() returns``."""
    call = unawaited(node)
    name = function.rpartition(".")[2]
    if isinstance(call, ast.Call):
        callee = dotted_text(call.func)
        if callee.rpartition(".")[2] == name:
            return f"{callee}(): {how} the set it returns"
        return f"{callee}({name}, ...): {how} the set {name}() returns"
    return f"{short_text(source, node)}: {how} the set {name}() returns"


class DependsOnUnstableOrder(Rule):
    """
    ## What it does
    Finds orchestration code that iterates, indexes, joins or lists a set or frozenset (including set
    algebra results and set comprehensions), a directory listing (`os.listdir`, `os.scandir`,
    `glob.glob`, `Path.iterdir/glob/rglob`; also when returned) or a dict built from one of those, a set
    that a project function, an activity or a step returns (`for t in await workflow.execute_activity(
    fetch_tags, ...)`, known from its return value or a `-> set[...]` annotation), and `hash()` of a str
    or bytes. `sorted(...)`, `len`, `min`/`max`, `sum`, `any`/`all` and membership tests are fine, and so is
    iterating a dict built from ordered data, or a set known to hold one element at most (under
    `if len(s) == 1:`, or after `if len(s) != 1: raise ...`, until something may change it).

    ## Why is this bad?
    String hashing is salted per process (`PYTHONHASHSEED`), so set order and `hash()` of text change
    between the recorded run and the replay; directory order depends on the filesystem. Steps are then
    scheduled in another order and the replay diverges.

    ## Example
    ```python
    for region in set(regions):
        await workflow.execute_activity(deploy, region, start_to_close_timeout=TIMEOUT)
    ```

    ## Use instead
    ```python
    for region in sorted(set(regions)):
        await workflow.execute_activity(deploy, region, start_to_close_timeout=TIMEOUT)
    ```
    """

    code = "RT301"
    name = "depends-on-unstable-order"
    category = "iteration-order"
    summary = "Order of a set, directory listing or str hash used in orchestration code"
    what = "depends on an order that changes between runs"
    calls = {"builtins.hash": "is salted per process"}

    def accept_call(self, call: CallFact) -> bool:
        positional = call.positional
        return len(positional) == 1 and call.kind_of(positional[0]) == "str"

    # --- detection ---------------------------------------------------------------------------

    def _unordered(self, facts: ModuleFacts, node: ast.expr, how: str) -> None:
        """Report ``node`` when its value's order is not reproducible (or may be: what a project function
        returns, decided at resolution)."""
        if facts.holds_one(node):
            return  # at most one element (``next(iter(s))`` after ``if len(s) != 1: raise``): no order
        source = facts.kind_of(node)
        if source is None:
            self._returned(facts, node, how)
            return
        if source not in UNORDERED:
            return
        origin = facts.resolve(node.func) if isinstance(node, ast.Call) else None
        if origin is None or not (origin in LISTING_CALLS or origin in _SET_ORIGINS):
            origin = _DEFAULT_ORIGINS[source]
        facts.report(self, node, f"{short_text(facts.source, node)}: {how} {_SOURCES[source]}", origin)

    def _returned(self, facts: ModuleFacts, node: ast.expr, how: str) -> None:
        """``for x in helper():``, ``", ".join(helper())``, ``for x in await workflow.execute_activity(helper,
        ...)`` or a local holding what ``helper`` returned: whether ``helper`` returns a set is known at
        resolution, so the use is recorded as a call to ``helper.__iter__``."""
        function = facts.function
        if function is None or function.kind == STEP:
            return
        qualname = facts.returned_function(node)
        call = unawaited(node)
        if qualname is None and isinstance(call, ast.Call):
            qualname = facts.resolve(call.func)
        elif qualname is None and isinstance(node, ast.Name):
            binding = facts.lookup(node.id)
            qualname = binding[1] if binding is not None and binding[0] == "inst" else None
        if qualname and facts.is_project_candidate(qualname):
            facts.defer(node, _returned_set(facts.source, node, qualname, how), f"{qualname}.__iter__")

    def before_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        # ``sorted(x for x in s)``: the comprehension's order does not reach the result.
        if qualname in _ORDER_FREE:
            for arg in call_args(node):
                if isinstance(arg.value, (ast.GeneratorExp, ast.ListComp)):
                    facts.flag(_ORDER_FREE_ARGUMENT, arg.value)

    def on_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        if facts.function is None:
            return
        # ``*rest`` arguments are in ``node.args`` (in source order), keyword ones apart in ``node.keywords``.
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self._unordered(facts, arg.value, "unpacks")
        func = node.func
        count = len(node.args) + len(node.keywords)
        if not count:
            if isinstance(func, ast.Attribute) and func.attr == "pop":
                if facts.kind_of(func.value) == "set":
                    self._unordered(facts, func.value, "pops from")
            return
        how = _SINKS.get(qualname or "")
        if how is None and isinstance(func, ast.Attribute) and func.attr == "join":
            how = "joins"
        if how is None and qualname in ("builtins.min", "builtins.max") and count > 1:
            # With a key, ties go to whichever element is iterated first.
            if any(keyword.arg == "key" for keyword in node.keywords):
                how = "picks by key from"
        if how is not None:
            # The first argument as written, whatever its kind (``list(*parts)``, ``list(iterable=s)``).
            first = first_arg_value(node)
            if first is not None:
                self._unordered(facts, first, how)

    def on_loop(self, facts: ModuleFacts, node: ast.For | ast.AsyncFor | ast.While) -> None:
        if facts.function is not None and isinstance(node, (ast.For, ast.AsyncFor)):
            self._unordered(facts, node.iter, "iterates")

    def on_comprehension(
        self, facts: ModuleFacts, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp,
        clause: ast.comprehension,
    ) -> None:
        # A set or dict comprehension has no order of its own to leak; a list or generator does.
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and not facts.flagged(_ORDER_FREE_ARGUMENT, node):
            self._unordered(facts, clause.iter, "iterates")

    def on_subscript(self, facts: ModuleFacts, node: ast.Subscript) -> None:
        # Looking a key up in a dict is order-free; indexing a listing takes an arbitrary entry.
        if facts.kind_of(node.value) == "listing":
            self._unordered(facts, node.value, "indexes")

    def on_starred(self, facts: ModuleFacts, node: ast.Starred) -> None:
        self._unordered(facts, node.value, "unpacks")

    def on_return(self, facts: ModuleFacts, node: ast.Return) -> None:
        # A returned listing hands its arbitrary order to the caller.
        if node.value is not None and facts.kind_of(node.value) == "listing":
            self._unordered(facts, node.value, "returns")

    # --- wording -----------------------------------------------------------------------------

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        replacement = (profile.replacements.get(self.category) if profile else None) or DEFAULT_REPLACEMENTS[self.category]
        if effect.qualname == "builtins.hash" and effect.subject.endswith("()"):
            what = f"{effect.subject} of a str or bytes is salted per process"
            replacement = "a stable digest (zlib.crc32, hashlib)"
        else:
            what = f"{effect.subject}, whose order changes between runs"
        if via is not None:
            return f"{via} reaches code where {what}; use {replacement}"
        return f"{what}; use {replacement}"

    VALID = (
        """
from temporalio import workflow

@workflow.defn
class Deploy:
    @workflow.run
    async def run(self, regions: list) -> list:
        unique = set(regions)
        return [r for r in sorted(unique)] + [len(unique), "x" in unique]
""",
        """
from dbos import DBOS

@DBOS.workflow()
def totals(prices: dict) -> list:
    return [name for name in prices]
""",
        """
from temporalio import workflow

@workflow.defn
class Close:
    @workflow.run
    async def run(self, scopes: list) -> str:
        unique = set(scopes)
        if len(unique) != 1:
            raise ValueError("exactly one scope")
        only = next(iter(unique))
        kinds = {s.kind for s in scopes}
        if len(kinds) == 1:
            only += ",".join(kinds)
        return only
""",
    )
    INVALID = (
        Invalid(
            """
from temporalio import workflow

@workflow.defn
class Deploy:
    @workflow.run
    async def run(self, regions: list) -> None:
        for region in set(regions):
            await workflow.execute_activity("deploy", region, start_to_close_timeout=None)
""",
            line=7, column=23,
            message='set(regions): iterates a set, whose order changes between runs; use sorted(...)',
        ),
        Invalid(
            """
from dbos import DBOS

@DBOS.workflow()
def label(tags: list, extra: set) -> str:
    seen = {t.lower() for t in tags}
    return ",".join(seen | extra)
""",
            line=6, column=21,
            message='seen | extra: joins a set, whose order changes between runs; use sorted(...)',
        ),
        Invalid(
            """
import os
from dbos import DBOS

@DBOS.workflow()
def first_file(folder: str) -> str:
    return sorted(os.listdir(folder))[0] + [name for name in os.listdir(folder)][0]
""",
            line=6, column=62,
            message='os.listdir(folder): iterates a directory listing, whose order changes between runs; use sorted(...)',
        ),
        Invalid(
            """
from temporalio import workflow

@workflow.defn
class Shard:
    @workflow.run
    async def run(self, key: str) -> int:
        return hash(key) % 8
""",
            line=7, column=16,
            message='hash() of a str or bytes is salted per process; use a stable digest (zlib.crc32, hashlib)',
        ),
        Invalid(
            """
from dbos import DBOS

@DBOS.workflow()
def close(scopes: list, extra: str) -> str:
    unique = set(scopes)
    if len(unique) != 1:
        raise ValueError("exactly one scope")
    unique.add(extra)
    return next(iter(unique))
""",
            line=9, column=22,
            message='unique: iterates a set, whose order changes between runs; use sorted(...)',
        ),
    )
