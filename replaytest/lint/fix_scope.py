"""Where a fix may go: the scope rules a replacement must respect, decided on CPython's own ``ast``.

A replacement is text written where a call was, so it must mean there what it means in the profile:

- ``await asyncio.sleep(...)`` only directly inside an ``async def`` (not in a sync function, a lambda,
  a comprehension or a class body), and a replacement that is a coroutine in async code
  (``scope="sync"``) only outside one;
- its first name must reach the intended binding: ``workflow`` in ``workflow.now()`` must be unbound
  (the fix adds ``from temporalio import workflow``) or bound at module level by exactly that import, never
  a local, a parameter, a nested function's variable or another module-level value; ``ctx`` in
  ``ctx.uuid()`` must still be the orchestration function's parameter.

The lint report drops fixes that fail here (no fix offered), and ``fix`` checks again on the text it is
about to rewrite. ``ast`` is used rather than libcst so a lint run served from the cache stays parser-free.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from replaytest.lint.model import Fix

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_HEAD = r"(?:await\s+)?([A-Za-z_][A-Za-z0-9_]*)"  # compiled on first use (``re`` keeps it)


class FixSites:
    """One module's source, parsed once, answering "may this fix go at this call?"."""

    def __init__(self, source: str | bytes) -> None:
        self.tree = ast.parse(source)
        text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
        self.lines = text.splitlines()
        self.parents: dict[ast.AST, ast.AST] = {}
        self.calls: dict[tuple[int, int], ast.Call] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Call):
                self.calls[(node.lineno, self._column(node.lineno, node.col_offset))] = node

    def _column(self, line: int, byte_offset: int) -> int:
        """1-based character column (libcst's) of an ``ast`` UTF-8 byte offset."""
        if 0 < line <= len(self.lines):
            return len(self.lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1
        return byte_offset + 1

    def problem(self, line: int, column: int, fix: Fix) -> str | None:
        """Why ``fix`` cannot replace the call at (line, column), or None when it can."""
        call = self.calls.get((line, column))
        if call is None:
            return "the flagged call is no longer at its position"
        scopes = list(self._scopes(call))
        innermost = scopes[0] if scopes else None
        if fix.scope == "async" and not isinstance(innermost, ast.AsyncFunctionDef):
            return "the replacement awaits, but the call is not directly inside an `async def`"
        if fix.replacement.startswith("await ") and not isinstance(self.parents.get(call), (ast.Expr, ast.Assign)):
            return "the replacement awaits; written inside a larger expression it would change its meaning"
        if fix.scope == "sync":
            function = next((s for s in scopes if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
            if isinstance(function, ast.AsyncFunctionDef):
                return "the replacement is a coroutine in async code here (it would need `await`)"
        match = re.match(_HEAD, fix.replacement)
        if match is None:
            return None
        return self._binding_problem(match.group(1), scopes, fix)

    def _scopes(self, node: ast.AST) -> Iterator[ast.AST]:
        """The scopes enclosing ``node``, innermost first; a class body only when it is the innermost
        (names bound in a class are not visible in its methods)."""
        current = node
        first = True
        while current in self.parents:
            parent = self.parents[current]
            if isinstance(parent, _SCOPES) and _inside_scope_body(parent, current):
                if not isinstance(parent, ast.ClassDef) or first:
                    yield parent
                first = False
            current = parent

    def _binding_problem(self, head: str, scopes: list[ast.AST], fix: Fix) -> str | None:
        for scope in scopes:
            kinds = _bindings(scope, head)
            if not kinds or kinds == {"nonlocal"}:
                continue
            if "global" in kinds:
                break
            if fix.import_from is None and kinds == {"param"} and isinstance(scope, _FUNCTIONS):
                return None  # the context parameter, as the profile means it
            return f"`{head}` is a local name here, not what the replacement means"
        module_kinds = _bindings(self.tree, head)
        if fix.import_from is None:
            return f"`{head}` is not the orchestration function's parameter here"
        source_module, name = fix.import_from
        expected = f"from {source_module} import {name}" if source_module else f"import {name}"
        if module_kinds and module_kinds != {expected}:
            return f"`{head}` is bound to something else in this module"
        return None

    def module_binds(self, import_from: tuple[str, str]) -> bool:
        """Whether the module already binds the import's name by exactly that import (anywhere at module
        level, e.g. inside ``with workflow.unsafe.imports_passed_through():``)."""
        source_module, name = import_from
        expected = f"from {source_module} import {name}" if source_module else f"import {name}"
        return expected in _bindings(self.tree, name)


def _inside_scope_body(scope: ast.AST, child: ast.AST) -> bool:
    """Whether ``child`` (a direct child of ``scope``) is evaluated inside the scope, not around it
    (decorators, defaults, annotations and a comprehension's first iterable belong to the outer scope)."""
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return child in scope.body
    if isinstance(scope, ast.Lambda):
        return child is scope.body
    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return not (scope.generators and child is scope.generators[0])
    return True


def _bindings(scope: ast.AST, name: str) -> set[str]:
    """How ``name`` is bound directly in ``scope``: "param", "assign", "def", "global", "nonlocal",
    or the import statement (``from temporalio import workflow``, ``import asyncio``)."""
    kinds: set[str] = set()
    if isinstance(scope, _FUNCTIONS):
        arguments = scope.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if any(a.arg == name for a in every):
            kinds.add("param")
        body: list[ast.AST] = [scope.body] if isinstance(scope, ast.Lambda) else list(scope.body)
    elif isinstance(scope, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        body = [generator.target for generator in scope.generators]
    else:
        body = list(getattr(scope, "body", []))
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                kinds.add("def")
            stack.extend(node.decorator_list)
            continue  # its body is another scope
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            kinds.add("assign")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    kinds.add(f"import {alias.name}" if alias.asname is None or alias.asname == alias.name
                              else "assign")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    plain = alias.asname is None or alias.asname == alias.name
                    kinds.add(f"from {'.' * node.level}{node.module or ''} import {alias.name}" if plain else "assign")
        elif isinstance(node, ast.Global) and name in node.names:
            kinds.add("global")
        elif isinstance(node, ast.Nonlocal) and name in node.names:
            kinds.add("nonlocal")
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            kinds.add("assign")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            kinds.add("assign")
        elif isinstance(node, ast.MatchMapping) and node.rest == name:
            kinds.add("assign")
        stack.extend(ast.iter_child_nodes(node))
    return kinds
