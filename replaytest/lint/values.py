"""The value model of the batched pass: what kind of value an expression is (a set, a directory listing,
a dict built from one, a string), whether it differs per attempt (made from a clock, random or uuid call:
"taint"), what a name is bound to after an assignment, and the types of instance attributes.

``ValueModel`` is a part of ``ModuleCollector`` (it uses the collector's name resolution and scopes).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from replaytest.lint.context import LintContext
from replaytest.lint.facts import LOCAL, Binding, FunctionBuilder
from replaytest.lint.syntax import (
    call_args,
    calls_in,
    child_fields,
    first_arg_value,
    is_string_literal,
    names_in,
    unawaited,
)
from replaytest.lint.vocabulary import LISTING_CALLS, UNORDERED

# Builtins that advance an iterator once: ``next(gen)``, ``anext(agen)`` (awaited).
_NEXT_CALLS = frozenset({"builtins.next", "builtins.anext"})


def _advanced_generator(value: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """(callee, its one argument) of a call that may be ``next(gen)``/``await anext(gen)`` (the caller
    resolves the callee), or None."""
    call = unawaited(value)
    if isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred):
        return call.func, call.args[0]
    return None

SET_TYPES = frozenset({"builtins.set", "builtins.frozenset", "typing.Set", "typing.FrozenSet", "typing.AbstractSet",
                       "collections.abc.Set", "collections.abc.MutableSet"})
STR_TYPES = frozenset({"builtins.str", "builtins.bytes"})
# Calls returning a pair of sets (``done, pending = await asyncio.wait(tasks)``).
SET_PAIR_CALLS = frozenset({"asyncio.wait", "asyncio.tasks.wait"})
_SET_METHODS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_STR_METHODS = frozenset({"encode", "decode", "lower", "upper", "strip", "format", "join", "replace", "casefold",
                          "lstrip", "rstrip", "title"})
_VALUE_KINDS = frozenset({"set", "listing", "dict", "str"})
_SET_OPERATORS = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)
_STR_OPERATORS = (ast.Add, ast.Mod)


# Types whose values are never falsy, and calls making one (``x or uuid4()`` never calls ``uuid4`` when ``x``
# is one of them). ``timedelta`` and numbers are not: a zero one is falsy.
ALWAYS_TRUTHY = frozenset({
    "uuid.UUID", "uuid.uuid1", "uuid.uuid3", "uuid.uuid4", "uuid.uuid5", "temporalio.workflow.uuid4",
    "temporalio.workflow.now", "datetime.datetime", "datetime.date", "datetime.datetime.now",
    "datetime.datetime.utcnow", "datetime.datetime.fromisoformat", "datetime.datetime.fromtimestamp",
    "datetime.datetime.strptime", "datetime.date.fromisoformat", "datetime.date.today",
})
# Builtins that read a set without changing it: passing a set to one keeps what is known of its size.
_READS_ONLY = frozenset({"len", "iter", "next", "list", "tuple", "sorted", "set", "frozenset", "min", "max", "sum",
                         "any", "all", "enumerate", "bool", "str", "repr", "isinstance"})


def _len_of_name(node: ast.expr) -> str | None:
    """``s`` when ``node`` is ``len(s)`` of a plain name, else None."""
    if (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
        and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)
    ):
        return node.args[0].id
    return None


def single_element_test(test: ast.expr) -> tuple[str, bool] | None:
    """(name, where) for an ``if`` test that bounds the size of a collection: ``len(s) == 1``,
    ``len(s) <= 1`` or ``len(s) < 2`` (where=True: ``s`` holds at most one element in the body) and
    ``len(s) != 1``, ``len(s) > 1``, ``len(s) >= 2`` (where=False: at most one in the ``else`` and after a
    body that always leaves the block). Iterating at most one element has no order to depend on."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    name = _len_of_name(left)
    if name is None:
        # ``1 == len(s)``: read as ``len(s) == 1`` with the comparison turned around.
        name = _len_of_name(right)
        if name is None:
            return None
        flipped = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
        op = flipped.get(type(op), type(op))()
        left, right = right, left
    if not (isinstance(right, ast.Constant) and type(right.value) is int):
        return None
    bound = right.value
    if (isinstance(op, (ast.Eq, ast.LtE)) and bound == 1) or (isinstance(op, ast.Lt) and bound == 2):
        return name, True
    if (isinstance(op, (ast.NotEq, ast.Gt)) and bound == 1) or (isinstance(op, ast.GtE) and bound == 2):
        return name, False
    return None


def leaves_block(body: list[ast.stmt]) -> bool:
    """Whether a block always ends by leaving it (``raise``, ``return``, ``continue``, ``break``)."""
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break))


def _reads_only(func: ast.expr) -> bool:
    """Whether a callee only reads its arguments: a builtin of ``_READS_ONLY`` or a method of a string
    literal (``", ".join(s)``)."""
    if isinstance(func, ast.Name):
        return func.id in _READS_ONLY
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)


def may_change(statement: ast.stmt, names: frozenset[str]) -> frozenset[str]:
    """Which of ``names`` a statement may rebind or change in place: assigned, deleted, augmented, a
    method called on it (``s.add(x)``), or passed to anything but a builtin that only reads it."""
    changed = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and node.id in names and not isinstance(node.ctx, ast.Load):
            changed.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
            changed.add(node.value.id)  # ``s.add``, ``s.update``...: any method may change it
        elif isinstance(node, ast.Call) and not _reads_only(node.func):
            for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                value = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(value, ast.Name) and value.id in names:
                    changed.add(value.id)
    return frozenset(changed)


class ValueModel:
    ctx: LintContext
    scopes: list[dict[str, Binding]]
    function: FunctionBuilder | None
    # id(call node) -> how it differs per attempt ("uuid.uuid4()"), for calls of the taint categories.
    tainted: dict[int, str]
    instance_attributes: dict[str, str]
    # Local names known to hold at most one element where the walk is (``if len(s) == 1:``, or after
    # ``if len(s) != 1: raise``), until a statement may change them.
    single_element: frozenset[str]

    if TYPE_CHECKING:  # provided by NameResolver
        def lookup(self, name: str) -> Binding | None: ...
        def resolve(self, node: ast.AST) -> str | None: ...
        def is_project_candidate(self, qualname: str) -> bool: ...

    def holds_one(self, node: ast.AST) -> bool:
        """Whether an expression is a local name known here to hold at most one element."""
        return isinstance(node, ast.Name) and node.id in self.single_element

    def kind_of(self, node: ast.AST) -> str | None:
        """What kind of value an expression is, for order and hashing questions:
        "set", "listing", "dict" (built from one of those), "str", or None."""
        if isinstance(node, (ast.Set, ast.SetComp)):
            return "set"
        if is_string_literal(node):
            return "str"
        if isinstance(node, ast.Name):
            binding = self.lookup(node.id)
            return binding[0] if binding is not None and binding[0] in _VALUE_KINDS else None
        if isinstance(node, ast.Attribute):
            # ``self.pending = set()`` in a method types ``self.pending`` as a set in every method.
            return "set" if self.resolve(node) in ("builtins.set", "builtins.frozenset") else None
        if isinstance(node, ast.Call):
            func = node.func
            qualname = self.resolve(func)
            if qualname in ("builtins.set", "builtins.frozenset"):
                return "set"
            if qualname in LISTING_CALLS:
                return "listing"
            if qualname in ("builtins.str", "builtins.repr", "builtins.bytes", "builtins.format"):
                return "str"
            if qualname in ("builtins.dict", "builtins.dict.fromkeys") and (node.args or node.keywords):
                first = first_arg_value(node)
                return "dict" if first is not None and self.kind_of(first) in UNORDERED else None
            if isinstance(func, ast.Attribute):
                receiver = self.kind_of(func.value)
                method = func.attr
                if receiver == "set" and method in _SET_METHODS:
                    return "set"
                if receiver == "dict" and method in ("keys", "values", "items"):
                    return "dict"
                if receiver == "str" and method in _STR_METHODS:
                    return "str"
            return None
        if isinstance(node, ast.BinOp):
            operator = node.op
            if isinstance(operator, _SET_OPERATORS):
                if self.kind_of(node.left) == "set" or self.kind_of(node.right) == "set":
                    return "set"
            elif isinstance(operator, _STR_OPERATORS):
                if self.kind_of(node.left) == "str":
                    return "str"
            return None
        if isinstance(node, ast.DictComp):
            return "dict" if self.kind_of(node.generators[0].iter) in UNORDERED else None
        return None

    def taint_of(self, node: ast.AST) -> str | None:
        """How a value comes to differ per attempt (a clock/random/uuid call in it), or None."""
        if isinstance(node, ast.Call):
            found = self.tainted.get(id(node))
            if found is not None:
                return found
        elif isinstance(node, ast.Name):
            binding = self.lookup(node.id)
            if binding is not None and binding[0] == "taint":
                return binding[1]
            function = self.function
            return function.fresh_sources.get(node.id) if function is not None and binding is not None else None
        # Inlined rather than through ``syntax.children``: this runs on every assigned value.
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                found = self.taint_of(value)
                if found is not None:
                    return found
            elif isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        found = self.taint_of(child)
                        if found is not None:
                            return found
        return None

    def fresh_value(self, node: ast.AST) -> tuple[str, int] | None:
        """How a value comes to differ per attempt, and how many retry loops enclosed where it was made."""
        function = self.function
        assert function is not None
        for name in names_in(node):
            # Only the function's own locals: a value made once at import is not made per attempt.
            binding = next((scope[name] for scope in reversed(self.scopes) if name in scope), None)
            if binding is not None and binding[0] == "taint":
                return binding[1], function.fresh_levels.get(name, 0)
            source = function.fresh_sources.get(name)
            if source is not None and binding is not None:
                return source, function.fresh_levels.get(name, 0)
        for call in calls_in(node):
            found = self.tainted.get(id(call))
            if found is not None:
                return found, function.retry_loops
        return None

    def binding_for_value(self, value: ast.AST) -> Binding:
        """What a name assigned ``value`` is bound to."""
        taint = self.taint_of(value) if self.tainted else None
        if taint is not None:
            return ("taint", taint)
        kind = self.kind_of(value)
        if kind is not None:
            return (kind, None)
        if isinstance(value, (ast.Name, ast.Attribute)):
            qualname = self.resolve(value)
            binding = self.lookup(value.id) if isinstance(value, ast.Name) else None
            if binding is not None and binding[0] == "inst":
                return binding
            return ("q", qualname) if qualname else LOCAL
        if isinstance(value, (ast.Call, ast.Await)) and self._built_recorded(value):
            return LOCAL  # the framework records its calls: an untyped value, no effects
        advanced = _advanced_generator(value)
        if advanced is not None and self.resolve(advanced[0]) in _NEXT_CALLS:
            # ``session = next(get_db())`` (a FastAPI-style generator dependency), ``await anext(gen)``: the
            # first value the generator yields, which its summary records as what it returns.
            inner = self.binding_for_value(advanced[1])
            if inner[0] == "inst":
                return inner
        if isinstance(value, (ast.Call, ast.Await)):
            # ``("inst", F)`` for a function ``F`` means "what F returns" (resolution reads its summary).
            qualname = self.returned_function(value) or self.resolve(value)
            return ("inst", qualname) if qualname else LOCAL
        return LOCAL

    def _built_recorded(self, value: ast.AST) -> bool:
        """Whether a constructor call is given an object that makes the framework record the calls of what
        it builds (a profile's ``recording_arguments``)."""
        if not self.ctx.recording_arguments:
            return False
        call = unawaited(value)
        if not isinstance(call, ast.Call):
            return False
        for arg in call_args(call):
            for inner in (arg.value, *calls_in(arg.value)):
                target = inner.func if isinstance(inner, ast.Call) else inner
                if isinstance(target, (ast.Name, ast.Attribute)) and self.resolve(target) in self.ctx.recording_arguments:
                    return True
        return False

    def returned_function(self, node: ast.AST) -> str | None:
        """For a framework call returning what the function passed to it returns
        (``await workflow.execute_activity(fetch_tags, ...)``), that function's qualified name."""
        call = unawaited(node)
        if not isinstance(call, ast.Call) or self.resolve(call.func) not in self.ctx.result_calls:
            return None
        for arg in call.args:
            if isinstance(arg, (ast.Name, ast.Attribute)):
                target = self.resolve(arg)
                if target and self.is_project_candidate(target):
                    return target
        return None

    def prescan_instance_attributes(self, class_qualname: str, method: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """``self.client = OpenAI()`` in any method types ``self.client`` in every method."""
        for statement in method.body:
            if isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets, value = [statement.target], statement.value
            else:
                continue
            if not isinstance(value, (ast.Call, ast.Await, ast.Set, ast.SetComp)):
                continue
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    typed = "builtins.set" if isinstance(value, (ast.Set, ast.SetComp)) else self.resolve(value)
                    if typed:
                        self.instance_attributes[f"{class_qualname}.{target.attr}"] = typed
