"""Framework roles, read from the profiles: which classes and functions are orchestration code, which
are steps, which parameter is the framework's context object — from decorators, base classes,
registration calls (``X = workflow.defn(X)``), method names a profile lists, and annotations.

``FrameworkRoles`` is a part of ``ModuleCollector``; no framework is named here, only profile fields.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from replaytest.lint.context import LintContext
from replaytest.lint.facts import LOCAL, Binding, FunctionBuilder
from replaytest.lint.model import ORCHESTRATION, PLAIN, STEP
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.values import SET_TYPES, STR_TYPES
from replaytest.records import Record


class ClassInfo(Record):
    """A class of the module being walked: whose orchestration class it is, if any."""

    name: str  # qualified within the module
    profile: FrameworkProfile | None  # orchestration class of this framework
    interceptor: FrameworkProfile | None  # every method is orchestration

    def __init__(self, name: str, profile: FrameworkProfile | None, interceptor: FrameworkProfile | None) -> None:
        self.name = name
        self.profile = profile
        self.interceptor = interceptor


class FrameworkRoles:
    ctx: LintContext
    module: str
    function: FunctionBuilder | None
    # Module-level names a registration call made orchestration code, with the framework.
    registered: dict[str, FrameworkProfile]
    # The profiles whose framework the module imports.
    used_profiles: list[FrameworkProfile]

    if TYPE_CHECKING:  # provided by NameResolver
        def resolve(self, node: ast.AST) -> str | None: ...
        def annotated_type(self, annotation: ast.AST) -> str | None: ...
        def is_project_candidate(self, qualname: str) -> bool: ...

    def prescan_registration(self, value: ast.AST) -> None:
        """``X = workflow.defn(X)``, ``workflow.defn(name="x")(X)``, ``df.Orchestrator.create(fn)``."""
        if not isinstance(value, ast.Call):
            return
        func = value.func
        profile = self.ctx.registration_calls.get(self.resolve(func) or "")
        if profile is None and isinstance(func, ast.Call):
            profile = self.ctx.registration_calls.get(self.resolve(func.func) or "")
        if profile is None:
            return
        for arg in value.args:
            candidate = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(candidate, ast.Name):
                self.registered[candidate.id] = profile
                break

    def class_info(self, node: ast.ClassDef, name: str, nested: bool, bases: list[str]) -> ClassInfo:
        """The framework role of a class: an orchestration class (decorator or registration) or an
        interceptor (a base class whose every method is orchestration code)."""
        profile = self.registered.get(node.name) if not nested else None
        for target in node.decorator_list:
            resolved = self.resolve(target.func if isinstance(target, ast.Call) else target)
            profile = profile or self.ctx.class_decorators.get(resolved or "")
        interceptor = None
        for base in bases:
            interceptor = interceptor or self.ctx.base_classes.get(base)
        return ClassInfo(name, profile, interceptor)

    def function_role(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, info: ClassInfo | None, nested: bool
    ) -> tuple[str, FrameworkProfile | None]:
        kind, profile = PLAIN, None
        for target in node.decorator_list:
            resolved = self.resolve(target.func if isinstance(target, ast.Call) else target) or ""
            if resolved in self.ctx.step_decorators:
                return STEP, self.ctx.step_decorators[resolved]
            if resolved in self.ctx.orchestration_decorators:
                kind, profile = ORCHESTRATION, self.ctx.orchestration_decorators[resolved]
            elif info is not None and info.profile is not None and resolved in info.profile.handler_decorators:
                kind, profile = ORCHESTRATION, info.profile
            elif resolved and self.is_project_candidate(resolved):
                app_role = self._app_method_role(resolved)
                if app_role is not None and app_role[0] == STEP:
                    return app_role
                if app_role is not None:
                    kind, profile = app_role
        if kind == PLAIN and info is not None and info.profile is not None:
            if node.name in info.profile.orchestration_methods:
                kind, profile = ORCHESTRATION, info.profile
        if kind == PLAIN and info is not None and info.interceptor is not None:
            kind, profile = ORCHESTRATION, info.interceptor
        if kind == PLAIN and info is None and not nested and node.name in self.registered:
            kind, profile = ORCHESTRATION, self.registered[node.name]
        # A function defined inside a step runs inside the step.
        if kind == PLAIN and nested and self.function is not None and self.function.kind == STEP:
            kind = STEP
        return kind, profile

    def _app_method_role(self, resolved: str) -> tuple[str, FrameworkProfile] | None:
        """``@bp.orchestration_trigger(...)`` where ``bp`` is a project name (a ``df.Blueprint()`` made in the
        package's ``__init__`` and imported with ``from . import bp``): the method of a framework's app object,
        recognised by its name in a module that imports that framework."""
        method = resolved.rpartition(".")[2]
        for kind, profile in self.ctx.app_method_decorators.get(method, ()):
            if profile in self.used_profiles:
                return kind, profile
        return None

    def is_query_handler(self, node: ast.FunctionDef | ast.AsyncFunctionDef, info: ClassInfo | None) -> bool:
        """Whether a handler method carries one of its framework's ``query_decorators``."""
        if info is None or info.profile is None or not info.profile.query_decorators:
            return False
        for target in node.decorator_list:
            if (self.resolve(target.func if isinstance(target, ast.Call) else target) or "") in info.profile.query_decorators:
                return True
        return False

    def bind_parameters(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: dict[str, Binding], kind: str,
        profile: FrameworkProfile | None,
        info: ClassInfo | None,
    ) -> str:
        """Bind the parameters in ``scope`` (``self``, annotated types, the framework's context object)
        and return the name of the context parameter ("" when there is none)."""
        params = node.args
        ordered = [*params.posonlyargs, *params.args]
        decorators = {self.resolve(d) for d in node.decorator_list}
        first_is_self = info is not None and "builtins.staticmethod" not in decorators
        context_param = ""
        for index, param in enumerate([*ordered, *params.kwonlyargs]):
            name = param.arg
            binding: Binding = LOCAL
            if index == 0 and first_is_self and ordered:
                class_name = f"{self.module}.{info.name}"  # type: ignore[union-attr]
                binding = ("q", class_name) if "builtins.classmethod" in decorators else ("inst", class_name)
            elif param.annotation is not None:
                resolved = self.annotated_type(param.annotation)
                context_profile = self.ctx.context_types.get(resolved or "")
                if context_profile is not None:
                    binding = ("inst", context_profile.context_class)
                    context_param = context_param or name
                elif resolved in STR_TYPES:
                    binding = ("str", None)
                elif resolved in SET_TYPES:
                    binding = ("set", None)
                elif resolved and not resolved.startswith("builtins."):
                    binding = ("inst", resolved)
            else:
                context_profile = None
                at_context_position = profile is not None and index == (1 if first_is_self else 0) + profile.context_param_position
                if kind == ORCHESTRATION and profile is not None and profile.context_class and at_context_position:
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
        for star in (params.vararg, params.kwarg):
            if star is not None:
                scope[star.arg] = LOCAL
        return context_param
