"""Field default factories: ``created: datetime = field(default_factory=datetime.now)`` calls the factory
whenever the (dataclass, attrs or pydantic) class is instantiated without that field. They are recorded
as effects of the generated ``__init__``, so constructing the class in orchestration code reaches them
unless the call passes the field (``Effect.unless_given``).

``FieldFactories`` is a part of ``ModuleCollector``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from replaytest.lint.context import LintContext
from replaytest.lint.facts import FunctionBuilder, Pending
from replaytest.lint.model import PLAIN
from replaytest.lint.rule import Rule
from replaytest.lint.syntax import calls_in, dotted_text, is_true

_FIELD_CALLS = frozenset({"dataclasses.field", "attr.ib", "attr.field", "attrs.field", "pydantic.Field",
                          "pydantic.fields.Field"})


class FieldFactories:
    ctx: LintContext
    functions: list[FunctionBuilder]

    if TYPE_CHECKING:  # provided by NameResolver
        def resolve(self, node: ast.AST) -> str | None: ...
        def is_project_candidate(self, qualname: str) -> bool: ...

    def field_factories(self, node: ast.ClassDef, name: str) -> None:
        """Record the effects of a class's field factories on its generated ``name.__init__``."""
        builder: FunctionBuilder | None = None
        position = 0
        for small in node.body:
            if not (isinstance(small, ast.AnnAssign) and isinstance(small.target, ast.Name)):
                continue
            field_name, position = small.target.id, position + 1
            value = small.value
            if not isinstance(value, ast.Call) or self.resolve(value.func) not in _FIELD_CALLS:
                continue
            keyword_only = any(k.arg == "kw_only" and is_true(k.value) for k in value.keywords)
            for keyword in value.keywords:
                if keyword.arg not in ("default_factory", "factory"):
                    continue
                factory = keyword.value
                found = self._factory_effect(factory)
                helper = self._project_factory(factory) if found is None else None
                if found is None and helper is None:
                    continue
                if builder is None:
                    builder = FunctionBuilder(f"{name}.__init__", PLAIN, "", "", {})
                    self.functions.append(builder)
                spec = f"{field_name}:{-1 if keyword_only else position - 1}"
                if found is not None:
                    rule, subject, qualname = found
                    builder.effects.append(Pending(factory, rule, subject, qualname, unless_given=spec))
                elif helper is not None:
                    # ``default_factory=new_id`` where ``new_id`` is a project function: what it
                    # reaches is known at resolution.
                    builder.calls.append(Pending(factory, None, f"{dotted_text(factory)}()", helper,
                                                 unless_given=spec))

    def _project_factory(self, factory: ast.AST) -> str | None:
        if not isinstance(factory, (ast.Name, ast.Attribute)):
            return None
        qualname = self.resolve(factory)
        return qualname if qualname and self.is_project_candidate(qualname) else None

    def _factory_effect(self, factory: ast.AST) -> tuple[Rule, str, str] | None:
        """The rule a default factory falls under: a function named directly, or a call in a lambda."""
        if isinstance(factory, (ast.Name, ast.Attribute)):
            qualname = self.resolve(factory)
            rule = self.ctx.match_call(qualname) if qualname else None
            return (rule, f"{dotted_text(factory)}()", qualname) if rule is not None and qualname else None
        if isinstance(factory, ast.Lambda):
            for call in calls_in(factory.body):
                qualname = self.resolve(call.func)
                rule = self.ctx.match_call(qualname) if qualname else None
                if rule is not None and qualname:
                    return rule, f"{dotted_text(call.func)}()", qualname
        return None
