"""Whether a value read in a function flows only into log output: the def-use check behind "a clock,
random or uuid read that only fills a log line" (``Effect.log_only``).

A value is *only logged* when every way it leaves the expression that reads it ends in an argument of a
logging call made as a statement of its own (``logger.info(f"at {datetime.now()}")``): through pure value
operations (f-string parts and format specs, ``%`` and ``+``, comparisons, attribute reads and method calls
on the value, ``str()``/``repr()``/``round()`` and the like, ``"...".format(...)``/``"...".join(...)``,
tuple/list/dict displays), or through a local variable whose every use is again only logged (checked
over the whole function, variables assigned from such a variable included). Anything else — a step's or
any other call's argument, a ``return``, a branch test outside a log call, an attribute or subscript
target, a ``global``/``nonlocal`` name, a walrus, a lambda or comprehension, a variable never used — keeps
the value's way out unknown, and so the read counts as any other.

Logging calls are the ``logging`` module's level functions, the level methods of a logger made by
``logging.getLogger(...)`` (or annotated ``logging.Logger``/``LoggerAdapter``), ``DBOS.logger``,
Temporal's ``workflow.logger``, loguru's ``logger`` and ``print`` (to standard output or error only).
Whether an only-logged read is a finding is each engine's call (``FrameworkProfile.log_only_harmless``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

LOG_LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
# What a level method is called on, as the resolver spells it (a logger made by ``logging.getLogger(...)`` is
# "an instance of" ``logging.getLogger``).
LOGGERS = frozenset({
    "logging", "logging.root", "logging.getLogger", "logging.Logger", "logging.LoggerAdapter",
    "dbos.DBOS.logger", "temporalio.workflow.logger", "loguru.logger",
})
_PRINT = "builtins.print"
_STANDARD_STREAMS = frozenset({"sys.stdout", "sys.stderr"})
# Builtins that turn a value into another without doing anything else.
_VALUE_BUILTINS = frozenset({
    "builtins.str", "builtins.repr", "builtins.format", "builtins.int", "builtins.float", "builtins.round",
    "builtins.abs", "builtins.bool", "builtins.len", "builtins.hex", "builtins.min", "builtins.max",
})
# Expressions through which a value only becomes part of another value.
_PURE_PARENTS = (
    ast.JoinedStr, ast.FormattedValue, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Starred, ast.keyword,
)

Resolve = Callable[[ast.expr], "str | None"]


def is_logging_call(call: ast.Call, resolve: Resolve) -> bool:
    """Whether a call writes log output only: a level method of a known logger, or ``print`` to a
    standard stream."""
    qualname = resolve(call.func)
    if qualname is None:
        return False
    if qualname == _PRINT:
        stream = next((k.value for k in call.keywords if k.arg == "file"), None)
        return stream is None or resolve(stream) in _STANDARD_STREAMS
    owner, _, method = qualname.rpartition(".")
    return method in LOG_LEVELS and owner in LOGGERS


class LogFlow:
    """The def-use facts of one function, built on the first question about it."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Resolve) -> None:
        self.resolve = resolve
        self.parents: dict[int, ast.AST] = {}
        self.loads: dict[str, list[ast.Name]] = {}
        self.shared: set[str] = set()  # ``global`` / ``nonlocal`` names: their value outlives the call
        for parent in ast.walk(function):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
            if isinstance(parent, ast.Name) and isinstance(parent.ctx, ast.Load):
                self.loads.setdefault(parent.id, []).append(parent)
            elif isinstance(parent, (ast.Global, ast.Nonlocal)):
                self.shared.update(parent.names)
        self._verdicts: dict[str, bool] = {}
        self._deciding: set[str] = set()

    def only_logged(self, node: ast.expr) -> bool:
        """Whether the value of ``node`` (an expression of this function) flows only into log output."""
        child: ast.AST = node
        while True:
            parent = self.parents.get(id(child))
            if parent is None:
                return False
            if isinstance(parent, _PURE_PARENTS):
                if isinstance(parent, (ast.Tuple, ast.List, ast.Subscript, ast.Attribute, ast.Starred)) and not isinstance(
                    getattr(parent, "ctx", ast.Load()), ast.Load
                ):
                    return False  # a target: the value is stored somewhere
                child = parent
                continue
            if isinstance(parent, ast.Call):
                if child is parent.func:
                    if not isinstance(child, ast.Attribute):
                        return False  # the value itself is called
                    child = parent  # a method of the value: what it returns is made from it
                    continue
                if is_logging_call(parent, self.resolve):
                    return isinstance(self.parents.get(id(parent)), ast.Expr)
                if self._converts_only(parent):
                    child = parent
                    continue
                return False
            if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and child is parent.value:
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                return len(targets) == 1 and isinstance(targets[0], ast.Name) and self._variable_only_logged(targets[0].id)
            return False

    def _converts_only(self, call: ast.Call) -> bool:
        """A call that only makes a value from its arguments: a builtin conversion, or a method of a string
        literal (``"{}".format(x)``, ``", ".join(parts)``)."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
            return True
        return self.resolve(func) in _VALUE_BUILTINS

    def _variable_only_logged(self, name: str) -> bool:
        """Whether every use of a local variable is only logged (a variable used nowhere is not: its value's
        way out is not one this check follows, such as ``locals()``)."""
        if name in self.shared:
            return False
        known = self._verdicts.get(name)
        if known is not None:
            return known
        if name in self._deciding:
            return True  # a cycle (``total = total + x``): decided by the uses outside it
        uses = self.loads.get(name, [])
        self._deciding.add(name)
        try:
            verdict = bool(uses) and all(self.only_logged(use) for use in uses)
        finally:
            self._deciding.discard(name)
        if not self._deciding:
            # Kept only when decided on its own: inside a cycle a verdict rests on an assumption still open.
            self._verdicts[name] = verdict
        return verdict
