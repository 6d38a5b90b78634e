"""The imports a guard's old branch needs back: when a change replaced ``pre_activity`` by ``post_activity``
it usually replaced the import too, so the old code the guard keeps would fail with ``NameError`` on every
recorded run. ``carry_imports`` finds the names the guarded module uses but no longer binds, looks them up
among the module-level imports the file had at the base revision, and adds those imports back: into an
import from the same module when the file still has one, else beside where the base file had it (inside
the same ``with workflow.unsafe.imports_passed_through():`` block when the file still has that block)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, ScopeProvider

Importing = cst.Import | cst.ImportFrom


def carry_imports(guarded: cst.Module, base: cst.Module | None) -> cst.Module:
    """``guarded`` with the base revision's imports of every name it uses and does not bind."""
    if base is None:
        return guarded
    missing = unbound_names(guarded)
    if not missing:
        return guarded
    for name in sorted(missing):
        found = _base_import_of(base, name)
        if found is not None:
            guarded = _add_import(guarded, *found)
    return guarded


def unbound_names(module: cst.Module) -> set[str]:
    """Names the module reads that nothing in it (nor the builtins) binds."""
    scopes = MetadataWrapper(module).resolve(ScopeProvider)
    missing: set[str] = set()
    for scope in {scope for scope in scopes.values() if scope is not None}:
        for access in scope.accesses:
            if not access.referents and isinstance(access.node, cst.Name):
                missing.add(access.node.value)
    return missing


def _module_imports(body: Sequence[cst.CSTNode], within: cst.With | None = None) -> Iterator[tuple[Importing, cst.With | None]]:
    """Module-level imports (also those nested in module-level ``with``/``if``/``try`` blocks; never those in
    functions or classes), each with the top-level ``with`` statement holding it, if any."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield small, within
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(statement, cst.BaseCompoundStatement):
            holder = within if within is not None else (statement if isinstance(statement, cst.With) else None)
            for suite in _suites(statement):
                yield from _module_imports(suite, holder)


def _suites(statement: cst.BaseCompoundStatement) -> Iterator[Sequence[cst.CSTNode]]:
    for child in statement.children:
        if isinstance(child, cst.IndentedBlock):
            yield child.body
        elif isinstance(child, cst.BaseCompoundStatement) or isinstance(child, (cst.Else, cst.ExceptHandler, cst.Finally)):
            for inner in child.children:
                if isinstance(inner, cst.IndentedBlock):
                    yield inner.body


def _bound_name(statement: Importing, alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None:
        target = alias.asname.name
        return target.value if isinstance(target, cst.Name) else None
    if isinstance(statement, cst.Import):
        # ``import a.b`` binds ``a``.
        return cst.Module([]).code_for_node(alias.name).split(".")[0]
    return alias.name.value if isinstance(alias.name, cst.Name) else None


def _base_import_of(base: cst.Module, name: str) -> tuple[Importing, cst.ImportAlias, cst.With | None] | None:
    for statement, holder in _module_imports(base.body):
        if isinstance(statement.names, cst.ImportStar):
            continue
        for alias in statement.names:
            if _bound_name(statement, alias) == name:
                return statement, alias, holder
    return None


def _from_key(module: cst.Module, statement: cst.ImportFrom) -> tuple[int, str]:
    return len(statement.relative), "" if statement.module is None else module.code_for_node(statement.module)


class _ExtendImportFrom(cst.CSTTransformer):
    """Adds ``alias`` to the first ``from <same module> import …`` of the module (not a star import)."""

    def __init__(self, module: cst.Module, key: tuple[int, str], alias: cst.ImportAlias) -> None:
        self.module, self.key, self.alias, self.done = module, key, alias, False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        if self.done or isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        if _from_key(self.module, original_node) != self.key:
            return updated_node
        self.done = True
        names = list(updated_node.names)
        last = names[-1]
        trailing = last.comma
        names[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        names.append(self.alias.with_changes(comma=trailing))
        return updated_node.with_changes(names=names)


def _add_import(guarded: cst.Module, statement: Importing, alias: cst.ImportAlias, holder: cst.With | None) -> cst.Module:
    single = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if isinstance(statement, cst.ImportFrom):
        extend = _ExtendImportFrom(guarded, _from_key_in(statement), single)
        extended = guarded.visit(extend)
        if extend.done:
            return extended
        line = cst.SimpleStatementLine([statement.with_changes(names=[single], lpar=None, rpar=None)])
    else:
        line = cst.SimpleStatementLine([statement.with_changes(names=[single])])
    body = list(guarded.body)
    if holder is not None:
        for index, top in enumerate(body):
            if isinstance(top, cst.With) and isinstance(top.body, cst.IndentedBlock) and _same_header(guarded, top, holder):
                body[index] = top.with_changes(body=top.body.with_changes(body=[*top.body.body, line]))
                return guarded.with_changes(body=body)
    last_import = max((i for i, top in enumerate(body) if _is_import_line(top)), default=-1)
    body.insert(last_import + 1, line)
    return guarded.with_changes(body=body)


def _from_key_in(statement: cst.ImportFrom) -> tuple[int, str]:
    return _from_key(cst.Module([]), statement)


def _same_header(module: cst.Module, a: cst.With, b: cst.With) -> bool:
    return [module.code_for_node(item).strip() for item in a.items] == [
        cst.Module([]).code_for_node(item).strip() for item in b.items
    ]


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )
