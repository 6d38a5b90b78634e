"""The one batched pass: walk a parsed module once and produce its ``ModuleSummary``.

The walk is hand-rolled rather than a ``CSTVisitor``: it reads each node's child fields directly and
skips whitespace and punctuation, which makes it several times cheaper than libcst's generic
traversal. ``ModuleCollector`` does the walking and keeps the scopes; its parts live beside it:
``names`` (imports and the qualified name of an expression), ``values`` (value kinds and values that
differ per attempt), ``roles`` (which functions are orchestration code or steps, from the profiles) and
``field_factories``. Table rules are matched here (``LintContext.match_call``); structural rules own
their detection and are called through their hooks (``Rule.on_call`` …) at fixed points of the walk.

Positions are computed afterwards, only for what can be reported at its own place (effects and call
sites of orchestration functions and helpers, findings reported in any code), by one code generation
of the module (``cst_positions``) that brings line/column up to date only at those nodes.
"""

from __future__ import annotations

import os
from typing import Any

import libcst as cst

from replaytest.lint.context import LintContext
from replaytest.lint.cst_positions import node_spans
from replaytest.lint.facts import LOCAL, Binding, FunctionBuilder, Pending
from replaytest.lint.field_factories import FieldFactories
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
from replaytest.lint.syntax import arg_text, calls_in, child_fields, dotted_text, unawaited
from replaytest.lint.values import SET_PAIR_CALLS, SET_TYPES, ValueModel
from replaytest.lint.vocabulary import OPEN_CALLS

_CONTAINER_CALLS = frozenset({"builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict",
                              "collections.OrderedDict", "collections.deque", "collections.Counter"})


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
        self.graph_nodes: list[tuple[str, str, cst.CSTNode, str]] = []
        self.class_names: set[str] = set()
        self.flags: set[tuple[str, int]] = set()
        # Depth of ``if not context.is_replaying:`` bodies being walked (code that never runs on replay).
        self.first_run_only = 0
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

    # --- entry point ------------------------------------------------------------------------

    def collect(self, tree: cst.Module) -> ModuleSummary:
        self._prescan(tree.body)
        self.used_profiles = self.ctx.profiles_for_imports(self.aliases.values())
        for statement in tree.body:
            self._statement_at(statement, prefix="")
        return self._finish(tree)

    # --- module-level pre-scan: imports, definitions, containers, registrations -------------

    def _prescan(self, body: Any) -> None:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self._prescan_small(small)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                self.module_scope[statement.name.value] = ("q", f"{self.module}.{statement.name.value}")
                if isinstance(statement, cst.ClassDef):
                    self.class_names.add(statement.name.value)
            elif isinstance(statement, cst.If):
                self._prescan(statement.body.body)
                orelse = statement.orelse
                while orelse is not None:
                    self._prescan(orelse.body.body)
                    orelse = getattr(orelse, "orelse", None)
            elif isinstance(statement, cst.Try):
                self._prescan(statement.body.body)
                for handler in statement.handlers:
                    self._prescan(handler.body.body)
                if statement.orelse:
                    self._prescan(statement.orelse.body.body)
                if statement.finalbody:
                    self._prescan(statement.finalbody.body.body)
            elif isinstance(statement, cst.With):
                self._prescan(statement.body.body)

    def _prescan_small(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            for name, qualname in self.import_bindings(small):
                self.module_scope[name] = ("q", qualname)
                self.aliases[name] = qualname
        elif isinstance(small, cst.Assign):
            self.prescan_registration(small.value)
            binding = self.binding_for_value(small.value)
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    self.module_scope[target.target.value] = binding
                    if self._is_container(small.value):
                        self.containers.add(target.target.value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            if isinstance(small.target, cst.Name):
                self.module_scope[small.target.value] = self.binding_for_value(small.value)
                if self._is_container(small.value):
                    self.containers.add(small.target.value)
        elif isinstance(small, cst.Expr):
            self.prescan_registration(small.value)

    def _is_container(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
            return True
        return isinstance(value, cst.Call) and self.resolve(value.func) in _CONTAINER_CALLS

    # --- what rules may ask and how they report (``ModuleFacts``) ---------------------------

    def module_container(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name) and node.value in self.containers and self.function is not None:
            if not self.is_local(node.value):
                return node.value
        return None

    def shares_instances(self, class_qualname: str) -> bool:
        owner, _, name = class_qualname.partition(f"{self.module}.")
        summary = self.classes.get(name) if not owner else None
        return summary is not None and any(base in self.ctx.shared_instance_bases for base in summary.bases)

    def flag(self, tag: str, node: cst.CSTNode) -> None:
        self.flags.add((tag, id(node)))

    def flagged(self, tag: str, node: cst.CSTNode) -> bool:
        return (tag, id(node)) in self.flags

    def report(self, rule: Rule, node: cst.CSTNode, subject: str, qualname: str) -> None:
        self._effect(rule, node, subject, qualname)

    def report_key(self, rule: Rule, node: cst.CSTNode, key: str, source: str, unit: str) -> None:
        pending = Pending(node, rule, key, source, unit=unit)
        if unit or self.function is None:
            self.findings.append(pending)
        else:
            self.function.keys.append(pending)

    def defer(self, node: cst.CSTNode, subject: str, target: str) -> None:
        if self.function is not None and not self.first_run_only:
            self.function.calls.append(Pending(node, None, subject, target))

    # --- statements and definitions ---------------------------------------------------------

    def _statement_at(self, statement: cst.CSTNode, prefix: str) -> None:
        if isinstance(statement, cst.FunctionDef):
            self._function(statement, prefix, None)
        elif isinstance(statement, cst.ClassDef):
            self._class(statement, prefix)
        else:
            self.walk(statement)

    def _class(self, node: cst.ClassDef, prefix: str) -> None:
        name = f"{prefix}{node.name.value}"
        qualname = f"{self.module}.{name}"
        bases = [resolved for arg in node.bases if (resolved := self.resolve(arg.value))]
        info = self.class_info(node, name, bool(prefix), bases)
        for decorator in node.decorators:
            self.walk(decorator.decorator)
        methods = []
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                methods.append(statement.name.value)
                self.prescan_instance_attributes(qualname, statement)
        if "__init__" not in methods:
            self.field_factories(node, name)
        self.classes[name] = ClassSummary(name, tuple(bases), tuple(methods))
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                self._function(statement, f"{name}.", info)
            elif isinstance(statement, cst.ClassDef):
                self._class(statement, f"{name}.")
            else:
                self.walk(statement)

    def _function(self, node: cst.FunctionDef, prefix: str, info: ClassInfo | None) -> None:
        nested = self.function is not None
        name = f"{prefix}{node.name.value}"
        for decorator in node.decorators:
            self.walk(decorator.decorator)
        kind, profile = self.function_role(node, info, nested)
        scope: dict[str, Binding] = {}
        context_param = self.bind_parameters(node, scope, kind, profile, info)
        builder = FunctionBuilder(name, kind, profile.name if profile else "", context_param, scope)
        builder.query = kind == ORCHESTRATION and self.is_query_handler(node, info)
        if node.returns is not None:
            # ``-> set[str]``: callers iterating the result iterate a set (activities' results are
            # converted to the annotated type, so this holds across a step boundary too).
            if self.annotated_type(node.returns.annotation) in SET_TYPES:
                builder.returns = "builtins.set"
        outer_function, outer_scopes = self.function, self.scopes
        if nested:
            outer_scopes[-1][node.name.value] = ("q", f"{self.module}.{name}")
            self.scopes = [*outer_scopes, scope]
        else:
            self.scopes = [scope]
        self.function = builder
        self.functions.append(builder)
        outer_gathering, self.gathering = self.gathering, 0  # a function defined in gather's arguments runs later
        try:
            for hook in self._on_function_hooks:
                hook(self, node)
            self.walk(node.body)
        finally:
            self.function, self.scopes = outer_function, outer_scopes
            self.gathering = outer_gathering

    # --- the walk ---------------------------------------------------------------------------

    def walk(self, node: cst.CSTNode) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
            return
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                self.walk(value)
            elif isinstance(value, (list, tuple)):
                for child in value:
                    if isinstance(child, cst.CSTNode):
                        self.walk(child)

    def _bind(self, target: cst.BaseExpression, binding: Binding) -> None:
        scope = self.scopes[-1] if self.scopes else None
        if isinstance(target, cst.Name):
            if scope is not None:
                scope[target.value] = binding
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, LOCAL)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, LOCAL)

    def _on_function_def(self, node: cst.FunctionDef) -> None:
        if self.function is None:
            self._function(node, "", None)
        else:
            self._function(node, f"{self.function.name}.", None)

    def _on_class_def(self, node: cst.ClassDef) -> None:
        prefix = f"{self.function.name}." if self.function is not None else ""
        saved = self.function, self.scopes
        self._class(node, prefix)
        self.function, self.scopes = saved

    def _on_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if not self.scopes:
            return  # module level: the pre-scan bound these
        for name, qualname in self.import_bindings(node):
            self.scopes[-1][name] = ("q", qualname)

    def _on_assign(self, node: cst.Assign) -> None:
        self.walk(node.value)
        for target in node.targets:
            self._assign_target(target.target, node.value)

    def _on_ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.walk(node.value)
            self._assign_target(node.target, node.value)

    def _on_aug_assign(self, node: cst.AugAssign) -> None:
        self.walk(node.value)
        self._assign_target(node.target, None)

    def _assign_target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Subscript):
            self.walk(target)
        elif isinstance(target, cst.Attribute):
            self.walk(target.value)
        elif isinstance(target, cst.Name) and self.function is not None and (
            target.value in self.function.declared_globals or target.value in self.function.declared_nonlocals
        ):
            pass  # binds the module's (or enclosing function's) name, not a local; a rule decides if that is a finding
        elif value is not None and self.scopes:
            if isinstance(target, (cst.Tuple, cst.List)) and self._is_set_pair(value):
                for element in target.elements:
                    self._bind(element.value, ("set", None))
                self._assign_hooks(target, value)
                return
            binding = self.binding_for_value(value) if isinstance(target, cst.Name) else LOCAL
            function = self.function
            if function is not None and isinstance(target, cst.Name):
                function.fresh_sources.pop(target.value, None)  # rebound: what it held before is gone
            if binding[0] == "taint" and function is not None and isinstance(target, cst.Name):
                function.fresh_levels[target.value] = function.retry_loops
                typed = self._typed_result(value)
                if typed is not None:
                    # ``blob = make_client(name=f"{uuid4()}.csv")``: the value is both what the call returns
                    # (its methods may be effects) and made from a fresh value (it may become a key).
                    function.fresh_sources[target.value] = binding[1]
                    binding = ("inst", typed)
            self._bind(target, binding)
        self._assign_hooks(target, value)

    def _assign_hooks(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        for hook in self._on_assign_hooks:
            hook(self, target, value)

    def _typed_result(self, value: cst.BaseExpression) -> str | None:
        """What a call returns, when the call itself is not what makes the value fresh (its arguments are)."""
        call = unawaited(value)
        if not isinstance(call, cst.Call) or id(call) in self.tainted:
            return None
        return self.returned_function(value) or self.resolve(call)

    def _is_set_pair(self, value: cst.BaseExpression) -> bool:
        call = unawaited(value)
        return isinstance(call, cst.Call) and self.resolve(call.func) in SET_PAIR_CALLS

    def _on_del(self, node: cst.Del) -> None:
        self.walk(node.target)
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for element in targets:
            target = element.value if isinstance(element, cst.BaseElement) else element
            for hook in self._on_del_hooks:
                hook(self, target)

    def _on_return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        self.walk(node.value)
        function = self.function
        if function is not None and not function.returns and self.kind_of(node.value) == "set":
            function.returns = "builtins.set"
        if function is not None and not function.returns and isinstance(node.value, (cst.Call, cst.Await, cst.Name)):
            binding = self.binding_for_value(node.value)
            if binding[0] == "inst" and binding[1]:
                function.returns = binding[1]
        elif function is not None and not function.returns and isinstance(node.value, cst.Attribute):
            # ``return self._client`` where a method assigned ``self._client = OpenAI()``.
            typed = self.resolve(node.value)
            if typed is not None and typed in self.instance_attributes.values():
                function.returns = typed
        for hook in self._on_return_hooks:
            hook(self, node)

    def _on_global(self, node: cst.Global) -> None:
        # Declaring a name global writes nothing; assigning it afterwards does (``_assign_target``).
        if self.function is None:
            return
        for item in node.names:
            self.function.declared_globals.add(item.name.value)

    def _on_nonlocal(self, node: cst.Nonlocal) -> None:
        if self.function is None:
            return
        for item in node.names:
            self.function.declared_nonlocals.add(item.name.value)

    def _on_for(self, node: cst.For) -> None:
        self.walk(node.iter)
        for hook in self._on_loop_hooks:
            hook(self, node)
        self._bind(node.target, LOCAL)
        self._loop_body(node)

    def _on_while(self, node: cst.While) -> None:
        self.walk(node.test)
        for hook in self._on_loop_hooks:
            hook(self, node)
        self._loop_body(node)

    def _loop_body(self, node: cst.For | cst.While) -> None:
        function = self.function
        retry = function is not None and any(hook(self, node) for hook in self._reruns_body_hooks)
        pauses_before = len(function.pauses) if function is not None else 0
        if not retry or function is None:
            self.walk(node.body)
        else:
            function.retry_loops += 1
            try:
                self.walk(node.body)
            finally:
                function.retry_loops -= 1
        if function is not None and len(function.pauses) > pauses_before:
            # A later turn of the loop pauses again: the code after the pause ran before that one.
            function.pause_loops.append(node)
        if node.orelse is not None:
            self.walk(node.orelse)

    def _on_if(self, node: cst.If) -> None:
        self.walk(node.test)
        body_skipped, else_skipped = self._replay_guard(node.test)
        self._walk_first_run(node.body, body_skipped)
        if node.orelse is not None:
            self._walk_first_run(node.orelse, else_skipped)

    def _replay_guard(self, test: cst.BaseExpression) -> tuple[bool, bool]:
        """(body, else) of an ``if`` that tests a replaying flag: which of them never runs on replay."""
        flags = [flag for profile in self.used_profiles for flag in profile.replaying_flags]
        if not flags:
            return False, False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.resolve(test.expression) in flags, False
        return False, self.resolve(test) in flags

    def _walk_first_run(self, node: cst.CSTNode, first_run_only: bool) -> None:
        if not first_run_only:
            self.walk(node)
            return
        self.first_run_only += 1
        try:
            self.walk(node)
        finally:
            self.first_run_only -= 1

    def _on_with(self, node: cst.With) -> None:
        for item in node.items:
            self.walk(item.item)
            if not node.asynchronous:
                self._entered(item.item)
            if item.asname is not None:
                qualname = self.resolve(item.item)
                self._bind(item.asname.name, ("inst", qualname) if qualname else LOCAL)
        self.walk(node.body)

    def _entered(self, manager: cst.BaseExpression) -> None:
        """``with lock:`` calls ``lock.__enter__()``: an effect when the rule tables name it for the manager's
        type (a ``threading.Lock`` blocks); through an instance another project module exports, a call site
        decided at resolution. A manager made in the ``with`` itself (``with threading.Lock():``) is fresh and
        never blocks, and the calls in it were walked already."""
        function = self.function
        if function is None or not isinstance(manager, (cst.Name, cst.Attribute)):
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
            and not (isinstance(manager, cst.Name) and self.is_local(manager.value))
        ):
            function.calls.append(Pending(manager, None, subject, enter))

    def _on_comprehension(self, node: cst.ListComp | cst.GeneratorExp | cst.SetComp | cst.DictComp) -> None:
        scope_added = not self.scopes
        if scope_added:
            self.scopes = [{}]
        try:
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                self.walk(clause.iter)
                for hook in self._on_comprehension_hooks:
                    hook(self, node, clause)
                self._bind(clause.target, LOCAL)
                for condition in clause.ifs:
                    self.walk(condition.test)
                clause = clause.inner_for_in
            if isinstance(node, cst.DictComp):
                self.walk(node.key)
                self.walk(node.value)
            else:
                self.walk(node.elt)
        finally:
            if scope_added:
                self.scopes = []

    def _on_lambda(self, node: cst.Lambda) -> None:
        scope: dict[str, Binding] = {}
        for param in node.params.params:
            scope[param.name.value] = LOCAL
        saved = self.scopes
        self.scopes = [*saved, scope]
        try:
            self.walk(node.body)
        finally:
            self.scopes = saved

    def _on_name(self, node: cst.Name) -> None:
        if node.value in self.ctx.read_attributes and self.function is not None:
            qualname = self.resolve(node)
            rule = self.ctx.reads.get(qualname or "")
            if rule is not None:
                self._effect(rule, node, node.value, qualname or "")

    def _on_attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in self.ctx.read_attributes and self.function is not None:
            qualname = self.resolve(node)
            rule = self.ctx.reads.get(qualname or "")
            if rule is not None:
                self._effect(rule, node, dotted_text(node), qualname or "")
                return
        self.walk(node.value)

    def _on_subscript(self, node: cst.Subscript) -> None:
        self.walk(node.value)
        for element in node.slice:
            self.walk(element.slice)
        for hook in self._on_subscript_hooks:
            hook(self, node)

    def _on_starred(self, node: cst.StarredElement) -> None:
        self.walk(node.value)
        for hook in self._on_starred_hooks:
            hook(self, node)

    def _on_dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.walk(element.key)
            self.walk(element.value)
        for hook in self._on_dict_hooks:
            hook(self, node)

    def _on_call(self, node: cst.Call) -> None:
        func = node.func
        qualname = self.resolve(func)
        step_call = qualname is not None and qualname in self.ctx.step_calls
        self.walk(func)
        for hook in self._before_call_hooks:
            hook(self, node, qualname)
        gathers = qualname is not None and qualname in self.ctx.concurrent_calls
        self.gathering += gathers
        try:
            self._call_arguments(node, step_call)
        finally:
            self.gathering -= gathers
        for hook in self._on_call_hooks:
            hook(self, node, qualname)
        if qualname is None:
            return
        if qualname in self.ctx.pause_calls and self.function is not None:
            self.function.pauses.append(node)
        node_profile = self.ctx.node_registrations.get(qualname)
        if node_profile is not None:
            self._graph_nodes(node, node_profile)
        subject = f"{dotted_text(func)}()"
        rule = self.ctx.match_call(qualname)
        matched = False
        if rule is not None and rule.accept_call(CallFact(qualname, node, self.kind_of)):
            matched = True
            if rule.category in self.ctx.taint_categories:
                self.tainted[id(node)] = subject
            self._effect(rule, node, subject, qualname, args=tuple(node.args))
        for category, framework in self.ctx.extra_effects.get(qualname, ()):
            extra_rule = self.ctx.by_category.get(category)
            if extra_rule is not None:
                matched = True
                self._effect(extra_rule, node, subject, qualname, frameworks=(framework,), args=tuple(node.args))
        sensitive = self.ctx.order_sensitive_calls.get(qualname)
        concurrency_rule = self.ctx.by_category.get("concurrency")
        if sensitive and concurrency_rule is not None:
            matched = True
            self._effect(concurrency_rule, node, subject, qualname, frameworks=tuple(sensitive),
                         gathered_only=not self.gathering)
        if not matched and self.is_project_candidate(qualname):
            function = self.function
            # Steps' calls too: a helper a step calls is part of the retried unit (idempotency keys). A
            # helper called under ``if not context.is_replaying:`` never runs on replay, like a direct call
            # there, so it is not followed either.
            if function is not None and not (self.first_run_only and function.kind != STEP):
                given = tuple(
                    "#*" if arg.star else arg.keyword.value if arg.keyword is not None else "" for arg in node.args
                )
                positional = sum(1 for g in given if g == "")
                given = (f"#{positional}", *sorted({g for g in given if g}))
                function.calls.append(Pending(node, None, subject, qualname, given=given,
                                              gathered=self.gathering > 0))

    def _call_arguments(self, node: cst.Call, step_call: bool) -> None:
        for arg in node.args:
            value = arg.value
            if step_call and isinstance(value, cst.Lambda):
                # Its body runs as a recorded step: the project functions it calls are steps too
                # (``ctx.run("post", lambda: post_order(order))``), so they are part of the retried unit.
                for inner in calls_in(value.body):
                    target = self.resolve(inner.func)
                    if target and self.is_project_candidate(target):
                        self.step_targets.add(target)
                continue
            if step_call and isinstance(value, (cst.Name, cst.Attribute)):
                target = self.resolve(value)
                if target and self.is_project_candidate(target):
                    self.step_targets.add(target)
            self.walk(value)

    def _graph_nodes(self, call: cst.Call, profile: FrameworkProfile) -> None:
        """``add_node("review", review)``, ``add_node(review)``, ``add_node("n", action=fn)``,
        ``add_sequence([fetch, ("review", review)])``: remember which project functions run as nodes."""
        positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
        name = keywords.get("node", positional[0] if positional else None)
        action = keywords.get("action", positional[1] if len(positional) > 1 else None)
        pairs: list[tuple[cst.BaseExpression | None, cst.BaseExpression]] = []
        if action is not None:
            pairs.append((name, action))
        elif isinstance(name, (cst.List, cst.Tuple)):
            for element in name.elements:
                value = element.value
                if isinstance(value, cst.Tuple) and len(value.elements) == 2:
                    pairs.append((value.elements[0].value, value.elements[1].value))
                else:
                    pairs.append((None, value))
        elif name is not None:
            pairs.append((None, name))
        for name_node, callable_node in pairs:
            for target in self._node_targets(callable_node, depth=0):
                if isinstance(name_node, cst.SimpleString) and isinstance(name_node.evaluated_value, str):
                    node_name = name_node.evaluated_value
                else:
                    node_name = target.rsplit(".", 1)[-1] if not target.endswith(".__call__") else target.split(".")[-2]
                self.graph_nodes.append((node_name, target, call, profile.name))

    def _node_targets(self, value: cst.BaseExpression, depth: int) -> list[str]:
        """The project functions a node argument runs: the function or method itself, what
        ``functools.partial`` wraps, an instance's ``__call__``, the project functions a lambda calls."""
        if isinstance(value, cst.Lambda):
            found = [self.resolve(inner.func) for inner in calls_in(value.body)]
            return [target for target in found if target and self.is_project_candidate(target)]
        if isinstance(value, cst.Call):
            callee = self.resolve(value.func)
            if callee == "functools.partial" and value.args and depth < 3:
                return self._node_targets(value.args[0].value, depth + 1)
            return [f"{callee}.__call__"] if callee and self.is_project_candidate(callee) else []
        if isinstance(value, (cst.Name, cst.Attribute)):
            target = self.resolve(value)
            return [target] if target and self.is_project_candidate(target) else []
        return []

    # --- recording --------------------------------------------------------------------------

    def _effect(
        self, rule: Rule, node: cst.CSTNode, subject: str, qualname: str, *,
        frameworks: tuple[str, ...] = (), args: tuple[cst.Arg, ...] = (), gathered_only: bool = False,
    ) -> None:
        function = self.function
        if function is None or function.kind == STEP or self.first_run_only:
            return
        if qualname not in self.ctx.fix_names and qualname not in OPEN_CALLS:
            args = ()
        function.effects.append(Pending(node, rule, subject, qualname, frameworks, args, gathered=gathered_only))

    # --- positions and the summary ----------------------------------------------------------

    def _finish(self, tree: cst.Module) -> ModuleSummary:
        # Only what is reported or suppressed needs a position: effects and call sites of orchestration
        # functions, a helper's effects and call sites (a finding reached through a helper is reported at
        # the orchestration call site, once per helper line, and a suppression comment on the helper line
        # counts), and findings reported in any code (keys).
        wanted: set[int] = set()
        for function in self.functions:
            if function.kind != STEP:
                for pending in (*function.effects, *function.calls):
                    wanted.add(id(pending.node))
        for pending in self.findings:
            wanted.add(id(pending.node))
        for function in self.functions:
            wanted.update(id(node) for node in (*function.pauses, *function.pause_loops))
        wanted.update(id(call) for _, _, call, _ in self.graph_nodes)
        for function in self.functions:
            for pending in function.keys:
                wanted.add(id(pending.node))
        spans = node_spans(tree, wanted) if wanted else {}

        def node_span(node: cst.CSTNode) -> Span:
            (line, column), (end_line, end_column) = spans.get(id(node), ((1, 0), (1, 0)))
            return Span(line, column + 1, end_line, end_column + 1)

        def span(pending: Pending) -> Span:
            return node_span(pending.node)

        def effect(pending: Pending, direct: bool = True) -> Effect:
            assert pending.rule is not None
            args = ", ".join(arg_text(tree, arg) for arg in pending.args) if direct else ""
            return Effect(pending.rule.code, pending.rule.category, pending.subject, pending.qualname, span(pending),
                          pending.frameworks, args, pending.unless_given, pending.unit, pending.gathered)

        functions = {}
        for function in self.functions:
            functions[function.name] = FunctionSummary(
                function.name, function.kind, function.framework, function.context_param,
                tuple(effect(p, function.kind == ORCHESTRATION or p.qualname in OPEN_CALLS) for p in function.effects),
                tuple(CallSite(p.qualname, span(p), p.subject, p.given, p.unless_given, p.gathered) for p in function.calls),
                tuple(effect(p) for p in function.keys), function.retried, function.returns,
                tuple(node_span(n) for n in function.pauses), tuple(node_span(n) for n in function.pause_loops),
                function.query,
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
        )


_HANDLERS: dict[type, Any] = {
    cst.FunctionDef: ModuleCollector._on_function_def,
    cst.ClassDef: ModuleCollector._on_class_def,
    cst.Import: ModuleCollector._on_import,
    cst.ImportFrom: ModuleCollector._on_import,
    cst.Assign: ModuleCollector._on_assign,
    cst.AnnAssign: ModuleCollector._on_ann_assign,
    cst.AugAssign: ModuleCollector._on_aug_assign,
    cst.Del: ModuleCollector._on_del,
    cst.Global: ModuleCollector._on_global,
    cst.Nonlocal: ModuleCollector._on_nonlocal,
    cst.Return: ModuleCollector._on_return,
    cst.For: ModuleCollector._on_for,
    cst.While: ModuleCollector._on_while,
    cst.With: ModuleCollector._on_with,
    cst.If: ModuleCollector._on_if,
    cst.ListComp: ModuleCollector._on_comprehension,
    cst.GeneratorExp: ModuleCollector._on_comprehension,
    cst.SetComp: ModuleCollector._on_comprehension,
    cst.DictComp: ModuleCollector._on_comprehension,
    cst.Lambda: ModuleCollector._on_lambda,
    cst.Name: ModuleCollector._on_name,
    cst.Attribute: ModuleCollector._on_attribute,
    cst.Subscript: ModuleCollector._on_subscript,
    cst.StarredElement: ModuleCollector._on_starred,
    cst.Dict: ModuleCollector._on_dict,
    cst.Call: ModuleCollector._on_call,
}
