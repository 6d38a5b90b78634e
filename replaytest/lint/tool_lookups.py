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

One source of tools is followed without being resolved: the run's configuration. LangGraph hands a node
the ``RunnableConfig`` it was invoked with, and an application may put its tools there
(``config["configurable"]["tools_by_name"]``, loaded at start-up from an MCP server, say). Their code is
not the project's to read, and a tool exists to act, so running one is a hazard where running it again
is one. ``config_origin`` says where a value comes from — the config itself, its "configurable" mapping,
an item below that (a tool, or a collection of tools), or a parameter of the function — through locals,
``[...]``, ``.get(...)``, ``x or {}`` and ``a if c else b``; the collector records the tools run on such
values (``FunctionSummary.config_tools``) and, at calls of project helpers, which arguments carry a value
from the config (``CallSite.config_args``), so a helper that runs a tool from its parameter is followed.
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

# The type of the config LangGraph passes a node (and LangChain a runnable), and the calls returning the
# config of the run in progress.
CONFIG_TYPES = frozenset({"langchain_core.runnables.RunnableConfig", "langchain_core.runnables.config.RunnableConfig"})
CONFIG_CALLS = frozenset({
    "langgraph.config.get_config", "langchain_core.runnables.config.ensure_config",
    "langchain_core.runnables.ensure_config",
})
_CONFIG_TYPE_NAME = "RunnableConfig"
_CONFIG_CALL_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in CONFIG_CALLS)
# The parameter name LangGraph fills with the config when a node function declares it.
CONFIG_PARAMETER = "config"
# Where a value comes from (``config_origin``): the config itself; its "configurable" mapping; an item below
# that ("config:" + the key it was taken by, "" when not a literal); a parameter ("param:" + name + ":" +
# its position among the positional parameters after ``self``, -1 for a keyword-only one).
CONFIG_ROOT = "root"
# The category of running a tool taken from the run's config (an effect whose code cannot be seen; its
# ``args`` holds the key the tool, or its collection, was taken by, "" when not a literal).
CONFIG_TOOL = "config-tool"
CONFIGURABLE = "configurable"
CONFIG_ITEM = "config:"
PARAMETER = "param:"


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


def config_parameters(collector: _Names, node: ast.FunctionDef | ast.AsyncFunctionDef, bound_first: bool
                      ) -> dict[str, str]:
    """The origin of each parameter: the run's config (named ``config`` or annotated ``RunnableConfig``), or
    the parameter itself (see ``CONFIG_ROOT`` / ``PARAMETER``)."""
    params = node.args
    positional = [*params.posonlyargs, *params.args][1 if bound_first else 0:]
    origins: dict[str, str] = {}
    for position, param in [*enumerate(positional), *((-1, param) for param in params.kwonlyargs)]:
        annotation = param.annotation
        # ``RunnableConfig``, ``Optional[RunnableConfig]``, ``RunnableConfig | None``.
        parts = () if annotation is None else (
            (annotation,) if isinstance(annotation, (ast.Name, ast.Attribute)) else ast.walk(annotation))
        typed = any(_last_name(part) == _CONFIG_TYPE_NAME and collector.resolve(part) in CONFIG_TYPES
                    for part in parts)
        origins[param.arg] = CONFIG_ROOT if typed or param.arg == CONFIG_PARAMETER else f"{PARAMETER}{param.arg}:{position}"
    return origins


def _last_name(node: ast.AST) -> str | None:
    """The name a ``Name`` or ``Attribute`` ends in."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def config_origin(collector: _Names, values: dict[str, str], value: ast.AST, depth: int = 0) -> str | None:
    """Where ``value`` comes from (``CONFIG_ROOT``, ``CONFIGURABLE``, ``CONFIG_ITEM`` + key, ``PARAMETER`` +
    name), given the origins of the function's locals; None when from none of those."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, ast.Await):
        return config_origin(collector, values, value.value, depth + 1)
    if isinstance(value, ast.Name):
        return values.get(value.id) if collector.is_local(value.id) else None
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        # ``config.get("configurable") or {}``
        return next((o for v in value.values if (o := config_origin(collector, values, v, depth + 1))), None)
    if isinstance(value, ast.IfExp):
        # ``config.get("configurable", {}) if config else {}``
        return (config_origin(collector, values, value.body, depth + 1)
                or config_origin(collector, values, value.orelse, depth + 1))
    holder: ast.AST | None = None
    key: ast.AST | None = None
    if isinstance(value, ast.Subscript):
        holder, key = value.value, value.slice
    elif isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and value.args:
            holder, key = func.value, value.args[0]
        elif isinstance(func, ast.Attribute) and func.attr == "values" and not value.args:
            return config_origin(collector, values, func.value, depth + 1)  # ``tools.values()``: its elements
        elif (not value.args and _last_name(func) in _CONFIG_CALL_NAMES
              and collector.resolve(func) in CONFIG_CALLS):
            return CONFIG_ROOT
    if holder is None:
        return None
    origin = config_origin(collector, values, holder, depth + 1)
    if origin is None:
        return None
    literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    if origin == CONFIG_ROOT:
        return CONFIGURABLE if literal == "configurable" else None  # the callbacks, tags ... are no tools
    if origin == CONFIGURABLE:
        return f"{CONFIG_ITEM}{literal or ''}"
    return origin  # an item of an item, or of a parameter


def is_config_tool(origin: str | None) -> bool:
    """Whether a value of this origin may be a tool taken from the config (an item below "configurable")."""
    return origin is not None and origin.startswith(CONFIG_ITEM)


def passes_config(origin: str | None) -> bool:
    """Whether a value of this origin, passed to a helper, carries what the config holds."""
    return origin is not None and (origin in (CONFIG_ROOT, CONFIGURABLE) or origin.startswith(CONFIG_ITEM))


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
