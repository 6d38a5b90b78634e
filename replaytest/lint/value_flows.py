"""Where a fresh value goes: a UUID (or a random draw) whose only use is to name a child run.

DBOS records a child workflow started from a workflow (``with SetWorkflowID(key): DBOS.start_workflow(...)``,
``DBOS.enqueue_workflow``, ``queue.enqueue``) under the parent's operation number with the child's id, and on
recovery returns the recorded child without looking at the id given this time. A fresh id that is used for
nothing else therefore changes nothing a recovery sees. The profile says which context managers name the next
child (``FrameworkProfile.child_id_scopes``) and which calls start one (``child_starts``).

The collector marks, before walking an expression, where its value goes (``mark``): a ``return``, an argument
of a project function, a local variable, or the argument of such a scope whose body only starts a child.
The value passes through carriers on the way (``str(x)``, an f-string, ``+`` / ``%``, ``.hex``, a slice,
``await``). A fresh value (an effect of ``FRESH_CATEGORIES``) or a project call's result records where it goes
as ``flows``: ``return``, ``child:<framework>``, ``param:<function>:<keyword or #position>``. A local holding a
fresh value is followed load by load as the walk meets them (``TrackedLocal``), and checked over the whole body
(``NameUses``) when it was assigned in a loop or the function defines a nested function, lambda or class, whose
defaults and closures the walk does not see in order; it must be bound once and every load must send it to one
of those places. A parameter whose only uses are a child scope's argument and ``is None`` tests is recorded as
the function's ``child_params``. Resolution replaces
``return`` by where the caller sends the call's result and decides ``param:`` with the callee's
``child_params``; a value is exempt only when every place it goes names a child of the framework walking it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

# Fresh ids made by a call (a UUID, a random draw): the categories whose effects record where their value goes
# (clock reads are used as ids too rarely to pay for following every `start = time.time()`).
FRESH_CATEGORIES = frozenset({"uuid", "random"})
RETURN = "return"
_CARRIER_ATTRIBUTES = frozenset({"hex", "int", "urn"})


def leaves(value: ast.expr) -> list[ast.expr]:
    """The calls and names whose value becomes ``value`` unchanged in substance (through the carriers)."""
    found: list[ast.expr] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1 and not node.keywords:
                stack.append(node.args[0])
            else:
                found.append(node)
        elif isinstance(node, ast.Name):
            found.append(node)
        elif isinstance(node, ast.JoinedStr):
            stack.extend(part.value for part in node.values if isinstance(part, ast.FormattedValue))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            stack.append(node.left)
            stack.append(node.right)
        elif isinstance(node, ast.Attribute) and node.attr in _CARRIER_ATTRIBUTES:
            stack.append(node.value)
        elif isinstance(node, ast.Subscript):
            stack.append(node.value)
        elif isinstance(node, ast.Await):
            stack.append(node.value)
    return found


def starts_child_only(body: list[ast.stmt], starts: frozenset[str], resolve: Callable[[ast.expr], str | None]) -> bool:
    """Whether a ``with`` body is one statement whose value is a call in ``starts`` (``return
    DBOS.enqueue_workflow(...)``, ``handle = DBOS.start_workflow(...)``, ``await queue.enqueue_async(...)``)."""
    if len(body) != 1:
        return False
    statement = body[0]
    if not isinstance(statement, (ast.Expr, ast.Return, ast.Assign, ast.AnnAssign)) or statement.value is None:
        return False
    value = statement.value
    if isinstance(value, ast.Await):
        value = value.value
    return isinstance(value, ast.Call) and resolve(value.func) in starts


# Where the walk saw a value go (``ModuleCollector.sinks``): "return", "child:<framework>", or, built without a
# string per argument, ("param", function, keyword or #position) and ("local", name).
Sink = str | tuple[str, ...]


def flow_of(sink: Sink | None) -> str | None:
    """A sink as a place in ``Effect.flows``; None for a local (followed separately) or no sink."""
    if sink is None:
        return None
    if type(sink) is tuple:
        return f"param:{sink[1]}:{sink[2]}" if sink[0] == "param" else None
    return sink  # type: ignore[return-value]


def acceptable(sink: Sink | None) -> bool:
    """Whether a local's load sends its value only to a place a child's id may go (returned, a parameter, a scope)."""
    return flow_of(sink) is not None


class TrackedLocal:
    """A local a fresh value was assigned to, followed by the walk: its function, the effects made into it, how
    often it is bound and where each load sends it. ``verify``: made inside a loop, where a load before the
    assignment reads it too, so ``NameUses`` checks the whole body at the end."""

    __slots__ = ("function", "pendings", "stores", "uses", "poisoned", "verify")

    def __init__(self, function: object, verify: bool) -> None:
        self.function = function
        self.pendings: list = []
        self.stores = 0
        self.uses: set[str] = set()
        self.poisoned = False
        self.verify = verify


class NameUses:
    """Every load and binding of some names in one function's body, with each load's parent node: the whole-body
    check of a fresh value's local (``TrackedLocal.verify``) and of a parameter handed to a child scope. Walked
    at most once per function, and only for functions that have such a name (both are rare)."""

    def __init__(self, body: list[ast.stmt], names: set[str]) -> None:
        self.names = names
        self.loads: dict[str, list[tuple[ast.Name, ast.AST]]] = {name: [] for name in names}
        self.stores: dict[str, int] = dict.fromkeys(names, 0)
        self.nested: set[str] = set()  # used in a nested function, lambda or class: anything may happen there
        for statement in body:
            self._visit(statement, None, nested=False)

    def _visit(self, node: ast.AST, parent: ast.AST | None, nested: bool) -> None:
        if isinstance(node, ast.Name) and node.id in self.names:
            if isinstance(node.ctx, ast.Load):
                if nested:
                    self.nested.add(node.id)
                else:
                    self.loads[node.id].append((node, parent if parent is not None else node))
            else:
                self.stores[node.id] += 1
            return
        bound = _bound_name(node)
        if bound is not None:
            for name in bound:
                if name in self.names:
                    self.stores[name] += 1
        inner = nested or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for child in ast.iter_child_nodes(node):
            self._visit(child, node, inner)


def _bound_name(node: ast.AST) -> tuple[str, ...] | None:
    """Names a statement or pattern binds as a plain string (not a Name node)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, ast.ExceptHandler):
        return (node.name,) if node.name else None
    if isinstance(node, ast.alias):
        return ((node.asname or node.name).partition(".")[0],)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return tuple(node.names)
    name = getattr(node, "name", None) if type(node).__name__ in ("MatchAs", "MatchStar") else None
    rest = getattr(node, "rest", None) if type(node).__name__ == "MatchMapping" else None
    found = tuple(n for n in (name, rest) if isinstance(n, str))
    return found or None


def is_none_test(name: ast.Name, parent: ast.AST) -> bool:
    """``name is None`` / ``name is not None``: the same answer for every fresh value (never None)."""
    if not isinstance(parent, ast.Compare) or len(parent.ops) != 1 or not isinstance(parent.ops[0], (ast.Is, ast.IsNot)):
        return False
    other = parent.comparators[0] if parent.left is name else parent.left
    return isinstance(other, ast.Constant) and other.value is None
