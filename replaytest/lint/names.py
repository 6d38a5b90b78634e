"""Name resolution for the batched pass: import bindings (aliases, relative and conditional imports),
scope lookup, and the qualified name an expression denotes — ``client.chat.completions.create`` on a
local bound to ``OpenAI()`` resolves to ``openai.OpenAI.chat.completions.create``.

``NameResolver`` is a part of ``ModuleCollector``; it reads the scopes the collector maintains.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from replaytest.lint.context import LintContext
from replaytest.lint.facts import Binding
from replaytest.lint.syntax import first_arg_value, string_value
from replaytest.lint.vocabulary import TYPED_FACTORIES

_BUILTIN_NAMES = frozenset(dir(builtins))


class NameResolver:
    ctx: LintContext
    module: str
    package: str
    module_scope: dict[str, Binding]
    scopes: list[dict[str, Binding]]
    # "module.Class.attr" -> type, from ``self.attr = ...`` in any method of the class.
    instance_attributes: dict[str, str]
    # When the module's package is a namespace folder named like a library: the folder's own module names
    # (other names under the package are the library's); None otherwise.
    library_package_entries: frozenset[str] | None

    def import_bindings(self, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
        """(local name, qualified name) for each name an import statement binds."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    yield alias.asname, alias.name
                else:
                    root = alias.name.split(".", 1)[0]
                    yield root, root
            return
        base = node.module or ""
        if node.level:
            package = self.package
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            if not package and node.level > 1:
                return
            base = f"{package}.{base}" if base and package else (base or package)
        if not base:
            return
        for alias in node.names:
            if alias.name == "*":
                return
            yield alias.asname or alias.name, f"{base}.{alias.name}"

    def lookup(self, name: str) -> Binding | None:
        for scope in reversed(self.scopes):
            binding = scope.get(name)
            if binding is not None:
                return binding
        return self.module_scope.get(name)

    def is_local(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def resolve(self, node: ast.AST) -> str | None:
        """The qualified name an expression denotes (or the type of the instance it evaluates to)."""
        if isinstance(node, ast.Name):
            binding = self.lookup(node.id)
            if binding is None:
                return f"builtins.{node.id}" if node.id in _BUILTIN_NAMES else None
            kind, value = binding
            return value if kind in ("q", "inst") else None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            name = f"{base}.{node.attr}"
            typed = self.instance_attributes.get(name)
            if typed is not None:
                return typed
            return self.ctx.type_aliases.get(name, name)
        if isinstance(node, ast.Call):
            base = self.resolve(node.func)
            if base in TYPED_FACTORIES and (node.args or node.keywords):
                literal = string_value(first_arg_value(node))
                if literal is not None:
                    return f"{base}[{literal}]"
            if base is not None:
                # A builder method returns the builder: ``StateGraph(S).add_node(...)`` is still the graph.
                return self.ctx.builder_methods.get(base, base)
            return base
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self.resolve(node.left)
            return left if left == "pathlib.Path" else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            # A LangChain pipeline (``prompt | llm | parser``) invokes the model inside it.
            for side in (node.right, node.left):
                typed = self.resolve(side)
                if typed is not None:
                    rule = self.ctx.match_call(f"{typed}.invoke")
                    if rule is not None and rule.category == "model-call":
                        return typed
            return None
        if isinstance(node, ast.Await):
            return self.resolve(node.value)
        return None

    def annotated_type(self, annotation: ast.AST) -> str | None:
        """The qualified name an annotation names, its subscript dropped (``set[str]`` -> ``builtins.set``)."""
        if isinstance(annotation, ast.Subscript):
            annotation = annotation.value
        return self.resolve(annotation) if isinstance(annotation, (ast.Name, ast.Attribute)) else None

    def is_project_candidate(self, qualname: str) -> bool:
        if qualname.startswith(self.module + "."):
            return True
        if self.package and qualname.startswith(self.package + "."):
            entries = self.library_package_entries
            if entries is None or qualname[len(self.package) + 1:].partition(".")[0] in entries:
                return True
        return qualname.split(".", 1)[0] not in self.ctx.external_roots
