"""The one batched pass: walk a parsed module once and produce its ``ModuleSummary``.

The walk is hand-rolled rather than a ``CSTVisitor``: it reads each node's child fields directly and
skips whitespace and punctuation, which makes it several times cheaper than libcst's generic
traversal. On the way it keeps a light scope model (imports with aliases, relative and conditional
imports, locals bound to instances of known classes, sets, directory listings, strings and fresh
values) so every call resolves to a qualified name, and asks the ``LintContext`` which rule, if any, the
call is an effect for. Positions are computed afterwards, only for what can be reported at its own
place (effects and call sites of orchestration functions, idempotency-key findings), by one code
generation of the module that brings line/column up to date only at those nodes.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Iterator
from typing import Any

import libcst as cst

from replaytest.lint.context import LintContext
from replaytest.lint.cst_positions import node_spans
from replaytest.lint.model import (
    MUTATING_METHODS,
    ORCHESTRATION,
    PLAIN,
    STEP,
    CallSite,
    ClassSummary,
    Effect,
    FunctionSummary,
    ModuleSummary,
    Span,
)
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import CallFact, GlobalWrite, KeyUse, Rule, UnorderedUse

_BUILTIN_NAMES = frozenset(dir(builtins))
# Calls whose result is a client object typed by its first string argument (boto3.client("s3")).
_TYPED_FACTORIES = frozenset(
    {"boto3.client", "boto3.resource", "boto3.Session.client", "boto3.Session.resource",
     "boto3.session.Session.client", "boto3.session.Session.resource"}
)
_SET_TYPES = frozenset({"builtins.set", "builtins.frozenset", "typing.Set", "typing.FrozenSet", "typing.AbstractSet",
                        "collections.abc.Set", "collections.abc.MutableSet"})
_STR_TYPES = frozenset({"builtins.str", "builtins.bytes"})
_LISTING_CALLS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.iglob", "pathlib.Path.iterdir",
                            "pathlib.Path.glob", "pathlib.Path.rglob", "os.walk"})
_SET_METHODS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_STR_METHODS = frozenset({"encode", "decode", "lower", "upper", "strip", "format", "join", "replace", "casefold",
                          "lstrip", "rstrip", "title"})
_ORDER_FREE = frozenset({"builtins.sorted", "builtins.len", "builtins.sum", "builtins.min", "builtins.max",
                         "builtins.any", "builtins.all", "builtins.set", "builtins.frozenset", "collections.Counter"})
_LISTING_SINKS = {"builtins.list": "lists", "builtins.tuple": "lists", "builtins.enumerate": "iterates",
                  "builtins.next": "takes the first item of", "builtins.iter": "iterates", "builtins.zip": "iterates",
                  "builtins.reversed": "iterates", "builtins.map": "iterates", "builtins.filter": "iterates"}
_CONTAINER_CALLS = frozenset({"builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict",
                              "collections.OrderedDict", "collections.deque", "collections.Counter"})
_UNORDERED = frozenset({"set", "listing", "dict"})
_FIELD_CALLS = frozenset({"dataclasses.field", "attr.ib", "attr.field", "attrs.field", "pydantic.Field",
                          "pydantic.fields.Field"})
# What a trace names as the origin of an unordered value.
_SET_ORIGINS = frozenset({"builtins.set", "builtins.frozenset", "builtins.dict", "builtins.dict.fromkeys"})
_DEFAULT_ORIGINS = {"set": "builtins.set", "listing": "os.listdir", "dict": "builtins.dict"}
# Fields that never hold code worth visiting (whitespace, punctuation, parentheses).
_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
    "operator", "dot", "colon", "equal", "star", "lbracket", "rbracket", "lbrace", "rbrace", "newline",
    "trailing_whitespace", "empty_lines", "asynchronous", "default_comma", "arrow", "indent", "encoding",
    "default_indent", "default_newline", "has_trailing_newline", "value_comma",
})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(node_type)
            if not f.name.startswith("whitespace") and f.name not in _SKIPPED_FIELDS
        )
        _FIELDS[node_type] = names
    return names


Binding = tuple  # (kind, value): ("q", name) | ("inst", type) | ("set"|"listing"|"dict"|"str", None) | ("taint", what) | ("local", None)
_LOCAL: Binding = ("local", None)


@dataclasses.dataclass
class _Pending:
    """An effect or call site waiting for its position."""

    node: cst.CSTNode
    rule: Rule | None
    subject: str
    qualname: str
    frameworks: tuple[str, ...] = ()
    args: tuple[cst.Arg, ...] = ()
    unless_given: str = ""
    given: tuple[str, ...] = ()
    unit: str = ""


@dataclasses.dataclass
class _FunctionBuilder:
    name: str
    kind: str
    framework: str
    context_param: str
    scope: dict[str, Binding]
    effects: list[_Pending] = dataclasses.field(default_factory=list)
    calls: list[_Pending] = dataclasses.field(default_factory=list)
    keys: list[_Pending] = dataclasses.field(default_factory=list)
    retried: bool = False
    returns: str = ""
    # How many retry loops enclose the statement being walked, and for each local holding a fresh
    # value, how many enclosed the place it was made.
    retry_loops: int = 0
    fresh_levels: dict[str, int] = dataclasses.field(default_factory=dict)
    # Names a ``global`` statement declared: assigning one writes module state.
    declared_globals: set[str] = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class _ClassInfo:
    name: str  # qualified within the module
    profile: FrameworkProfile | None  # orchestration class of this framework
    interceptor: FrameworkProfile | None  # every method is orchestration


class ModuleCollector:
    """Collects one module's summary. Create one per module; call ``collect`` once."""

    def __init__(self, context: LintContext, module: str, path: str, is_package: bool) -> None:
        self.ctx = context
        self.module = module
        self.path = path
        self.package = module if is_package else module.rpartition(".")[0]
        self.module_scope: dict[str, Binding] = {}
        self.aliases: dict[str, str] = {}
        self.containers: set[str] = set()
        self.registered: dict[str, FrameworkProfile] = {}
        self.instance_attributes: dict[str, str] = {}
        self.scopes: list[dict[str, Binding]] = []
        self.function: _FunctionBuilder | None = None
        self.functions: list[_FunctionBuilder] = []
        self.classes: dict[str, ClassSummary] = {}
        self.findings: list[_Pending] = []
        self.tainted: dict[int, str] = {}
        self.order_free: set[int] = set()
        self.step_lambdas: set[int] = set()
        self.used_profiles: list[FrameworkProfile] = []
        self.step_targets: set[str] = set()
        self.class_names: set[str] = set()

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
            for name, qualname in self._import_bindings(small):
                self.module_scope[name] = ("q", qualname)
                self.aliases[name] = qualname
        elif isinstance(small, cst.Assign):
            self._prescan_registration(small.value, [t.target for t in small.targets])
            binding = self._binding_for_value(small.value)
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    self.module_scope[target.target.value] = binding
                    if self._is_container(small.value):
                        self.containers.add(target.target.value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            if isinstance(small.target, cst.Name):
                self.module_scope[small.target.value] = self._binding_for_value(small.value)
                if self._is_container(small.value):
                    self.containers.add(small.target.value)
        elif isinstance(small, cst.Expr):
            self._prescan_registration(small.value, [])

    def _prescan_registration(self, value: cst.BaseExpression, targets: list) -> None:
        """``X = workflow.defn(X)``, ``workflow.defn(name="x")(X)``, ``df.Orchestrator.create(fn)``."""
        if not isinstance(value, cst.Call):
            return
        func = value.func
        profile = self.ctx.registration_calls.get(self.resolve(func) or "")
        if profile is None and isinstance(func, cst.Call):
            profile = self.ctx.registration_calls.get(self.resolve(func.func) or "")
        if profile is None:
            return
        for arg in value.args:
            if arg.keyword is None and isinstance(arg.value, cst.Name):
                self.registered[arg.value.value] = profile
                break

    def _is_container(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
            return True
        return isinstance(value, cst.Call) and self.resolve(value.func) in _CONTAINER_CALLS

    def _import_bindings(self, node: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, str]]:
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = _dotted_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    yield alias.asname.name.value, dotted
                else:
                    root = dotted.split(".", 1)[0]
                    yield root, root
            return
        base = _dotted_name(node.module) if node.module is not None else ""
        if node.relative:
            package = self.package
            for _ in range(len(node.relative) - 1):
                package = package.rpartition(".")[0]
            if not package and len(node.relative) > 1:
                return
            base = f"{package}.{base}" if base and package else (base or package)
        if isinstance(node.names, cst.ImportStar) or not base:
            return
        for alias in node.names:
            name = _dotted_name(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            yield local, f"{base}.{name}"

    # --- name resolution --------------------------------------------------------------------

    def lookup(self, name: str) -> Binding | None:
        for scope in reversed(self.scopes):
            binding = scope.get(name)
            if binding is not None:
                return binding
        return self.module_scope.get(name)

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """The qualified name an expression denotes (or the type of the instance it evaluates to)."""
        if isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            if binding is None:
                return f"builtins.{node.value}" if node.value in _BUILTIN_NAMES else None
            kind, value = binding
            return value if kind in ("q", "inst") else None
        if isinstance(node, cst.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            name = f"{base}.{node.attr.value}"
            typed = self.instance_attributes.get(name)
            if typed is not None:
                return typed
            return self.ctx.type_aliases.get(name, name)
        if isinstance(node, cst.Call):
            base = self.resolve(node.func)
            if base in _TYPED_FACTORIES and node.args and isinstance(node.args[0].value, cst.SimpleString):
                literal = _string_value(node.args[0].value)
                if literal is not None:
                    return f"{base}[{literal}]"
            return base
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            left = self.resolve(node.left)
            return left if left == "pathlib.Path" else None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
            # A LangChain pipeline (``prompt | llm | parser``) invokes the model inside it.
            for side in (node.right, node.left):
                typed = self.resolve(side)
                if typed is not None:
                    rule = self.ctx.match_call(f"{typed}.invoke")
                    if rule is not None and rule.category == "model-call":
                        return typed
            return None
        if isinstance(node, cst.Await):
            return self.resolve(node.expression)
        return None

    def kind_of(self, node: cst.BaseExpression) -> str | None:
        """What kind of value an expression is, for order and hashing questions:
        "set", "listing", "dict" (built from one of those), "str", or None."""
        if isinstance(node, (cst.Set, cst.SetComp)):
            return "set"
        if isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return "str"
        if isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            return binding[0] if binding is not None and binding[0] in ("set", "listing", "dict", "str") else None
        if isinstance(node, cst.Attribute):
            # ``self.pending = set()`` in a method types ``self.pending`` as a set in every method.
            return "set" if self.resolve(node) in ("builtins.set", "builtins.frozenset") else None
        if isinstance(node, cst.Call):
            func = node.func
            qualname = self.resolve(func)
            if qualname in ("builtins.set", "builtins.frozenset"):
                return "set"
            if qualname in _LISTING_CALLS:
                return "listing"
            if qualname in ("builtins.str", "builtins.repr", "builtins.bytes", "builtins.format"):
                return "str"
            if qualname in ("builtins.dict", "builtins.dict.fromkeys") and node.args:
                return "dict" if self.kind_of(node.args[0].value) in _UNORDERED else None
            if isinstance(func, cst.Attribute):
                receiver = self.kind_of(func.value)
                method = func.attr.value
                if receiver == "set" and method in _SET_METHODS:
                    return "set"
                if receiver == "dict" and method in ("keys", "values", "items"):
                    return "dict"
                if receiver == "str" and method in _STR_METHODS:
                    return "str"
            return None
        if isinstance(node, cst.BinaryOperation):
            operator = node.operator
            if isinstance(operator, (cst.BitOr, cst.BitAnd, cst.Subtract, cst.BitXor)):
                if self.kind_of(node.left) == "set" or self.kind_of(node.right) == "set":
                    return "set"
            elif isinstance(operator, (cst.Add, cst.Modulo)):
                if self.kind_of(node.left) == "str":
                    return "str"
            return None
        if isinstance(node, cst.DictComp):
            return "dict" if self.kind_of(node.for_in.iter) in _UNORDERED else None
        return None

    def taint_of(self, node: cst.CSTNode) -> str | None:
        """How a value comes to differ per attempt (a clock/random/uuid call in it), or None."""
        if isinstance(node, cst.Call):
            found = self.tainted.get(id(node))
            if found is not None:
                return found
        elif isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            if binding is not None and binding[0] == "taint":
                return binding[1]
            return None
        for name in _child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                found = self.taint_of(value)
                if found is not None:
                    return found
            elif isinstance(value, (list, tuple)):
                for child in value:
                    if isinstance(child, cst.CSTNode):
                        found = self.taint_of(child)
                        if found is not None:
                            return found
        return None

    def _fresh_call(self, node: cst.CSTNode) -> str | None:
        """A clock/random/uuid call written inside an expression (not through a name)."""
        if isinstance(node, cst.Call):
            found = self.tainted.get(id(node))
            if found is not None:
                return found
        for call in _calls_in(node):
            found = self.tainted.get(id(call))
            if found is not None:
                return found
        return None

    def _binding_for_value(self, value: cst.BaseExpression) -> Binding:
        taint = self.taint_of(value) if self.tainted else None
        if taint is not None:
            return ("taint", taint)
        kind = self.kind_of(value)
        if kind is not None:
            return (kind, None)
        if isinstance(value, (cst.Name, cst.Attribute)):
            qualname = self.resolve(value)
            binding = self.lookup(value.value) if isinstance(value, cst.Name) else None
            if binding is not None and binding[0] == "inst":
                return binding
            return ("q", qualname) if qualname else _LOCAL
        if isinstance(value, (cst.Call, cst.Await)):
            qualname = self.resolve(value)
            return ("inst", qualname) if qualname else _LOCAL
        return _LOCAL

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
        profile = self.registered.get(node.name.value) if not prefix else None
        for decorator in node.decorators:
            target = decorator.decorator
            resolved = self.resolve(target.func if isinstance(target, cst.Call) else target)
            profile = profile or self.ctx.class_decorators.get(resolved or "")
            self.walk(target)
        bases = []
        interceptor = None
        for arg in node.bases:
            resolved = self.resolve(arg.value)
            if resolved:
                bases.append(resolved)
                interceptor = interceptor or self.ctx.base_classes.get(resolved)
        methods = []
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                methods.append(statement.name.value)
                self._prescan_instance_attributes(qualname, statement)
        if "__init__" not in methods:
            self._field_factories(node, name)
        self.classes[name] = ClassSummary(name, tuple(bases), tuple(methods))
        info = _ClassInfo(name, profile, interceptor)
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                self._function(statement, f"{name}.", info)
            elif isinstance(statement, cst.ClassDef):
                self._class(statement, f"{name}.")
            else:
                self.walk(statement)

    def _field_factories(self, node: cst.ClassDef, name: str) -> None:
        """``created: datetime = field(default_factory=datetime.now)`` calls the factory whenever the
        (dataclass, attrs or pydantic) class is instantiated: record it as an effect of the generated
        ``__init__``, so constructing the class in orchestration code reaches it."""
        builder: _FunctionBuilder | None = None
        position = 0
        for statement in node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not (isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)):
                    continue
                field_name, position = small.target.value, position + 1
                value = small.value
                if not isinstance(value, cst.Call) or self.resolve(value.func) not in _FIELD_CALLS:
                    continue
                keyword_only = any(
                    a.keyword is not None and a.keyword.value == "kw_only" and _is_true(a.value) for a in value.args
                )
                for arg in value.args:
                    if arg.keyword is None or arg.keyword.value not in ("default_factory", "factory"):
                        continue
                    found = self._factory_effect(arg.value)
                    if found is None:
                        continue
                    if builder is None:
                        builder = _FunctionBuilder(f"{name}.__init__", PLAIN, "", "", {})
                        self.functions.append(builder)
                    rule, subject, factory = found
                    spec = f"{field_name}:{-1 if keyword_only else position - 1}"
                    builder.effects.append(_Pending(arg.value, rule, subject, factory, unless_given=spec))

    def _factory_effect(self, factory: cst.BaseExpression) -> tuple[Rule, str, str] | None:
        """The rule a default factory falls under: a function named directly, or a call in a lambda."""
        if isinstance(factory, (cst.Name, cst.Attribute)):
            qualname = self.resolve(factory)
            rule = self.ctx.match_call(qualname) if qualname else None
            return (rule, f"{_dotted_text(factory)}()", qualname) if rule is not None and qualname else None
        if isinstance(factory, cst.Lambda):
            for call in _calls_in(factory.body):
                qualname = self.resolve(call.func)
                rule = self.ctx.match_call(qualname) if qualname else None
                if rule is not None and qualname:
                    return rule, f"{_dotted_text(call.func)}()", qualname
        return None

    def _prescan_instance_attributes(self, class_qualname: str, method: cst.FunctionDef) -> None:
        """``self.client = OpenAI()`` in any method types ``self.client`` in every method."""
        body = method.body
        if not isinstance(body, cst.IndentedBlock):
            return
        for statement in body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    targets, value = [t.target for t in small.targets], small.value
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets, value = [small.target], small.value
                else:
                    continue
                if not isinstance(value, (cst.Call, cst.Await, cst.Set, cst.SetComp)):
                    continue
                for target in targets:
                    if (
                        isinstance(target, cst.Attribute)
                        and isinstance(target.value, cst.Name)
                        and target.value.value == "self"
                    ):
                        typed = "builtins.set" if isinstance(value, (cst.Set, cst.SetComp)) else self.resolve(value)
                        if typed:
                            self.instance_attributes[f"{class_qualname}.{target.attr.value}"] = typed

    def _function_role(self, node: cst.FunctionDef, info: _ClassInfo | None, nested: bool) -> tuple[str, FrameworkProfile | None]:
        kind, profile = PLAIN, None
        for decorator in node.decorators:
            target = decorator.decorator
            resolved = self.resolve(target.func if isinstance(target, cst.Call) else target) or ""
            if resolved in self.ctx.step_decorators:
                return STEP, self.ctx.step_decorators[resolved]
            if resolved in self.ctx.orchestration_decorators:
                kind, profile = ORCHESTRATION, self.ctx.orchestration_decorators[resolved]
            elif info is not None and info.profile is not None and resolved in info.profile.handler_decorators:
                kind, profile = ORCHESTRATION, info.profile
        if kind == PLAIN and info is not None and info.profile is not None:
            if node.name.value in info.profile.orchestration_methods:
                kind, profile = ORCHESTRATION, info.profile
        if kind == PLAIN and info is not None and info.interceptor is not None:
            kind, profile = ORCHESTRATION, info.interceptor
        if kind == PLAIN and info is None and not nested and node.name.value in self.registered:
            kind, profile = ORCHESTRATION, self.registered[node.name.value]
        return kind, profile

    def _function(self, node: cst.FunctionDef, prefix: str, info: _ClassInfo | None) -> None:
        nested = self.function is not None
        name = f"{prefix}{node.name.value}"
        for decorator in node.decorators:
            self.walk(decorator.decorator)
        kind, profile = self._function_role(node, info, nested)
        if kind == PLAIN and nested and self.function is not None and self.function.kind == STEP:
            kind = STEP
        scope: dict[str, Binding] = {}
        context_param = self._bind_parameters(node, scope, kind, profile, info)
        builder = _FunctionBuilder(name, kind, profile.name if profile else "", context_param, scope)
        if self.ctx.retry_decorators:
            builder.retried = any(
                self.resolve(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                in self.ctx.retry_decorators for d in node.decorators
            )
        outer_function, outer_scopes = self.function, self.scopes
        if nested:
            outer_scopes[-1][node.name.value] = ("q", f"{self.module}.{name}")
            self.scopes = [*outer_scopes, scope]
        else:
            self.scopes = [scope]
        self.function = builder
        self.functions.append(builder)
        try:
            self.walk(node.body)
        finally:
            self.function, self.scopes = outer_function, outer_scopes

    def _bind_parameters(
        self, node: cst.FunctionDef, scope: dict[str, Binding], kind: str, profile: FrameworkProfile | None,
        info: _ClassInfo | None,
    ) -> str:
        params = node.params
        ordered = [*params.posonly_params, *params.params]
        decorators = {self.resolve(d.decorator) for d in node.decorators}
        first_is_self = info is not None and "builtins.staticmethod" not in decorators
        context_param = ""
        for index, param in enumerate([*ordered, *params.kwonly_params]):
            name = param.name.value
            binding: Binding = _LOCAL
            if index == 0 and first_is_self and param in ordered:
                class_name = f"{self.module}.{info.name}"  # type: ignore[union-attr]
                binding = ("q", class_name) if "builtins.classmethod" in decorators else ("inst", class_name)
            elif param.annotation is not None:
                annotation = param.annotation.annotation
                if isinstance(annotation, cst.Subscript):
                    annotation = annotation.value
                resolved = self.resolve(annotation) if isinstance(annotation, (cst.Name, cst.Attribute)) else None
                context_profile = self.ctx.context_types.get(resolved or "")
                if context_profile is not None:
                    binding = ("inst", context_profile.context_class)
                    context_param = context_param or name
                elif resolved in _STR_TYPES:
                    binding = ("str", None)
                elif resolved in _SET_TYPES:
                    binding = ("set", None)
                elif resolved and not resolved.startswith("builtins."):
                    binding = ("inst", resolved)
            else:
                context_profile = None
                is_first = index == (1 if first_is_self else 0)
                if kind == ORCHESTRATION and profile is not None and profile.context_class and is_first:
                    context_profile = profile
                else:
                    for candidate in self.used_profiles:
                        if candidate.context_class and name in candidate.context_param_names:
                            context_profile = candidate
                            break
                if context_profile is not None:
                    binding = ("inst", context_profile.context_class)
                    context_param = context_param or name
            scope[name] = binding
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope[star.name.value] = _LOCAL
        return context_param

    # --- the walk ---------------------------------------------------------------------------

    def walk(self, node: cst.CSTNode) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
            return
        for name in _child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                self.walk(value)
            elif isinstance(value, (list, tuple)):
                for child in value:
                    if isinstance(child, cst.CSTNode):
                        self.walk(child)

    def _walk_all(self, nodes: Any) -> None:
        for node in nodes:
            self.walk(node)

    def _bind(self, target: cst.BaseExpression, binding: Binding) -> None:
        scope = self.scopes[-1] if self.scopes else None
        if isinstance(target, cst.Name):
            if scope is not None:
                scope[target.value] = binding
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, _LOCAL)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, _LOCAL)

    def _is_module_container(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name) and node.value in self.containers and self.function is not None:
            if all(node.value not in scope for scope in self.scopes):
                return node.value
        return None

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
        for name, qualname in self._import_bindings(node):
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
            container = self._is_module_container(target.value)
            if container is not None:
                self._global_write(target, container, "item assignment", _short_text(target))
            else:
                self._foreign_item_write(target, "__setitem__")
            if value is not None and self.ctx.key_rules and len(target.slice) == 1:
                index = target.slice[0].slice
                key = _string_value(index.value) if isinstance(index, cst.Index) else None
                if key is not None:
                    self._check_key(target, key, value, "item")
            return
        if isinstance(target, cst.Attribute):
            self.walk(target.value)
            self._class_attribute_write(target, value is None)
            return
        function = self.function
        if isinstance(target, cst.Name) and function is not None and target.value in function.declared_globals:
            how = "assignment" if value is not None else "augmented assignment"
            self._global_write(target, target.value, how, target.value)
            return
        if value is not None and self.scopes:
            binding = self._binding_for_value(value) if isinstance(target, cst.Name) else _LOCAL
            self._bind(target, binding)
            if binding[0] == "taint" and self.function is not None and isinstance(target, cst.Name):
                self.function.fresh_levels[target.value] = self.function.retry_loops
        elif isinstance(target, cst.Name) and self.scopes and value is None:
            # Augmented assignment to a local keeps it local; to a module container it is a write.
            container = self._is_module_container(target)
            if container is not None:
                self._global_write(target, container, "augmented assignment", container)

    def _on_del(self, node: cst.Del) -> None:
        self.walk(node.target)
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for element in targets:
            target = element.value if isinstance(element, cst.BaseElement) else element
            if isinstance(target, cst.Subscript):
                container = self._is_module_container(target.value)
                if container is not None:
                    self._global_write(target, container, "del", _short_text(target))
                else:
                    self._foreign_item_write(target, "__delitem__")

    def _foreign_item_write(self, target: cst.Subscript, method: str) -> None:
        """``CACHE[k] = v`` on a name imported from a project module: whether ``CACHE`` is a module-level
        container there is known only at resolution, so record it as a call to ``__setitem__``."""
        function = self.function
        if function is None or function.kind == STEP or not isinstance(target.value, (cst.Name, cst.Attribute)):
            return
        if isinstance(target.value, cst.Name) and any(target.value.value in scope for scope in self.scopes):
            return  # a local
        qualname = self.resolve(target.value)
        if qualname and not qualname.startswith(f"{self.module}.") and self._is_project_candidate(qualname):
            subject = f"{_dotted_text(target.value)}[...]"
            function.calls.append(_Pending(target, None, subject, f"{qualname}.{method}"))

    def _on_return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        self.walk(node.value)
        function = self.function
        if function is not None and not function.returns and self.kind_of(node.value) == "set":
            function.returns = "builtins.set"
        if function is not None and not function.returns and isinstance(node.value, (cst.Call, cst.Await, cst.Name)):
            binding = self._binding_for_value(node.value)
            if binding[0] == "inst" and binding[1]:
                function.returns = binding[1]
        # A returned listing hands its arbitrary order to the caller.
        if self.kind_of(node.value) == "listing":
            self._unordered(node.value, "listing", "returns")

    def _on_global(self, node: cst.Global) -> None:
        # Declaring a name global writes nothing; assigning it afterwards does (``_assign_target``).
        if self.function is None:
            return
        for item in node.names:
            self.function.declared_globals.add(item.name.value)

    def _class_attribute_write(self, target: cst.Attribute, augmented: bool) -> None:
        """``Stats.runs += 1`` / ``cls.seen = ...``: a class attribute is module state shared by every run.
        A class of another project module is recorded as a ``__setattr__`` call, decided at resolution."""
        function = self.function
        if function is None or function.kind == STEP or not isinstance(target.value, cst.Name):
            return
        binding = self.lookup(target.value.value)
        if binding is None or binding[0] != "q" or not binding[1]:
            return
        qualname = binding[1]
        how = "augmented assignment" if augmented else "assignment"
        if qualname.rpartition(".")[0] == self.module and qualname.rpartition(".")[2] in self.class_names:
            self._global_write(target, qualname.rpartition(".")[2], how, _short_text(target))
        elif not qualname.startswith(f"{self.module}.") and self._is_project_candidate(qualname):
            subject = f"{_short_text(target)} {'+=' if augmented else '='} ..."
            function.calls.append(_Pending(target, None, subject, f"{qualname}.__setattr__"))

    def _on_for(self, node: cst.For) -> None:
        self.walk(node.iter)
        source = self.kind_of(node.iter)
        if source in _UNORDERED:
            self._unordered(node.iter, source, "iterates")
        elif source is None:
            self._iterated_call(node.iter)
        self._bind(node.target, _LOCAL)
        retry = self._is_retry_loop(node)
        self._loop_body(node.body, retry)
        if node.orelse is not None:
            self.walk(node.orelse)

    def _iterated_call(self, node: cst.BaseExpression) -> None:
        """``for x in helper():`` where ``helper`` is a project function: whether it returns a set is
        known at resolution, so record the iteration as a call to ``helper.__iter__``."""
        function = self.function
        if function is None or function.kind == STEP or not isinstance(node, cst.Call):
            return
        qualname = self.resolve(node.func)
        if qualname and self._is_project_candidate(qualname):
            function.calls.append(_Pending(node, None, f"{_dotted_text(node.func)}()", f"{qualname}.__iter__"))

    def _on_while(self, node: cst.While) -> None:
        self.walk(node.test)
        self._loop_body(node.body, self._is_retry_loop(node))
        if node.orelse is not None:
            self.walk(node.orelse)

    def _loop_body(self, body: cst.BaseSuite, retry: bool) -> None:
        function = self.function
        if not retry or function is None:
            self.walk(body)
            return
        function.retry_loops += 1
        try:
            self.walk(body)
        finally:
            function.retry_loops -= 1

    def _is_retry_loop(self, node: cst.For | cst.While) -> bool:
        """A loop that re-sends on failure: ``while ...`` or ``for attempt in range(...)`` whose body
        catches an exception or breaks out on success. A loop over data (``for order in orders``) is not
        one: each item is its own request, and its key may rightly differ."""
        if not self.ctx.key_rules or self.function is None:
            return False
        if isinstance(node, cst.For):
            iterated = self.resolve(node.iter.func) if isinstance(node.iter, cst.Call) else None
            if iterated in self.ctx.retry_iterables:
                return True
            if iterated not in ("builtins.range", "itertools.count"):
                return False
        return _has_try_or_break(node.body)

    def _on_with(self, node: cst.With) -> None:
        for item in node.items:
            self.walk(item.item)
            if item.asname is not None:
                qualname = self.resolve(item.item)
                self._bind(item.asname.name, ("inst", qualname) if qualname else _LOCAL)
        self.walk(node.body)

    def _on_comprehension(self, node: cst.ListComp | cst.GeneratorExp | cst.SetComp | cst.DictComp) -> None:
        order_matters = isinstance(node, (cst.ListComp, cst.GeneratorExp)) and id(node) not in self.order_free
        scope_added = not self.scopes
        if scope_added:
            self.scopes = [{}]
        try:
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                self.walk(clause.iter)
                if order_matters:
                    source = self.kind_of(clause.iter)
                    if source in _UNORDERED:
                        self._unordered(clause.iter, source, "iterates")
                self._bind(clause.target, _LOCAL)
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
        if id(node) in self.step_lambdas:
            return
        scope: dict[str, Binding] = {}
        for param in node.params.params:
            scope[param.name.value] = _LOCAL
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
                self._effect(rule, node, _dotted_text(node), qualname or "")
                return
        self.walk(node.value)

    def _on_subscript(self, node: cst.Subscript) -> None:
        self.walk(node.value)
        for element in node.slice:
            self.walk(element.slice)
        # Looking a key up in a dict is order-free; indexing a listing takes an arbitrary entry.
        if self.kind_of(node.value) == "listing":
            self._unordered(node.value, "listing", "indexes")

    def _on_starred(self, node: cst.StarredElement) -> None:
        self.walk(node.value)
        source = self.kind_of(node.value)
        if source in _UNORDERED:
            self._unordered(node.value, source, "unpacks")

    def _on_dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.walk(element.key)
                self.walk(element.value)
                if self.ctx.key_rules:
                    key = _string_value(element.key)
                    if key is not None:
                        self._check_key(element, key, element.value, "dict key")
            else:
                self.walk(element.value)

    def _on_call(self, node: cst.Call) -> None:
        func = node.func
        qualname = self.resolve(func)
        step_call = qualname is not None and qualname in self.ctx.step_calls
        self.walk(func)
        order_free = qualname in _ORDER_FREE
        for arg in node.args:
            value = arg.value
            if step_call and isinstance(value, cst.Lambda):
                continue  # its body runs as a recorded step
            if step_call and isinstance(value, (cst.Name, cst.Attribute)):
                target = self.resolve(value)
                if target and self._is_project_candidate(target):
                    self.step_targets.add(target)
            if order_free and isinstance(value, (cst.GeneratorExp, cst.ListComp)):
                self.order_free.add(id(value))
            if arg.star == "*":
                self.walk(value)
                source = self.kind_of(value)
                if source in _UNORDERED:
                    self._unordered(value, source, "unpacks")
            else:
                self.walk(value)
            if arg.keyword is not None and self.ctx.key_rules:
                self._check_key(arg, arg.keyword.value, value, "keyword")
        self._order_sinks(node, func, qualname)
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            container = self._is_module_container(func.value)
            if container is not None:
                self._global_write(node, container, f"{func.attr.value}()", _short_text(node))
        if qualname is None:
            return
        subject = f"{_dotted_text(func)}()"
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
        if not matched and self._is_project_candidate(qualname):
            function = self.function
            # Steps' calls too: a helper a step calls is part of the retried unit (idempotency keys).
            if function is not None:
                given = tuple(
                    "#*" if arg.star else arg.keyword.value if arg.keyword is not None else "" for arg in node.args
                )
                positional = sum(1 for g in given if g == "")
                given = (f"#{positional}", *sorted({g for g in given if g}))
                function.calls.append(_Pending(node, None, subject, qualname, given=given))

    def _order_sinks(self, node: cst.Call, func: cst.BaseExpression, qualname: str | None) -> None:
        if not node.args:
            if isinstance(func, cst.Attribute) and func.attr.value == "pop" and self.kind_of(func.value) == "set":
                self._unordered(func.value, "set", "pops from")
            return
        first = node.args[0].value
        how = _LISTING_SINKS.get(qualname or "")
        if how is None and isinstance(func, cst.Attribute) and func.attr.value == "join":
            how = "joins"
        if how is None and qualname in ("builtins.min", "builtins.max") and len(node.args) > 1:
            # With a key, ties go to whichever element is iterated first.
            if any(arg.keyword is not None and arg.keyword.value == "key" for arg in node.args):
                how = "picks by key from"
        if how is not None:
            source = self.kind_of(first)
            if source in _UNORDERED:
                self._unordered(first, source, how)

    def _is_project_candidate(self, qualname: str) -> bool:
        if qualname.startswith(self.module + ".") or (self.package and qualname.startswith(self.package + ".")):
            return True
        return qualname.split(".", 1)[0] not in self.ctx.external_roots

    # --- recording --------------------------------------------------------------------------

    def _effect(
        self, rule: Rule, node: cst.CSTNode, subject: str, qualname: str, *,
        frameworks: tuple[str, ...] = (), args: tuple[cst.Arg, ...] = (),
    ) -> None:
        function = self.function
        if function is None or function.kind == STEP:
            return
        if qualname not in self.ctx.fix_names:
            args = ()
        function.effects.append(_Pending(node, rule, subject, qualname, frameworks, args))

    def _unordered(self, node: cst.CSTNode, source: str, how: str) -> None:
        if self.function is None or self.function.kind == STEP:
            return
        use = UnorderedUse(node, source, how, _short_text(node))
        origin = self.resolve(node.func) if isinstance(node, cst.Call) else None
        if origin is None or not (origin in _LISTING_CALLS or origin in _SET_ORIGINS):
            origin = _DEFAULT_ORIGINS[source]
        for rule in self.ctx.unordered_rules:
            description = rule.check_unordered(use)
            if description is not None:
                self._effect(rule, node, description, origin)
                return

    def _global_write(self, node: cst.CSTNode, name: str, how: str, text: str) -> None:
        write = GlobalWrite(node, name, how, text)
        qualname = f"{self.module}.{name}" + (f".{how[:-2]}" if how.endswith("()") else "")
        for rule in self.ctx.global_rules:
            description = rule.check_global_write(write)
            if description is not None:
                self._effect(rule, node, description, qualname)
                return

    def _check_key(self, node: cst.CSTNode, key: str, value: cst.BaseExpression, how: str) -> None:
        """A key is fresh per attempt only when it is made in the unit that is retried together with the
        request using it: a step's body, a retry-decorated function, a retry loop (decided here), or a
        helper of a step (decided at resolution: the function's ``keys``)."""
        function = self.function
        if function is None or function.kind == ORCHESTRATION or not self.ctx.wants_key(key, how):
            return
        fresh = self._fresh_value(value)
        if fresh is None:
            return
        source, level = fresh
        if function.kind == STEP:
            unit = f"step {function.name}"
        elif function.retried:
            unit = f"retried function {function.name}"
        elif function.retry_loops and level:
            unit = f"a retry loop in {function.name}"
        else:
            unit = ""
        use = KeyUse(node, key, source, unit)
        for rule in self.ctx.key_rules:
            if rule.check_key(use) is not None:
                pending = _Pending(node, rule, key, source, unit=unit)
                (self.findings if unit else function.keys).append(pending)
                return

    def _fresh_value(self, node: cst.BaseExpression) -> tuple[str, int] | None:
        """How a value comes to differ per attempt, and how many retry loops enclosed where it was made."""
        function = self.function
        assert function is not None
        level = function.retry_loops
        for name in _names_in(node):
            # Only the function's own locals: a value made once at import is not made per attempt.
            binding = next((scope[name] for scope in reversed(self.scopes) if name in scope), None)
            if binding is not None and binding[0] == "taint":
                return binding[1], function.fresh_levels.get(name, 0)
        source = self._fresh_call(node)
        return (source, level) if source is not None else None

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
            for pending in function.keys:
                wanted.add(id(pending.node))
        spans = node_spans(tree, wanted) if wanted else {}

        def span(pending: _Pending) -> Span:
            (line, column), (end_line, end_column) = spans.get(id(pending.node), ((1, 0), (1, 0)))
            return Span(line, column + 1, end_line, end_column + 1)

        def effect(pending: _Pending, direct: bool = True) -> Effect:
            assert pending.rule is not None
            args = ", ".join(_arg_text(tree, arg) for arg in pending.args) if direct else ""
            return Effect(pending.rule.code, pending.rule.category, pending.subject, pending.qualname, span(pending),
                          pending.frameworks, args, pending.unless_given, pending.unit)

        functions = {}
        for function in self.functions:
            functions[function.name] = FunctionSummary(
                function.name, function.kind, function.framework, function.context_param,
                tuple(effect(p, function.kind == ORCHESTRATION) for p in function.effects),
                tuple(CallSite(p.qualname, span(p), p.subject, p.given) for p in function.calls),
                tuple(effect(p) for p in function.keys), function.retried, function.returns,
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
    cst.Return: ModuleCollector._on_return,
    cst.For: ModuleCollector._on_for,
    cst.While: ModuleCollector._on_while,
    cst.With: ModuleCollector._on_with,
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


# --- helpers ------------------------------------------------------------------------------------


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    if isinstance(node, cst.Call):
        yield node
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        children = value if isinstance(value, (list, tuple)) else (value,)
        for child in children:
            if isinstance(child, cst.CSTNode):
                yield from _calls_in(child)


def _names_in(node: cst.CSTNode) -> Iterator[str]:
    if isinstance(node, cst.Name):
        yield node.value
        return
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        children = value if isinstance(value, (list, tuple)) else (value,)
        for child in children:
            if isinstance(child, cst.CSTNode):
                yield from _names_in(child)


def _has_try_or_break(body: cst.BaseSuite) -> bool:
    """Whether a loop body (not counting nested loops and functions) has a ``try`` or a ``break``."""
    statements: list[cst.CSTNode] = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
    while statements:
        statement = statements.pop()
        if isinstance(statement, (cst.Try, cst.TryStar)):
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(small, cst.Break) for small in statement.body):
                return True
        elif isinstance(statement, cst.SimpleStatementSuite):
            if any(isinstance(small, cst.Break) for small in statement.body):
                return True
        elif isinstance(statement, (cst.If, cst.With)):
            statements.extend(statement.body.body if isinstance(statement.body, cst.IndentedBlock) else [])
            orelse = getattr(statement, "orelse", None)
            while orelse is not None:
                if isinstance(orelse.body, cst.IndentedBlock):
                    statements.extend(orelse.body.body)
                orelse = getattr(orelse, "orelse", None)
    return False


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr.value}"
    return ""


def _dotted_text(node: cst.BaseExpression) -> str:
    """How the source spells a callee, compactly: ``client.chat.completions.create``, ``OpenAI().x``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted_text(node.value)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return f"{_dotted_text(node.func)}()"
    if isinstance(node, cst.Subscript):
        return f"{_dotted_text(node.value)}[...]"
    if isinstance(node, cst.Await):
        return _dotted_text(node.expression)
    return "(...)"


def _short_text(node: cst.CSTNode) -> str:
    text = cst.Module([]).code_for_node(node).strip()
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _arg_text(tree: cst.Module, arg: cst.Arg) -> str:
    value = tree.code_for_node(arg.value)
    if arg.keyword is not None:
        return f"{arg.keyword.value}={value}"
    return f"{arg.star}{value}"


def _string_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # a malformed literal is simply not a key
            return None
        return value if isinstance(value, str) else None
    return None
