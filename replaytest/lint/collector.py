"""The one batched pass: walk a parsed module once and produce its ``ModuleSummary``.

The walk is hand-rolled rather than an ``ast.NodeVisitor``: a handler per node type that needs one, and
each other node's child fields read directly (expression contexts and operators skipped). ``ModuleCollector`` does the walking and keeps the scopes; its parts live beside it:
``names`` (imports and the qualified name of an expression), ``values`` (value kinds and values that
differ per attempt), ``roles`` (which functions are orchestration code or steps, from the profiles) and
``field_factories``. Table rules are matched here (``LintContext.match_call``); structural rules own
their detection and are called through their hooks (``Rule.on_call`` …) at fixed points of the walk.

The tree is CPython's ``ast`` (the screen's parse, reused): positions come with its nodes, and are
turned into character columns (``syntax.SourceText``) only for what can be reported at its own place
(effects and call sites of orchestration functions and helpers, findings reported in any code).
"""

from __future__ import annotations

import ast
import os
from typing import Any, NamedTuple, cast

from replaytest.lint.context import LintContext
from replaytest.lint.facts import LOCAL, Binding, FunctionBuilder, Pending
from replaytest.lint.field_factories import FieldFactories
from replaytest.lint.guards import argument_value, guard_parameter, parameter_specs, test_guards
from replaytest.lint.log_flow import LogFlow
from replaytest.lint.model import (
    ORCHESTRATION,
    STEP,
    CallSite,
    ClassSummary,
    Effect,
    FunctionSummary,
    GraphNode,
    ModuleSummary,
    Span,
)
from replaytest.lint.names import NameResolver
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.roles import ClassInfo, FrameworkRoles
from replaytest.lint.rule import CallFact, Rule
from replaytest.lint.syntax import (
    Arg,
    SourceText,
    arg_text,
    call_args,
    calls_in,
    child_fields,
    dotted_text,
    string_value,
    unawaited,
)
from replaytest.lint.tool_lookups import (
    PARAMETER,
    TOOL_RUN_METHODS,
    config_origin,
    config_parameters,
    is_config_tool,
    keyed_tools,
    looked_up_in,
    passes_config,
    tool_set_spec,
)
from replaytest.lint.value_flows import (
    FRESH_CATEGORIES,
    NameUses,
    Sink,
    TrackedLocal,
    acceptable,
    flow_of,
    is_none_test,
    leaves,
    starts_child_only,
)
from replaytest.lint.values import (
    ALWAYS_TRUTHY,
    SET_PAIR_CALLS,
    SET_TYPES,
    ValueModel,
    leaves_block,
    may_change,
    single_element_test,
)
from replaytest.lint.vocabulary import OPEN_CALLS

_CONTAINER_CALLS = frozenset({"builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict",
                              "collections.OrderedDict", "collections.deque", "collections.Counter"})
# Synchronisation primitives and queues: a module-level one is state shared by every run, like a container.
# A module may only declare one (``READY: asyncio.Semaphore``) and bind it later, with ``global``, in set-up code.
_PRIMITIVE_TYPES = frozenset({
    f"{module}.{name}"
    for module, names in (
        ("asyncio", ("Semaphore", "BoundedSemaphore", "Event", "Lock", "Condition", "Queue", "LifoQueue",
                     "PriorityQueue")),
        ("threading", ("Semaphore", "BoundedSemaphore", "Event", "Lock", "RLock", "Condition")),
        ("queue", ("Queue", "LifoQueue", "PriorityQueue", "SimpleQueue")),
    )
    for name in names
})


def _option_value(options: ast.expr, key: str) -> ast.expr | None:
    """The value given for ``key`` in an options mapping written in place: a dict display (``{"name": ...}``)
    or a call building one with keywords (``StepOptions(name=...)``, ``dict(name=...)``); None otherwise."""
    if isinstance(options, ast.Dict):
        for option, value in zip(options.keys, options.values):
            if isinstance(option, ast.Constant) and option.value == key:
                return value
    elif isinstance(options, ast.Call):
        for keyword in options.keywords:
            if keyword.arg == key:
                return keyword.value
    return None


class CallSiteSeen(NamedTuple):
    """A call as the walk saw it, kept for rules reading libcst's tree: the ``ast`` node, the function it is
    in, the resolved callee, its arguments and the depth of first-run-only code around it."""

    node: ast.Call
    function: FunctionBuilder | None
    qualname: str | None
    args: tuple[Arg, ...]
    first_run_only: int


def _folder_entries(folder: str) -> frozenset[str]:
    """The module names a folder offers: its ``*.py`` stems and its sub-folders."""
    try:
        with os.scandir(folder) as entries:
            return frozenset(e.name[:-3] if e.name.endswith(".py") else e.name for e in entries
                             if e.name.endswith(".py") or e.is_dir())
    except OSError:
        return frozenset()


class ModuleCollector(NameResolver, ValueModel, FrameworkRoles, FieldFactories):
    """Collects one module's summary. Create one per module; call ``collect`` once. It is the
    ``ModuleFacts`` the structural rules' hooks receive."""

    def __init__(self, context: LintContext, module: str, path: str, is_package: bool) -> None:
        self.ctx = context
        self.module = module
        self.path = path
        self.package = module if is_package else module.rpartition(".")[0]
        # A folder without ``__init__.py`` named like a framework or library (``llama_agents/dbos/``, named
        # ``dbos`` when linted from ``llama_agents``) does not make that library's names the project's:
        # Python imports the installed regular package before a namespace folder.
        # Only the folder's own files and sub-folders are the project's then.
        self.library_package_entries: frozenset[str] | None = None
        top = self.package.partition(".")[0]
        folder = os.path.dirname(path)
        if top and top in context.external_roots and not os.path.isfile(os.path.join(folder, "__init__.py")):
            self.library_package_entries = _folder_entries(folder)
        self.module_scope: dict[str, Binding] = {}
        self.aliases: dict[str, str] = {}
        self.containers: set[str] = set()
        self.registered: dict[str, FrameworkProfile] = {}
        self.instance_attributes: dict[str, str] = {}
        self.scopes: list[dict[str, Binding]] = []
        self.function: FunctionBuilder | None = None
        self.functions: list[FunctionBuilder] = []
        self.classes: dict[str, ClassSummary] = {}
        self.findings: list[Pending] = []
        self.tainted: dict[int, str] = {}
        self.used_profiles: list[FrameworkProfile] = []
        self.step_targets: set[str] = set()
        # (node name, target, registering call, framework) of every graph node this module adds.
        self.graph_nodes: list[tuple[str, str, ast.AST, str]] = []
        # Module-level names and the values bound to them (``tool_lookups.tool_set_spec`` reads them at the end).
        self.module_values: list[tuple[str, ast.expr]] = []
        self.source = SourceText("")
        self.class_names: set[str] = set()
        self.flags: set[tuple[str, int]] = set()
        # Depth of ``if not context.is_replaying:`` bodies being walked (code that never runs on replay).
        self.first_run_only = 0
        self.single_element = frozenset()
        # Inside ``param or <value>`` past the parameter: the condition ("?param:-1", as
        # ``Effect.unless_given``) under which what is walked runs at all (only when ``param`` is falsy).
        self.unless_truthy = ""
        # The conditions on the walked function's parameters under which what is walked runs (``lint.guards``),
        # and each function's parameter specs (by node), made when first needed.
        self.guards: tuple[str, ...] = ()
        self._specs: dict[int, dict[str, str]] = {}
        self._method_nodes: set[int] = set()
        # Where the value of a call or name being walked goes, by node (``lint.value_flows``): marked on the
        # way down by the return, assignment, call or child scope that takes the value.
        self.sinks: dict[int, Sink] = {}
        # Locals holding a fresh value, followed load by load; loops and lambdas enclosing the walk in this function;
        # names a nested function declares ``nonlocal`` (it may rebind an enclosing function's parameter).
        self._tracked: dict[str, TrackedLocal] = {}
        self._loop_depth = 0
        self._lambda_depth = 0
        self._nonlocal_names: set[str] = set()
        self.function_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self._rebound: dict[int, frozenset[str]] = {}
        # id(function node) -> its def-use facts, built for the first read whose value may only be logged.
        self._log_flows: dict[int, LogFlow] = {}
        # How many ``asyncio.gather(...)`` argument lists enclose the node being walked.
        self.gathering = 0
        hooks = context.hooks
        self._on_function_hooks = hooks["on_function"]
        self._before_call_hooks = hooks["before_call"]
        self._on_call_hooks = hooks["on_call"]
        self._on_loop_hooks = hooks["on_loop"]
        self._reruns_body_hooks = hooks["reruns_body"]
        self._on_comprehension_hooks = hooks["on_comprehension"]
        self._on_assign_hooks = hooks["on_assign"]
        self._on_del_hooks = hooks["on_del"]
        self._on_dict_hooks = hooks["on_dict"]
        self._on_subscript_hooks = hooks["on_subscript"]
        self._on_starred_hooks = hooks["on_starred"]
        self._on_return_hooks = hooks["on_return"]
        # Only when a rule reads libcst's tree (and, from ``collect``, only in a module such a rule selects): every
        # call the walk saw, by its start (line, UTF-8 byte column), with the context it was seen in, so that rule
        # can ask about and report at the same call in its tree.
        self.call_sites: dict[tuple[int, int], CallSiteSeen] | None = {} if context.libcst_rules else None

    # --- entry point ------------------------------------------------------------------------

    def collect(self, tree: ast.Module, source: SourceText) -> ModuleSummary:
        self.source = source
        # The rules reading libcst's tree that this module's text selects: the walk keeps its call sites only
        # for them (a module none selects pays nothing for such rules being installed).
        libcst_rules = self.ctx.libcst_rules_for(source.text) if self.call_sites is not None else ()
        if not libcst_rules:
            self.call_sites = None
        self._prescan(tree.body)
        self.used_profiles = self.ctx.profiles_for_imports(self.aliases.values())
        for statement in tree.body:
            self._statement_at(statement, prefix="")
        if libcst_rules:
            from replaytest.lint.libcst_facts import run_libcst_rules

            run_libcst_rules(self, tree, libcst_rules)
        return self._finish()

    # --- module-level pre-scan: imports, definitions, containers, registrations -------------

    def _prescan(self, body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.Expr)):
                self._prescan_small(statement)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_scope[statement.name] = ("q", f"{self.module}.{statement.name}")
                if isinstance(statement, ast.ClassDef):
                    self.class_names.add(statement.name)
            elif isinstance(statement, ast.If):
                self._prescan(statement.body)
                self._prescan(statement.orelse)  # ``elif`` is an ``If`` there
            elif isinstance(statement, _TRY_TYPES):
                statement = cast(ast.Try, statement)  # TryStar has the same fields
                self._prescan(statement.body)
                for handler in statement.handlers:
                    self._prescan(handler.body)
                self._prescan(statement.orelse)
                self._prescan(statement.finalbody)
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                self._prescan(statement.body)

    def _prescan_small(self, small: ast.stmt) -> None:
        if isinstance(small, (ast.Import, ast.ImportFrom)):
            for name, qualname in self.import_bindings(small):
                self.module_scope[name] = ("q", qualname)
                self.aliases[name] = qualname
        elif isinstance(small, ast.Assign):
            self.prescan_registration(small.value)
            if len(small.targets) == 1 and isinstance(small.targets[0], ast.Name):
                self.module_values.append((small.targets[0].id, small.value))
            binding = self.binding_for_value(small.value)
            for target in small.targets:
                if isinstance(target, ast.Name):
                    self.module_scope[target.id] = binding
                    if self._is_container(small.value):
                        self.containers.add(target.id)
        elif isinstance(small, ast.AnnAssign) and small.value is not None:
            if isinstance(small.target, ast.Name):
                self.module_scope[small.target.id] = self.binding_for_value(small.value)
                if self._is_container(small.value):
                    self.containers.add(small.target.id)
        elif isinstance(small, ast.AnnAssign) and isinstance(small.target, ast.Name):
            # Declared only (``READY: asyncio.Semaphore``): bound later through ``global``.
            if self.resolve(small.annotation) in _PRIMITIVE_TYPES:
                self.containers.add(small.target.id)
        elif isinstance(small, ast.Expr):
            self.prescan_registration(small.value)

    def _is_container(self, value: ast.AST) -> bool:
        if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
            return True
        return isinstance(value, ast.Call) and (
            self.resolve(value.func) in _CONTAINER_CALLS or self.resolve(value.func) in _PRIMITIVE_TYPES)

    # --- what rules may ask and how they report (``ModuleFacts``) ---------------------------

    def module_container(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and node.id in self.containers and self.function is not None:
            if not self.is_local(node.id):
                return node.id
        return None

    def class_outlives_run(self, class_qualname: str) -> bool:
        owner, _, name = class_qualname.partition(f"{self.module}.")
        if owner or name not in self.classes:
            return False
        parts = name.split(".")
        enclosing = {".".join(parts[:end]) for end in range(1, len(parts))}
        return not any(function.kind == ORCHESTRATION and function.name in enclosing for function in self.functions)

    def shares_instances(self, class_qualname: str) -> bool:
        owner, _, name = class_qualname.partition(f"{self.module}.")
        summary = self.classes.get(name) if not owner else None
        return summary is not None and any(base in self.ctx.shared_instance_bases for base in summary.bases)

    def step_name(self, node: ast.Call, qualname: str | None) -> tuple[ast.expr, str] | None:
        argument = self.ctx.step_names.get(qualname) if qualname else None
        if argument is None:
            return None
        position, keyword, names = argument
        found: ast.expr | None = None
        for given in node.keywords:
            if given.arg == keyword:
                found = given.value
        if found is None and 0 <= position < len(node.args) and not any(
                isinstance(arg, ast.Starred) for arg in node.args[:position + 1]):
            found = node.args[position]
        key = self.ctx.step_name_keys.get(qualname) if qualname else None
        if found is not None and key is not None:
            found = _option_value(found, key)
        return (found, names) if found is not None else None

    def flag(self, tag: str, node: ast.AST) -> None:
        self.flags.add((tag, id(node)))

    def flagged(self, tag: str, node: ast.AST) -> bool:
        return (tag, id(node)) in self.flags

    def report(self, rule: Rule, node: ast.AST, subject: str, qualname: str) -> None:
        self._effect(rule, node, subject, qualname)

    def report_key(self, rule: Rule, node: ast.AST, key: str, source: str, unit: str) -> None:
        pending = Pending(node, rule, key, source, unit=unit)
        if unit or self.function is None:
            self.findings.append(pending)
        else:
            self.function.keys.append(pending)

    def defer(self, node: ast.AST, subject: str, target: str) -> None:
        if self.function is not None and not self.first_run_only:
            self.function.calls.append(Pending(node, None, subject, target))

    # --- statements and definitions ---------------------------------------------------------

    def _statement_at(self, statement: ast.AST, prefix: str) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(statement, prefix, None)
        elif isinstance(statement, ast.ClassDef):
            self._class(statement, prefix)
        else:
            self.walk(statement)

    def _class(self, node: ast.ClassDef, prefix: str) -> None:
        name = f"{prefix}{node.name}"
        qualname = f"{self.module}.{name}"
        bases = [resolved for base in node.bases if (resolved := self.resolve(base))]
        info = self.class_info(node, name, bool(prefix), bases)
        for decorator in node.decorator_list:
            self.walk(decorator)
        methods = []
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods.append(statement.name)
                self.prescan_instance_attributes(qualname, statement)
        if "__init__" not in methods:
            self.field_factories(node, name)
        self.classes[name] = ClassSummary(name, tuple(bases), tuple(methods))
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(statement, f"{name}.", info)
            elif isinstance(statement, ast.ClassDef):
                self._class(statement, f"{name}.")
            else:
                self.walk(statement)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str, info: ClassInfo | None) -> None:
        nested = self.function is not None
        name = f"{prefix}{node.name}"
        for decorator in node.decorator_list:
            self.walk(decorator)
        kind, profile = self.function_role(node, info, nested)
        scope: dict[str, Binding] = {}
        context_param = self.bind_parameters(node, scope, kind, profile, info)
        builder = FunctionBuilder(name, kind, profile.name if profile else "", context_param, scope)
        bound_first = info is not None and not any(
            self.resolve(decorator) == "builtins.staticmethod" for decorator in node.decorator_list)
        builder.config_values = config_parameters(self, node, bound_first)
        builder.query = kind == ORCHESTRATION and self.is_query_handler(node, info)
        if node.returns is not None:
            # ``-> set[str]``: callers iterating the result iterate a set (activities' results are
            # converted to the annotated type, so this holds across a step boundary too).
            if self.annotated_type(node.returns) in SET_TYPES:
                builder.returns = "builtins.set"
        outer_function, outer_scopes = self.function, self.scopes
        if nested:
            outer_scopes[-1][node.name] = ("q", f"{self.module}.{name}")
            self.scopes = [*outer_scopes, scope]
        else:
            self.scopes = [scope]
        self.function = builder
        self.functions.append(builder)
        outer_gathering, self.gathering = self.gathering, 0  # a function defined in gather's arguments runs later
        # A nested function runs later too, when the sizes known here may no longer hold.
        outer_single, self.single_element = self.single_element, frozenset()
        outer_node, self.function_node = self.function_node, node
        outer_unless, self.unless_truthy = self.unless_truthy, ""
        outer_guards, self.guards = self.guards, ()
        outer_loops, self._loop_depth = self._loop_depth, 0
        outer_lambdas, self._lambda_depth = self._lambda_depth, 0
        if info is not None:
            self._method_nodes.add(id(node))
        try:
            for hook in self._on_function_hooks:
                hook(self, node)
            self._walk_body(node.body)
            self._function_done(builder, node)
        finally:
            self.function, self.scopes = outer_function, outer_scopes
            self.gathering = outer_gathering
            self.single_element = outer_single
            self.function_node, self.unless_truthy = outer_node, outer_unless
            self.guards = outer_guards
            self._loop_depth, self._lambda_depth = outer_loops, outer_lambdas

    def _param_specs(self) -> dict[str, str]:
        """The walked function's parameter specs (``lint.guards``), made once per function."""
        node = self.function_node
        if node is None or self._lambda_depth:
            return {}  # in a lambda a name may be the lambda's own parameter
        specs = self._specs.get(id(node))
        if specs is None:
            is_method = id(node) in self._method_nodes and not any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
            specs = parameter_specs(node, is_method)
            self._specs[id(node)] = specs
        return specs

    def _test_guards(self, test: ast.expr) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``lint.guards.test_guards`` for the walked function; most tests are not about a parameter at all."""
        if self.function_node is None or type(test) not in _GUARD_TESTS:
            return (), ()
        return test_guards(test, self._param_specs())

    def _used_params(self, guards: tuple[str, ...]) -> tuple[str, ...]:
        if guards and self.function is not None:
            self.function.param_uses.update(guard_parameter(guard) for guard in guards)
        return guards

    def _function_done(self, builder: FunctionBuilder, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """What needs the whole body: parameters the body rebinds lose their guards and passed-on values, and
        where the fresh values held by locals and the parameters handed to child scopes go."""
        if builder.param_uses:
            rebound = (builder.stored | self._nonlocal_names) & builder.param_uses
            if rebound:
                for pending in (*builder.effects, *builder.calls):
                    if pending.when:
                        pending.when = tuple(g for g in pending.when if guard_parameter(g) not in rebound)
                    if pending.values:
                        pending.values = tuple(v for v in pending.values
                                               if not ("=@" in v and v.partition("=@")[2].split(":", 1)[0] in rebound))
        if not self._tracked and not builder.child_candidates:
            return
        tracked = {name: record for name, record in self._tracked.items() if record.function is builder}
        for name in tracked:
            del self._tracked[name]
        candidates = {name: record for name, record in tracked.items()
                      if not record.poisoned and record.stores == 1 and record.uses}
        verify = {name for name, record in candidates.items() if record.verify or builder.nested}
        if not candidates and not builder.child_candidates:
            return
        uses = NameUses(node.body, {*verify, *builder.child_candidates}) if verify or builder.child_candidates else None
        sinks = self.sinks
        for name, record in candidates.items():
            flows = record.uses
            if name in verify:
                assert uses is not None
                found = [flow_of(sinks.get(id(load))) for load, _ in uses.loads[name]]
                if uses.stores[name] != 1 or name in uses.nested or not found or not all(acceptable(f) for f in found):
                    continue
                flows = {f for f in found if f is not None}
            for pending in record.pendings:
                pending.flows = tuple(sorted(flows))
        if uses is None:
            return
        specs = self._param_specs()
        for name, framework in builder.child_candidates.items():
            if uses.stores[name] or name in uses.nested or name not in specs or not all(
                    (flow_of(sinks.get(id(load))) or "").startswith("child:") or is_none_test(load, parent)
                    for load, parent in uses.loads[name]):
                continue
            _, position, _ = specs[name].rsplit(":", 2)
            builder.child_params.append(f"{name}:{position}:{framework}")

    def _stored(self, name: str) -> None:
        """``name`` is bound in the walked function (a parameter may no longer hold its argument)."""
        function = self.function
        if function is not None:
            function.stored.add(name)
        if self._tracked:
            record = self._tracked.get(name)
            if record is not None:
                record.stores += 1

    def _rebound_names(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
        """Names the body binds anywhere (assigned, deleted, a loop or ``with`` target, the parameter of a nested
        function or lambda, an ``except ... as`` or import name): a parameter among them may not hold the argument."""
        rebound = self._rebound.get(id(node))
        if rebound is None:
            names = set()
            for statement in node.body:
                for n in ast.walk(statement):
                    if isinstance(n, ast.Name):
                        if not isinstance(n.ctx, ast.Load):
                            names.add(n.id)
                    elif isinstance(n, ast.arg):
                        names.add(n.arg)
                    elif isinstance(n, ast.ExceptHandler) and n.name:
                        names.add(n.name)
                    elif isinstance(n, ast.alias):
                        names.add((n.asname or n.name).partition(".")[0])
            rebound = frozenset(names)
            self._rebound[id(node)] = rebound
        return rebound

    def _mark(self, value: ast.expr, sink: Sink) -> None:
        """Where the value of ``value`` goes (``lint.value_flows``), for the calls and names it is made of."""
        kind = type(value)
        if kind is ast.Name or (kind is ast.Call and not (type(value.func) is ast.Name and value.func.id == "str")):  # type: ignore[attr-defined]
            self.sinks[id(value)] = sink
        elif kind in _CARRIERS or kind is ast.Call:
            sinks = self.sinks
            for leaf in leaves(value):
                sinks[id(leaf)] = sink

    def _flows(self, node: ast.AST, pending: Pending) -> tuple[str, ...]:
        """Where a call's value goes, as ``Effect.flows``; a local's uses are known at the function's end."""
        sink = self.sinks.get(id(node))
        if sink is None:
            return ()
        if type(sink) is tuple and sink[0] == "local":
            function = self.function
            if function is not None and not self._lambda_depth:
                name = sink[1]
                record = self._tracked.get(name)
                if record is None:
                    record = self._tracked[name] = TrackedLocal(function, verify=self._loop_depth > 0)
                elif record.function is not function:
                    record.poisoned = True  # the same name in a nested function: not followed
                record.pendings.append(pending)
            return ()
        flow = flow_of(sink)
        return (flow,) if flow is not None else ()

    # --- the walk ---------------------------------------------------------------------------

    def walk(self, node: ast.AST) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
            return
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                self.walk(value)
            elif isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        self.walk(child)

    def _walk_body(self, body: list[ast.stmt]) -> None:
        outer_single, outer_guards = self.single_element, self.guards
        try:
            for statement in body:
                if self.single_element:
                    self.single_element -= may_change(statement, self.single_element)
                self.walk(statement)
                if isinstance(statement, ast.If):
                    # ``if len(s) != 1: raise ...``: what follows in this block sees one element at most.
                    bound = single_element_test(statement.test)
                    leaves_body = leaves_block(statement.body)
                    if bound is not None and not bound[1] and leaves_body:
                        self.single_element |= {bound[0]}
                    # ``if not force: return base``: what follows in this block runs only when ``force`` is truthy.
                    if type(statement.test) in _GUARD_TESTS and leaves_body != leaves_block(statement.orelse):
                        body_guards, else_guards = self._test_guards(statement.test)
                        self.guards += self._used_params(else_guards if leaves_body else body_guards)
        finally:
            self.single_element, self.guards = outer_single, outer_guards

    def _bind(self, target: ast.AST, binding: Binding) -> None:
        scope = self.scopes[-1] if self.scopes else None
        if isinstance(target, ast.Name):
            function = self.function
            if function is not None:
                function.stored.add(target.id)
                if self._tracked:
                    self._stored(target.id)
            if scope is not None:
                scope[target.id] = binding
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind(element, LOCAL)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, LOCAL)

    def _on_function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.function is not None:
            self._stored(node.name)
            self.function.nested = True
        if self.function is None:
            self._function(node, "", None)
        else:
            self._function(node, f"{self.function.name}.", None)

    def _on_class_def(self, node: ast.ClassDef) -> None:
        if self.function is not None:
            self._stored(node.name)
            self.function.nested = True
        prefix = f"{self.function.name}." if self.function is not None else ""
        saved = self.function, self.scopes
        self._class(node, prefix)
        self.function, self.scopes = saved

    def _on_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if not self.scopes:
            return  # module level: the pre-scan bound these
        for name, qualname in self.import_bindings(node):
            self.scopes[-1][name] = ("q", qualname)
            self._stored(name)

    def _on_assign(self, node: ast.Assign) -> None:
        targets = node.targets
        if (self.function is not None and len(targets) == 1 and type(targets[0]) is ast.Name
                and type(node.value) in _VALUE_KINDS):
            self._mark(node.value, ("local", targets[0].id))  # type: ignore[attr-defined]
        self.walk(node.value)
        for target in node.targets:
            self._assign_target(target, node.value)
            if isinstance(target, ast.Name) and self.function is not None:
                source = looked_up_in(self, node.value)
                if source is not None:
                    self.function.looked_up[target.id] = source
                else:
                    self.function.looked_up.pop(target.id, None)
                self._config_value(target, node.value)

    def _config_value(self, target: ast.AST, value: ast.AST | None) -> None:
        """Remember (or forget) where a local bound here comes from (``tool_lookups.config_origin``)."""
        function = self.function
        if function is None or not isinstance(target, ast.Name):
            return
        values = function.config_values
        if isinstance(value, ast.Name):
            origin = values.get(value.id)
        elif isinstance(value, _CONFIG_SHAPES):
            origin = config_origin(self, values, value)
        else:
            origin = None
        if origin is not None:
            function.config_values[target.id] = origin
        else:
            function.config_values.pop(target.id, None)

    def _on_ann_assign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            if self.function is not None and type(node.target) is ast.Name and type(node.value) in _VALUE_KINDS:
                self._mark(node.value, ("local", node.target.id))  # type: ignore[attr-defined]
            self.walk(node.value)
            self._assign_target(node.target, node.value)
            self._config_value(node.target, node.value)

    def _on_aug_assign(self, node: ast.AugAssign) -> None:
        self.walk(node.value)
        if isinstance(node.target, ast.Name):
            self._stored(node.target.id)
        self._assign_target(node.target, None)

    def _assign_target(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Subscript):
            if value is not None and self._in_read_table(target.value):
                self._subscript_written(target)  # ``os.environ[k] = v`` writes the mapping, reads nothing
            else:
                self.walk(target)
        elif isinstance(target, ast.Attribute):
            self.walk(target.value)
        elif isinstance(target, ast.Name) and self.function is not None and (
            target.id in self.function.declared_globals or target.id in self.function.declared_nonlocals
        ):
            pass  # binds the module's (or enclosing function's) name, not a local; a rule decides if that is a finding
        elif value is not None and self.scopes:
            if isinstance(target, (ast.Tuple, ast.List)) and self._is_set_pair(value):
                for element in target.elts:
                    self._bind(element, ("set", None))
                self._assign_hooks(target, value)
                return
            binding = self.binding_for_value(value) if isinstance(target, ast.Name) else LOCAL
            function = self.function
            if function is not None and isinstance(target, ast.Name):
                function.fresh_sources.pop(target.id, None)  # rebound: what it held before is gone
            if binding[0] == "taint" and function is not None and isinstance(target, ast.Name):
                function.fresh_levels[target.id] = function.retry_loops
                typed = self._typed_result(value)
                if typed is not None:
                    # ``blob = make_client(name=f"{uuid4()}.csv")``: the value is both what the call returns
                    # (its methods may be effects) and made from a fresh value (it may become a key).
                    function.fresh_sources[target.id] = binding[1]
                    binding = ("inst", typed)
            self._bind(target, binding)
        self._assign_hooks(target, value)

    def _assign_hooks(self, target: ast.AST, value: ast.AST | None) -> None:
        for hook in self._on_assign_hooks:
            hook(self, target, value)

    def _typed_result(self, value: ast.AST) -> str | None:
        """What a call returns, when the call itself is not what makes the value fresh (its arguments are)."""
        call = unawaited(value)
        if not isinstance(call, ast.Call) or id(call) in self.tainted:
            return None
        return self.returned_function(value) or self.resolve(call)

    def _is_set_pair(self, value: ast.AST) -> bool:
        call = unawaited(value)
        return isinstance(call, ast.Call) and self.resolve(call.func) in SET_PAIR_CALLS

    def _on_del(self, node: ast.Delete) -> None:
        # ``del a, b`` is one target list; ``del (a, b)`` a tuple in it: either way, each name.
        targets = node.targets
        if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
            targets = targets[0].elts
        for target in node.targets:
            self.walk(target)
        for target in targets:
            if isinstance(target, ast.Name):
                self._stored(target.id)
            for hook in self._on_del_hooks:
                hook(self, target)

    def _on_return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        if self.function is not None:
            self._mark(node.value, "return")
        self.walk(node.value)
        function = self.function
        if function is not None and not function.returns and self.kind_of(node.value) == "set":
            function.returns = "builtins.set"
        if function is not None and not function.returns and isinstance(node.value, (ast.Call, ast.Await, ast.Name)):
            binding = self.binding_for_value(node.value)
            if binding[0] == "inst" and binding[1]:
                function.returns = binding[1]
        elif function is not None and not function.returns and isinstance(node.value, ast.Attribute):
            # ``return self._client`` where a method assigned ``self._client = OpenAI()``.
            typed = self.resolve(node.value)
            if typed is not None and typed in self.instance_attributes.values():
                function.returns = typed
        for hook in self._on_return_hooks:
            hook(self, node)

    def _on_yield(self, node: ast.Yield) -> None:
        if node.value is None:
            return
        self.walk(node.value)
        function = self.function
        # ``yield SessionLocal()`` in a session helper (``@contextmanager``, a FastAPI dependency): what
        # ``with get_session() as session`` binds, so the session's methods are known at the call site.
        if function is not None and not function.returns and isinstance(node.value, (ast.Call, ast.Await, ast.Name)):
            binding = self.binding_for_value(node.value)
            if binding[0] == "inst" and binding[1]:
                function.returns = binding[1]

    def _on_global(self, node: ast.Global) -> None:
        # Declaring a name global writes nothing; assigning it afterwards does (``_assign_target``).
        if self.function is None:
            return
        self.function.declared_globals.update(node.names)

    def _on_nonlocal(self, node: ast.Nonlocal) -> None:
        if self.function is None:
            return
        self.function.declared_nonlocals.update(node.names)
        self._nonlocal_names.update(node.names)

    def _on_for(self, node: ast.For | ast.AsyncFor) -> None:
        self.walk(node.iter)
        for hook in self._on_loop_hooks:
            hook(self, node)
        self._bind(node.target, LOCAL)
        # ``for tool in config["configurable"]["tools"]``: each element comes from where the collection does.
        self._config_value(node.target, node.iter)
        self._loop_body(node)

    def _on_while(self, node: ast.While) -> None:
        self.walk(node.test)
        for hook in self._on_loop_hooks:
            hook(self, node)
        self._loop_body(node)

    def _loop_body(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        function = self.function
        retry = function is not None and any(hook(self, node) for hook in self._reruns_body_hooks)
        pauses_before = len(function.pauses) if function is not None else 0
        self._loop_depth += 1
        try:
            if not retry or function is None:
                self._walk_body(node.body)
            else:
                function.retry_loops += 1
                try:
                    self._walk_body(node.body)
                finally:
                    function.retry_loops -= 1
        finally:
            self._loop_depth -= 1
        if function is not None and len(function.pauses) > pauses_before:
            # A later turn of the loop pauses again: the code after the pause ran before that one.
            function.pause_loops.append(node)
        self._walk_body(node.orelse)

    def _on_if(self, node: ast.If) -> None:
        self.walk(node.test)
        body_skipped, else_skipped = self._replay_guard(node.test)
        bound = single_element_test(node.test)
        outer_single, outer_guards = self.single_element, self.guards
        body_guards, else_guards = self._test_guards(node.test)
        try:
            if bound is not None and bound[1]:
                self.single_element = outer_single | {bound[0]}
            if body_guards:
                self.guards = outer_guards + self._used_params(body_guards)
            self._walk_first_run(node.body, body_skipped)
            self.single_element = outer_single
            if node.orelse:
                if bound is not None and not bound[1]:
                    self.single_element = outer_single | {bound[0]}
                self.guards = outer_guards + self._used_params(else_guards)
                self._walk_first_run(node.orelse, else_skipped)
        finally:
            self.single_element, self.guards = outer_single, outer_guards

    def _on_if_exp(self, node: ast.IfExp) -> None:
        self.walk(node.test)
        outer_guards = self.guards
        body_guards, else_guards = self._test_guards(node.test)
        try:
            self.guards = outer_guards + self._used_params(body_guards)
            self.walk(node.body)
            self.guards = outer_guards + self._used_params(else_guards)
            self.walk(node.orelse)
        finally:
            self.guards = outer_guards

    def _replay_guard(self, test: ast.AST) -> tuple[bool, bool]:
        """(body, else) of an ``if`` that tests a replaying flag: which of them never runs on replay."""
        flags = [flag for profile in self.used_profiles for flag in profile.replaying_flags]
        if not flags:
            return False, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.resolve(test.operand) in flags, False
        return False, self.resolve(test) in flags

    def _walk_first_run(self, body: list[ast.stmt], first_run_only: bool) -> None:
        if not first_run_only:
            self._walk_body(body)
            return
        self.first_run_only += 1
        try:
            self._walk_body(body)
        finally:
            self.first_run_only -= 1

    def _on_try(self, node: ast.Try) -> None:
        self._walk_body(node.body)
        fallback = self._outside_only_fallback(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self.walk(handler.type)
            if handler.name:
                self._stored(handler.name)
            # ``try: now = workflow.now() except Exception: now = datetime.now()``: the handler runs only
            # outside orchestration code, like code that never runs on replay.
            self._walk_first_run(handler.body, fallback)
        self._walk_body(node.orelse)
        self._walk_body(node.finalbody)

    def _outside_only_fallback(self, body: list[ast.stmt]) -> bool:
        """Whether a ``try`` body can raise only outside orchestration code: it makes at least one call of a
        profile's ``outside_only_failures`` (with plain names and constants as arguments, its result bound
        to names or returned) and otherwise only imports that framework."""
        failures = self.ctx.outside_only_failures
        if not failures:
            return False
        roots = {root for modules in failures.values() for root in modules}
        made = False
        for statement in body:
            if isinstance(statement, ast.Import):
                if all(alias.name.partition(".")[0] in roots for alias in statement.names):
                    continue
                return False
            if isinstance(statement, ast.ImportFrom):
                if not statement.level and (statement.module or "").partition(".")[0] in roots:
                    continue
                return False
            if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
                value: ast.expr | None = statement.value
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                value = statement.value
            elif isinstance(statement, (ast.Expr, ast.Return)):
                value = statement.value
            else:
                return False
            if not (
                isinstance(value, ast.Call) and self.resolve(value.func) in failures
                and all(isinstance(arg, (ast.Constant, ast.Name)) for arg in value.args)
                and all(isinstance(keyword.value, (ast.Constant, ast.Name)) and keyword.arg for keyword in value.keywords)
            ):
                return False
            made = True
        return made

    def _on_bool_op(self, node: ast.BoolOp) -> None:
        first = node.values[0]
        self.walk(first)
        condition = ""
        if isinstance(node.op, ast.Or) and not self.unless_truthy:
            condition = self._falsy_parameter(first)
        outer, self.unless_truthy = self.unless_truthy, condition or self.unless_truthy
        outer_guards = self.guards
        try:
            previous = first
            for value in node.values[1:]:
                # ``force and x()`` runs x only when ``force`` is truthy; ``force or x()`` only when it is falsy.
                if isinstance(previous, (ast.Name, ast.UnaryOp)):
                    body_guards, else_guards = self._test_guards(previous)
                    self.guards += self._used_params(body_guards if isinstance(node.op, ast.And) else else_guards)
                self.walk(value)
                previous = value
        finally:
            self.unless_truthy, self.guards = outer, outer_guards

    def _falsy_parameter(self, value: ast.expr) -> str:
        """``"?name:-1"`` when ``value`` is a parameter of the function being walked that its body never
        rebinds: what ``name or ...`` evaluates past it runs only when the argument is falsy, so not from a
        call passing ``name=`` a value that is always truthy (``CallSite.config_args``). Else ""."""
        node = self.function_node
        if node is None or not isinstance(value, ast.Name):
            return ""
        params = node.args
        if value.id not in {p.arg for p in (*params.posonlyargs, *params.args, *params.kwonlyargs)}:
            return ""
        return "" if value.id in self._rebound_names(node) else f"?{value.id}:-1"

    def _always_truthy(self, value: ast.expr) -> bool:
        """Whether an argument is a value that is never falsy: a UUID, date or datetime made by a call or
        held by a name bound to one (a parameter annotated with that type, not Optional)."""
        if isinstance(value, ast.Call):
            return self.resolve(value.func) in ALWAYS_TRUTHY
        if isinstance(value, ast.Name):
            binding = self.lookup(value.id)
            return binding is not None and binding[0] == "inst" and binding[1] in ALWAYS_TRUTHY
        return False

    def _on_named_expr(self, node: ast.NamedExpr) -> None:
        self.walk(node.value)
        self._stored(node.target.id)

    def _on_capture(self, node: ast.AST) -> None:
        """A ``match`` pattern binding a name (``case Point(x=force)``, ``case [*rest]``, ``case {**rest}``)."""
        for name in (getattr(node, "name", None), getattr(node, "rest", None)):
            if isinstance(name, str):
                self._stored(name)
        for child in ast.iter_child_nodes(node):
            self.walk(child)

    def _on_with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if self.function is not None and self.ctx.child_id_scopes:
                self._child_scope(item.context_expr, node.body)
            self.walk(item.context_expr)
            if isinstance(node, ast.With):
                self._entered(item.context_expr)
            if item.optional_vars is not None:
                qualname = self.resolve(item.context_expr)
                self._bind(item.optional_vars, ("inst", qualname) if qualname else LOCAL)
        self._walk_body(node.body)

    def _child_scope(self, manager: ast.expr, body: list[ast.stmt]) -> None:
        """``with SetWorkflowID(key): DBOS.start_workflow(...)``: ``key`` only names the child (``lint.value_flows``)."""
        if not isinstance(manager, ast.Call) or not (manager.args or manager.keywords):
            return
        scope = self.ctx.child_id_scopes.get(self.resolve(manager.func) or "")
        if scope is None:
            return
        framework, starts = scope
        if not starts_child_only(body, starts, self.resolve):
            return
        key = manager.args[0] if manager.args else manager.keywords[0].value
        self._mark(key, f"child:{framework}")
        function = self.function
        if function is not None and isinstance(key, ast.Name) and key.id in self._param_specs():
            function.child_candidates[key.id] = framework

    def _entered(self, manager: ast.AST) -> None:
        """``with lock:`` calls ``lock.__enter__()``: an effect when the rule tables name it for the manager's
        type (a ``threading.Lock`` blocks); through an instance another project module exports, a call site
        decided at resolution. A manager made in the ``with`` itself (``with threading.Lock():``) is fresh and
        never blocks, and the calls in it were walked already."""
        function = self.function
        if function is None or not isinstance(manager, (ast.Name, ast.Attribute)):
            return
        qualname = self.resolve(manager)
        if qualname is None:
            return
        subject = f"with {dotted_text(manager)}"
        enter = f"{qualname}.__enter__"
        rule = self.ctx.match_call(enter)
        if rule is not None:
            self._effect(rule, manager, subject, enter)
        elif (
            self.is_project_candidate(qualname) and not qualname.startswith(f"{self.module}.")
            and not (isinstance(manager, ast.Name) and self.is_local(manager.id))
        ):
            function.calls.append(Pending(manager, None, subject, enter))

    def _on_comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp) -> None:
        scope_added = not self.scopes
        if scope_added:
            self.scopes = [{}]
        try:
            for clause in node.generators:
                self.walk(clause.iter)
                for hook in self._on_comprehension_hooks:
                    hook(self, node, clause)
                self._bind(clause.target, LOCAL)
                for condition in clause.ifs:
                    self.walk(condition)
            if isinstance(node, ast.DictComp):
                self.walk(node.key)
                self.walk(node.value)
            else:
                self.walk(node.elt)
        finally:
            if scope_added:
                self.scopes = []

    def _on_lambda(self, node: ast.Lambda) -> None:
        scope: dict[str, Binding] = {}
        for param in node.args.args:
            scope[param.arg] = LOCAL
        saved = self.scopes
        self.scopes = [*saved, scope]
        if self.function is not None:
            self.function.nested = True
        self._lambda_depth += 1
        try:
            self.walk(node.body)
        finally:
            self.scopes = saved
            self._lambda_depth -= 1

    def _on_name(self, node: ast.Name) -> None:
        if self._tracked:
            record = self._tracked.get(node.id)
            if record is not None:
                sink = self.sinks.get(id(node))
                if record.function is not self.function or self._lambda_depth or not acceptable(sink):
                    record.poisoned = True
                else:
                    record.uses.add(flow_of(sink))  # type: ignore[arg-type]
        if node.id in self.ctx.read_attributes and self.function is not None:
            qualname = self.resolve(node)
            rule = self.ctx.reads.get(qualname or "")
            if rule is not None:
                self._effect(rule, node, node.id, qualname or "")

    def _on_attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.ctx.read_attributes and self.function is not None:
            qualname = self.resolve(node)
            rule = self.ctx.reads.get(qualname or "")
            if rule is not None:
                self._effect(rule, node, dotted_text(node), qualname or "")
                return
        self.walk(node.value)

    def _on_subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Del) and self._in_read_table(node.value):
            self._subscript_written(node)  # ``del os.environ[k]``
            return
        self.walk(node.value)
        self.walk(node.slice)
        for hook in self._on_subscript_hooks:
            hook(self, node)

    def _in_read_table(self, node: ast.expr) -> bool:
        """Whether ``node`` is a mapping a rule reports reading (``os.environ``)."""
        if self.function is None or not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        last = node.id if isinstance(node, ast.Name) else node.attr
        return last in self.ctx.read_attributes and (self.resolve(node) or "") in self.ctx.reads

    def _subscript_written(self, node: ast.Subscript) -> None:
        """An item of a read-table mapping set or deleted: a write, which the read rules do not report (a
        later read of the item is one); the key is still walked."""
        self.walk(node.slice)
        for hook in self._on_subscript_hooks:
            hook(self, node)

    def _on_starred(self, node: ast.Starred) -> None:
        self.walk(node.value)
        for hook in self._on_starred_hooks:
            hook(self, node)

    def _on_dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if key is not None:
                self.walk(key)
            self.walk(value)
        if self.function is not None:
            self.function.tool_keys.extend(keyed_tools(self, node))
        for hook in self._on_dict_hooks:
            hook(self, node)

    def _on_call(self, node: ast.Call) -> None:
        func = node.func
        qualname = self.resolve(func)
        step_call = qualname is not None and qualname in self.ctx.step_calls
        self.walk(func)
        for hook in self._before_call_hooks:
            hook(self, node, qualname)
        gathers = qualname is not None and qualname in self.ctx.concurrent_calls
        self.gathering += gathers
        args = call_args(node)
        project = qualname is not None and self.function is not None and self.is_project_candidate(qualname)
        if project and args:
            assert qualname is not None
            # Where each argument's value goes: into this project function's parameter (``lint.value_flows``).
            for index, arg in enumerate(args):
                if arg.star:
                    break
                kind = type(arg.value)
                if kind is ast.Name or kind in _VALUE_KINDS:
                    self._mark(arg.value, ("param", qualname, arg.keyword if arg.keyword is not None else f"#{index}"))
        if self.call_sites is not None:
            self.call_sites[(node.lineno, node.col_offset)] = CallSiteSeen(
                node, self.function, qualname, tuple(args), self.first_run_only)
        try:
            self._call_arguments(args, step_call)
        finally:
            self.gathering -= gathers
        for hook in self._on_call_hooks:
            hook(self, node, qualname)
        if isinstance(func, ast.Attribute) and func.attr in TOOL_RUN_METHODS and self.function is not None:
            self._tool_lookup(node, func)
        if self.function is not None:
            self._config_tool(node, func)
        if qualname is None:
            return
        if qualname in self.ctx.pause_calls and self.function is not None:
            self.function.pauses.append(node)
        node_profile = self.ctx.node_registrations.get(qualname)
        if node_profile is not None:
            self._graph_nodes(node, args, node_profile)
        tool_registration = self.ctx.tool_registrations.get(qualname)
        if tool_registration is not None:
            self._tool_nodes(node, args, *tool_registration)
        subject = f"{dotted_text(func)}()"
        rule = self.ctx.match_call(qualname)
        matched = False
        fact = CallFact(qualname, node, self.kind_of) if rule is not None else None
        if rule is not None and fact is not None and rule.accept_call(fact):
            matched = True
            if rule.category in self.ctx.taint_categories:
                self.tainted[id(node)] = subject
            log_only = rule.only_reads(fact) and self._only_logged(node)
            self._effect(rule, node, subject, qualname, args=tuple(args), log_only=log_only)
        for category, framework in self.ctx.extra_effects.get(qualname, ()):
            extra_rule = self.ctx.by_category.get(category)
            if extra_rule is not None:
                matched = True
                self._effect(extra_rule, node, subject, qualname, frameworks=(framework,), args=tuple(args))
        sensitive = self.ctx.order_sensitive_calls.get(qualname)
        concurrency_rule = self.ctx.by_category.get("concurrency")
        if sensitive and concurrency_rule is not None:
            matched = True
            self._effect(concurrency_rule, node, subject, qualname, frameworks=tuple(sensitive),
                         gathered_only=not self.gathering)
        if not matched and project:
            function = self.function
            # Steps' calls too: a helper a step calls is part of the retried unit (idempotency keys). A
            # helper called under ``if not context.is_replaying:`` never runs on replay, like a direct call
            # there, so it is not followed either.
            if function is not None and not (self.first_run_only and function.kind != STEP):
                given = tuple(
                    "#*" if arg.star else arg.keyword if arg.keyword is not None else "" for arg in args
                )
                positional = sum(1 for g in given if g == "")
                # ``?name``: the keyword argument ``name`` is a value that is never falsy.
                truthy = {f"?{arg.keyword}" for arg in args
                          if arg.keyword is not None and not arg.star and self._always_truthy(arg.value)}
                given = (f"#{positional}", *sorted({g for g in given if g} | truthy))
                site = Pending(node, None, subject, qualname, given=given, unless_given=self.unless_truthy,
                               gathered=self.gathering > 0, config_args=self._config_arguments(args), when=self.guards,
                               values=self._argument_values(args, truthy) if args else ())
                site.flows = self._flows(node, site)
                function.calls.append(site)
                # A project function handed to project code (``Scheduler(executor=self.execute_task)``) is a
                # callback it may call: followed as if called here, at the argument.
                for arg in args:
                    target = self._callback_target(arg.value)
                    if target is not None:
                        function.calls.append(Pending(arg.value, None,
                                                      f"{dotted_text(arg.value)} (a callback passed to {subject})",
                                                      target, given=("#0", "#*"), gathered=self.gathering > 0))

    def _argument_values(self, args: list[Arg], truthy: set[str]) -> tuple[str, ...]:
        """What the arguments of a project call tell guards (``CallSite.values``): literals, keyword arguments never
        falsy (``truthy``, as ``?name``) and passed-on parameters."""
        specs: dict[str, str] | None = None
        values = []
        for index, arg in enumerate(args):
            if arg.star:
                break
            value = arg.value
            kind = type(value)
            if kind is ast.Constant:
                told = "" if value.value is Ellipsis else "t" if value.value else "f"  # type: ignore[attr-defined]
            elif kind in _ARGUMENT_KINDS:
                if specs is None:
                    specs = self._param_specs()
                told = argument_value(value, specs, arg.keyword is not None and f"?{arg.keyword}" in truthy)
            else:
                continue
            if told:
                if told[0] == "@" and self.function is not None:
                    self.function.param_uses.add(told[1:].split(":", 1)[0])
                values.append(f"{arg.keyword if arg.keyword is not None else f'#{index}'}={told}")
        return tuple(values)

    def _only_logged(self, node: ast.Call) -> bool:
        """Whether a call's value flows only into log output (``log_flow``), in a function whose effects count."""
        function, function_node = self.function, self.function_node
        if function is None or function_node is None or function.kind == STEP or self.first_run_only:
            return False
        flow = self._log_flows.get(id(function_node))
        if flow is None:
            flow = self._log_flows[id(function_node)] = LogFlow(function_node, self.resolve)
        return flow.only_logged(node)

    def _tool_lookup(self, node: ast.Call, func: ast.Attribute) -> None:
        """``tools_by_name[name].invoke(args)``, or ``tool.invoke(args)`` of a local holding such a lookup's value."""
        function = self.function
        assert function is not None
        holder = func.value
        source = (function.looked_up.get(holder.id) if isinstance(holder, ast.Name)
                  else looked_up_in(self, holder))
        if source is not None and not (self.first_run_only and function.kind != STEP):
            function.lookups.append(Pending(node, None, f"{dotted_text(func)}()", source))

    def _config_tool(self, node: ast.Call, func: ast.expr) -> None:
        """``tool.ainvoke(args)`` or ``tool(args)`` of a tool taken from the run's config, or ``tool.invoke(args)``
        of a value from a parameter (the config's where a caller passes one from it)."""
        function = self.function
        assert function is not None
        if self.first_run_only and function.kind != STEP:
            return
        if isinstance(func, ast.Attribute):
            if func.attr not in TOOL_RUN_METHODS:
                return  # a method of something else
            origin = config_origin(self, function.config_values, func.value)
            if not (is_config_tool(origin) or (origin is not None and origin.startswith(PARAMETER))):
                return
        else:
            origin = (function.config_values.get(func.id) if isinstance(func, ast.Name)
                      else config_origin(self, function.config_values, func))
            if not is_config_tool(origin):
                return
        assert origin is not None
        function.config_tools.append((origin, Pending(node, None, f"{dotted_text(func)}()", "")))

    def _config_arguments(self, args: list[Arg]) -> tuple[tuple[str, str], ...]:
        """The arguments of a project call carrying a value from the run's config, as (slot, origin)."""
        function = self.function
        if function is None:
            return ()
        passes = []
        position = 0
        for arg in args:
            if arg.star:
                continue
            slot = arg.keyword if arg.keyword is not None else f"#{position}"
            if arg.keyword is None:
                position += 1
            value = arg.value
            if isinstance(value, ast.Name):
                origin = function.config_values.get(value.id)
            elif isinstance(value, _CONFIG_SHAPES):
                origin = config_origin(self, function.config_values, value)
            else:
                continue
            if passes_config(origin):
                assert origin is not None
                passes.append((slot, origin))
        return tuple(passes)

    def _callback_target(self, value: ast.AST) -> str | None:
        """The project function (or class) an argument names, when it names one defined in the project:
        a module-level ``def``/``class`` or an imported project name, or ``self.method`` of this module's class
        (not an attribute holding a value, not a local)."""
        if isinstance(value, ast.Name):
            binding = self.lookup(value.id)
            if binding is None or binding[0] != "q" or not binding[1] or self.is_local(value.id):
                return None
            target = binding[1]
        elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in ("self", "cls"):
            owner = self.resolve(value.value)
            prefix = f"{self.module}."
            summary = self.classes.get(owner[len(prefix):]) if owner and owner.startswith(prefix) else None
            if summary is None or value.attr not in summary.methods:
                return None
            target = f"{owner}.{value.attr}"
        else:
            return None
        return target if self.is_project_candidate(target) else None

    def _call_arguments(self, args: list[Arg], step_call: bool) -> None:
        for arg in args:
            value = arg.value
            if step_call and isinstance(value, ast.Lambda):
                if self.function is not None:
                    self.function.nested = True  # its body is not walked: a local it reads is not followed
                # Its body runs as a recorded step: the project functions it calls are steps too
                # (``ctx.run("post", lambda: post_order(order))``), so they are part of the retried unit.
                for inner in calls_in(value.body):
                    target = self.resolve(inner.func)
                    if target and self.is_project_candidate(target):
                        self.step_targets.add(target)
                continue
            if step_call and isinstance(value, (ast.Name, ast.Attribute)):
                target = self.resolve(value)
                if target and self.is_project_candidate(target):
                    self.step_targets.add(target)
            self.walk(value)

    def _graph_nodes(self, call: ast.Call, args: list[Arg], profile: FrameworkProfile) -> None:
        """``add_node("review", review)``, ``add_node(review)``, ``add_node("n", action=fn)``,
        ``add_sequence([fetch, ("review", review)])``: remember which project functions run as nodes."""
        positional = [arg.value for arg in args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword: arg.value for arg in args if arg.keyword is not None}
        name = keywords.get("node", positional[0] if positional else None)
        action = keywords.get("action", positional[1] if len(positional) > 1 else None)
        pairs: list[tuple[ast.AST | None, ast.AST]] = []
        if action is not None:
            pairs.append((name, action))
        elif isinstance(name, (ast.List, ast.Tuple)):
            for value in name.elts:
                if isinstance(value, ast.Tuple) and len(value.elts) == 2:
                    pairs.append((value.elts[0], value.elts[1]))
                else:
                    pairs.append((None, value))
        elif name is not None:
            pairs.append((None, name))
        for name_node, callable_node in pairs:
            for target in self._node_targets(callable_node, depth=0):
                literal = string_value(name_node)
                if literal is not None:
                    node_name = literal
                else:
                    node_name = target.rsplit(".", 1)[-1] if not target.endswith(".__call__") else target.split(".")[-2]
                self.graph_nodes.append((node_name, target, call, profile.name))

    def _tool_nodes(self, call: ast.Call, args: list[Arg], position: int, profile: FrameworkProfile) -> None:
        """``ToolNode([search, book])``, ``create_react_agent(model, tools)``: each project tool given (in a list
        literal, or a module-level name bound to one) runs inside the graph node "tools"."""
        positional = [arg.value for arg in args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword: arg.value for arg in args if arg.keyword is not None}
        tools = keywords.get("tools", positional[position] if len(positional) > position else None)
        if isinstance(tools, ast.Name) and not self.is_local(tools.id):
            tools = next((value for name, value in reversed(self.module_values) if name == tools.id), None)
        if not isinstance(tools, (ast.List, ast.Tuple)):
            return
        for element in tools.elts:
            for target in self._node_targets(element, depth=0):
                if not target.endswith(".__call__"):
                    self.graph_nodes.append(("tools", target, call, profile.name))

    def _node_targets(self, value: ast.AST, depth: int) -> list[str]:
        """The project functions a node argument runs: the function or method itself, what
        ``functools.partial`` wraps, an instance's ``__call__``, the project functions a lambda calls."""
        if isinstance(value, ast.Lambda):
            found = [self.resolve(inner.func) for inner in calls_in(value.body)]
            return [target for target in found if target and self.is_project_candidate(target)]
        if isinstance(value, ast.Call):
            callee = self.resolve(value.func)
            first = call_args(value)[0].value if (value.args or value.keywords) else None
            if callee == "functools.partial" and first is not None and depth < 3:
                return self._node_targets(first, depth + 1)
            return [f"{callee}.__call__"] if callee and self.is_project_candidate(callee) else []
        if isinstance(value, (ast.Name, ast.Attribute)):
            target = self.resolve(value)
            return [target] if target and self.is_project_candidate(target) else []
        return []

    # --- recording --------------------------------------------------------------------------

    def _effect(
        self, rule: Rule, node: ast.AST, subject: str, qualname: str, *,
        frameworks: tuple[str, ...] = (), args: tuple[Arg, ...] = (), gathered_only: bool = False,
        log_only: bool = False,
    ) -> None:
        self.effect_in(self.function, self.first_run_only, rule, node, subject, qualname, frameworks=frameworks,
                       args=args, gathered_only=gathered_only, log_only=log_only)

    def effect_in(
        self, function: FunctionBuilder | None, first_run_only: int, rule: Rule, node: Any, subject: str,
        qualname: str, *, frameworks: tuple[str, ...] = (), args: tuple[Arg, ...] = (), gathered_only: bool = False,
        log_only: bool = False,
    ) -> None:
        """An effect in ``function`` (dropped outside functions, in steps and in first-run-only code)."""
        if function is None or function.kind == STEP or first_run_only:
            return
        if qualname not in self.ctx.fix_names and qualname not in OPEN_CALLS:
            args = ()
        own = function is self.function
        pending = Pending(node, rule, subject, qualname, frameworks, args, unless_given=self.unless_truthy if own else "",
                          gathered=gathered_only, log_only=log_only, when=self.guards if own else ())
        if own and rule.category in FRESH_CATEGORIES:
            pending.flows = self._flows(node, pending)
        function.effects.append(pending)

    # --- positions and the summary ----------------------------------------------------------

    def _finish(self) -> ModuleSummary:
        # Positions come with the nodes; only what is reported or suppressed is turned into a span:
        # effects and call sites of orchestration functions, a helper's effects and call sites (a finding
        # reached through a helper is reported at the orchestration call site, once per helper line, and a
        # suppression comment on the helper line counts), and findings reported in any code (keys).
        source = self.source

        def node_span(node: ast.AST) -> Span:
            (line, column), (end_line, end_column) = source.span(node)
            return Span(line, column + 1, end_line, end_column + 1)

        def span(pending: Pending) -> Span:
            return node_span(pending.node)

        def effect(pending: Pending, direct: bool = True) -> Effect:
            assert pending.rule is not None
            args = ", ".join(arg_text(source, arg) for arg in pending.args) if direct else ""
            return Effect(pending.rule.code, pending.rule.category, pending.subject, pending.qualname, span(pending),
                          pending.frameworks, args, pending.unless_given, pending.unit, pending.gathered,
                          pending.log_only, pending.when, pending.flows)

        functions = {}
        for function in self.functions:
            functions[function.name] = FunctionSummary(
                function.name, function.kind, function.framework, function.context_param,
                tuple(effect(p, function.kind == ORCHESTRATION or p.qualname in OPEN_CALLS) for p in function.effects),
                tuple(CallSite(p.qualname, span(p), p.subject, p.given, p.unless_given, p.gathered,
                               config_args=p.config_args, when=p.when, values=p.values, flows=p.flows)
                      for p in function.calls),
                tuple(effect(p) for p in function.keys), function.retried, function.returns,
                tuple(node_span(n) for n in function.pauses), tuple(node_span(n) for n in function.pause_loops),
                function.query,
                tuple(CallSite(p.qualname, span(p), p.subject) for p in function.lookups),
                tuple(dict.fromkeys(function.tool_keys)),
                tuple((origin, CallSite("", span(p), p.subject)) for origin, p in function.config_tools),
                tuple(function.child_params),
            )
        return ModuleSummary(
            module=self.module,
            path=self.path,
            aliases=dict(self.aliases),
            exports={name: value for name, (kind, value) in self.module_scope.items() if kind == "inst" and value},
            containers=tuple(sorted(self.containers)),
            functions=functions,
            classes=dict(self.classes),
            findings=tuple(effect(p) for p in self.findings),
            step_targets=tuple(sorted(self.step_targets)),
            graph_nodes=tuple(GraphNode(name, target, node_span(call), framework)
                              for name, target, call, framework in self.graph_nodes),
            tool_sets={name: spec for name, value in self.module_values
                       if (spec := tool_set_spec(self, value)) is not None},
        )


# The expressions ``tool_lookups.config_origin`` may find a value from the config in (besides a name).
_CONFIG_SHAPES = (ast.Subscript, ast.Call, ast.BoolOp, ast.IfExp, ast.Await)
# Tests that may be about a parameter's truthiness (``lint.guards``); the expressions ``_mark`` follows.
_GUARD_TESTS = frozenset({ast.Name, ast.UnaryOp, ast.BoolOp})
# Values a fresh value or a project call's result can be made of (``_mark``): calls and the carriers.
_VALUE_KINDS = frozenset({ast.Call, ast.JoinedStr, ast.BinOp, ast.Attribute, ast.Subscript, ast.Await})
_ARGUMENT_KINDS = frozenset({ast.Name, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Call})
_CARRIERS = frozenset({ast.JoinedStr, ast.BinOp, ast.Attribute, ast.Subscript, ast.Await})

_TRY_TYPES: tuple[type, ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))

_HANDLERS: dict[type, Any] = {
    ast.FunctionDef: ModuleCollector._on_function_def,
    ast.AsyncFunctionDef: ModuleCollector._on_function_def,
    ast.ClassDef: ModuleCollector._on_class_def,
    ast.Import: ModuleCollector._on_import,
    ast.ImportFrom: ModuleCollector._on_import,
    ast.Assign: ModuleCollector._on_assign,
    ast.AnnAssign: ModuleCollector._on_ann_assign,
    ast.AugAssign: ModuleCollector._on_aug_assign,
    ast.Delete: ModuleCollector._on_del,
    ast.Global: ModuleCollector._on_global,
    ast.Nonlocal: ModuleCollector._on_nonlocal,
    ast.Return: ModuleCollector._on_return,
    ast.Yield: ModuleCollector._on_yield,
    ast.For: ModuleCollector._on_for,
    ast.AsyncFor: ModuleCollector._on_for,
    ast.While: ModuleCollector._on_while,
    ast.With: ModuleCollector._on_with,
    ast.AsyncWith: ModuleCollector._on_with,
    ast.If: ModuleCollector._on_if,
    ast.BoolOp: ModuleCollector._on_bool_op,
    ast.IfExp: ModuleCollector._on_if_exp,
    ast.NamedExpr: ModuleCollector._on_named_expr,
    **{getattr(ast, name): ModuleCollector._on_capture for name in ("MatchAs", "MatchStar", "MatchMapping")
       if hasattr(ast, name)},
    **{try_type: ModuleCollector._on_try for try_type in _TRY_TYPES},
    ast.ListComp: ModuleCollector._on_comprehension,
    ast.GeneratorExp: ModuleCollector._on_comprehension,
    ast.SetComp: ModuleCollector._on_comprehension,
    ast.DictComp: ModuleCollector._on_comprehension,
    ast.Lambda: ModuleCollector._on_lambda,
    ast.Name: ModuleCollector._on_name,
    ast.Attribute: ModuleCollector._on_attribute,
    ast.Subscript: ModuleCollector._on_subscript,
    ast.Starred: ModuleCollector._on_starred,
    ast.Dict: ModuleCollector._on_dict,
    ast.Call: ModuleCollector._on_call,
}
