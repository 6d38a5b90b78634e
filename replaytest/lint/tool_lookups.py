"""Tools run through a lookup (``tools_by_name[name].invoke(args)``): which project tools the lookup can name.

An agent loop often runs the tool a model asked for by looking it up by name in a collection built from
the project's tools (``tools = [send_email, search]``, ``{t.name: t for t in tools}``, ``dict(zip(names,
tools))``, ``ToolNode(tools)``, or a project helper that picks tools by name). What such a call does is
what the tools it can name do. The collector records, per module, how each module-level name holding
tools is built (``ModuleSummary.tool_sets``), per function the lookups it runs (``FunctionSummary.lookups``)
and the string-keyed project functions of its dict literals (``FunctionSummary.tool_keys``); ``ToolSets``
resolves, on summaries alone, a looked-up name to the project functions it may hold. A collection that
cannot be resolved (a parameter, a value built at run time) resolves to nothing: a lookup is reported
only through tools known to be in it.
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

from replaytest.lint.resolve import Program

# The methods that run a LangChain tool (``BaseTool``): a lookup's value called through one runs the tool.
TOOL_RUN_METHODS = frozenset({"invoke", "ainvoke", "run", "arun"})

# Classes whose first argument is the collection of tools they run (LangGraph's prebuilt tool node).
_TOOL_HOLDERS = frozenset({"ToolNode"})

_MAX_DEPTH = 8


class _Names(Protocol):
    """What the module collector answers about names (``replaytest.lint.names.NameResolver``)."""

    module: str
    aliases: dict[str, Any]
    module_scope: dict[str, Any]

    def is_local(self, name: str) -> bool: ...
    def lookup(self, name: str) -> Any: ...
    def resolve(self, node: ast.AST) -> str | None: ...
    def is_project_candidate(self, qualname: str) -> bool: ...
    def _callback_target(self, value: ast.AST) -> str | None: ...


def module_name(collector: _Names, node: ast.AST) -> str | None:
    """The qualified name of a module-level (or imported) name an expression is, not a local."""
    if not isinstance(node, ast.Name) or collector.is_local(node.id):
        return None
    if node.id in collector.aliases:
        return str(collector.aliases[node.id])
    if node.id in collector.module_scope:
        return f"{collector.module}.{node.id}"
    return None


def keyed_tools(collector: _Names, node: ast.Dict) -> list[tuple[str, str]]:
    """The (string key, project function) pairs of a dict literal (``{"send": send_tool}``); its values may be
    imported in the function itself."""
    pairs = []
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Name):
            binding = collector.lookup(value.id)
            if binding is not None and binding[0] == "q" and binding[1] and collector.is_project_candidate(binding[1]):
                pairs.append((key.value, str(binding[1])))
    return pairs


def looked_up_in(collector: _Names, value: ast.AST) -> str | None:
    """``D[key]`` or ``D.get(key)`` of a module-level ``D`` (or ``D.tools_by_name[key]``): the qualified name of
    ``D``."""
    if isinstance(value, ast.Await):
        value = value.value
    if isinstance(value, ast.Subscript):
        holder = value.value
        if isinstance(holder, ast.Attribute) and holder.attr == "tools_by_name":
            holder = holder.value  # ``tool_node.tools_by_name[name]`` of a ``ToolNode(tools)``
        return module_name(collector, holder)
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
            and value.args):
        return module_name(collector, value.func.value)
    return None


def tool_set_spec(collector: _Names, value: ast.AST, depth: int = 0) -> list[Any] | None:
    """How a value holding tools is built (see ``ModuleSummary.tool_sets``), or None when it is not one of
    the shapes followed."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)) or isinstance(value, ast.Dict):
        elements = value.values if isinstance(value, ast.Dict) else value.elts
        members = [target for element in elements if (target := collector._callback_target(element))]
        return ["members", members] if members else None
    if isinstance(value, (ast.DictComp, ast.ListComp, ast.SetComp)) and len(value.generators) == 1:
        return tool_set_spec(collector, value.generators[0].iter, depth + 1)
    if isinstance(value, ast.Name):
        name = module_name(collector, value)
        return ["of", name] if name is not None else None
    if not isinstance(value, ast.Call):
        return None
    callee = collector.resolve(value.func) or ""
    if callee == "builtins.dict" and len(value.args) == 1 and isinstance(value.args[0], ast.Call):
        inner = value.args[0]
        if collector.resolve(inner.func) == "builtins.zip" and len(inner.args) == 2:
            return tool_set_spec(collector, inner.args[1], depth + 1)  # dict(zip(names, tools))
        return None
    if callee.rsplit(".", 1)[-1] in _TOOL_HOLDERS and value.args:
        return tool_set_spec(collector, value.args[0], depth + 1)
    if callee and collector.is_project_candidate(callee):
        arguments = [*value.args, *(keyword.value for keyword in value.keywords)]
        strings = [element.value for argument in arguments if isinstance(argument, (ast.List, ast.Tuple))
                   for element in argument.elts
                   if isinstance(element, ast.Constant) and isinstance(element.value, str)]
        held = [spec for argument in arguments if (spec := tool_set_spec(collector, argument, depth + 1))]
        return ["call", callee, strings, held]
    return None


class ToolSets:
    """Resolves a looked-up module-level name to the project functions (tools) it may hold."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._memo: dict[str, tuple[str, ...] | None] = {}

    def members(self, qualname: str) -> tuple[str, ...] | None:
        """The tools the name ``qualname`` may hold, in source order; None when that is not known."""
        if qualname not in self._memo:
            self._memo[qualname] = None  # a name built from itself resolves to nothing
            found = self._name(qualname, 0)
            self._memo[qualname] = tuple(dict.fromkeys(found)) if found is not None else None
        return self._memo[qualname]

    def _name(self, qualname: str, depth: int) -> list[str] | None:
        if depth > _MAX_DEPTH:
            return None
        module, _, name = qualname.rpartition(".")
        summary = self.program.module(module) if module else None
        if summary is None:
            return None
        spec = summary.tool_sets.get(name)
        if spec is not None:
            return self._spec(spec, depth + 1)
        target = summary.aliases.get(name)
        return self._name(target, depth + 1) if target is not None and target != qualname else None

    def _spec(self, spec: list[Any], depth: int) -> list[str] | None:
        if depth > _MAX_DEPTH:
            return None
        kind = spec[0]
        if kind == "members":
            return list(spec[1])
        if kind == "of":
            return self._name(spec[1], depth + 1)
        if kind != "call":
            return None
        _, callee, strings, held = spec
        located = self.program.find_function(callee)
        if located is not None and located[1].tool_keys:
            # A helper picking tools by name: the names passed select among those it keys (all of them
            # when none is passed).
            keys = located[1].tool_keys
            return [target for key, target in keys if not strings or key in strings]
        # A helper given a collection of tools (``by_name(tools)``): what it builds holds those.
        found = [self._spec(inner, depth + 1) for inner in held]
        known = [member for members in found if members is not None for member in members]
        return known if any(members is not None for members in found) else None
