"""Applying fixes: rewrite flagged calls into the framework's replacement, preserving formatting.

Only files with an applicable fix are re-parsed (with positions) and rewritten; a call is replaced
when its position matches the diagnostic exactly, and the import the replacement needs is added after
the module's last top-level import when the module does not bind that name yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from replaytest.lint.model import Diagnostic


@dataclass(frozen=True)
class AppliedFix:
    diagnostic: Diagnostic
    original: str
    replacement: str


def applicable(diagnostics: Sequence[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    return [d for d in diagnostics if d.fix is not None and (d.fix.safe or unsafe) and not d.trace]


def apply_fixes(diagnostics: Sequence[Diagnostic], *, unsafe: bool, cwd: Path) -> list[AppliedFix]:
    """Rewrite the files of the applicable diagnostics; returns what changed, file by file in order."""
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diagnostic in applicable(diagnostics, unsafe):
        by_file[diagnostic.path].append(diagnostic)
    applied: list[AppliedFix] = []
    for display, items in sorted(by_file.items()):
        path = cwd / display
        try:
            source = path.read_bytes()
            module = cst.parse_module(source)
        except (OSError, cst.ParserSyntaxError, SyntaxError, UnicodeDecodeError):
            continue
        rewriter = _CallRewriter({(d.line, d.column, d.end_line, d.end_column): d for d in items}, module)
        new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter)
        if not rewriter.applied:
            continue
        imports = {d.fix.import_from for d, _, _ in rewriter.applied if d.fix and d.fix.import_from}
        for import_from in sorted(imports):
            new_module = _ensure_import(new_module, import_from)
        path.write_bytes(new_module.bytes)
        applied.extend(AppliedFix(d, before, after) for d, before, after in rewriter.applied)
    return applied


class _CallRewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wanted: dict[tuple[int, int, int, int], Diagnostic], module: cst.Module) -> None:
        super().__init__()
        self.wanted = wanted
        self.module = module
        self.applied: list[tuple[Diagnostic, str, str]] = []

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        position = self.get_metadata(PositionProvider, original)
        key = (position.start.line, position.start.column + 1, position.end.line, position.end.column + 1)
        diagnostic = self.wanted.get(key)
        if diagnostic is None or diagnostic.fix is None:
            return updated
        if not updated.deep_equals(original):
            return updated  # a call inside it was rewritten; its replacement text is stale (the next run fixes it)
        try:
            replacement = cst.parse_expression(diagnostic.fix.replacement)
        except cst.ParserSyntaxError:
            return updated
        self.applied.append((diagnostic, self.module.code_for_node(original), diagnostic.fix.replacement))
        return replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else replacement


def _binds(module: cst.Module, import_from: tuple[str, str]) -> bool:
    source_module, name = import_from
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if source_module and isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                if small.module is not None and module.code_for_node(small.module) == source_module:
                    if any(alias.asname is None and module.code_for_node(alias.name) == name for alias in small.names):
                        return True
            elif not source_module and isinstance(small, cst.Import):
                if any(alias.asname is None and module.code_for_node(alias.name) == name for alias in small.names):
                    return True
    return False


def _ensure_import(module: cst.Module, import_from: tuple[str, str]) -> cst.Module:
    if _binds(module, import_from):
        return module
    source_module, name = import_from
    text = f"from {source_module} import {name}\n" if source_module else f"import {name}\n"
    statement = cst.parse_statement(text)
    body = list(module.body)
    insert_at = 0
    for index, existing in enumerate(body):
        if isinstance(existing, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in existing.body
        ):
            insert_at = index + 1
        elif index == 0 and isinstance(existing, cst.SimpleStatementLine) and isinstance(existing.body[0], cst.Expr) \
                and isinstance(existing.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            insert_at = 1  # after the module docstring
    body.insert(insert_at, statement)
    return module.with_changes(body=body)
