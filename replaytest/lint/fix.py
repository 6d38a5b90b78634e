"""Applying fixes: rewrite flagged calls into the framework's replacement, preserving formatting.

Only files with an applicable fix are re-parsed (with positions) and rewritten; a call is replaced
when its position matches the diagnostic exactly, and the import the replacement needs is added after
the module's last top-level import when the module does not bind that name yet. An import that only
the replaced calls used (``from datetime import datetime`` after ``datetime.now()`` became
``workflow.now()``) is removed.

A file is written only when all of this holds, else it is left untouched and the reason reported:
its bytes are the ones the lint run read (an editor may have saved it since: the positions would point
at other code); every replacement still means the same at its call (``fix_scope``: no ``await``
outside ``async def``, no shadowed name); the running Python compiles the file before and after the
rewrite; the file is writable. Writing is atomic (a temporary file beside it, its mode copied, then
``os.replace``), after checking once more that nobody changed the file meanwhile.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from replaytest.lint.fix_scope import FixSites
from replaytest.lint.model import Diagnostic
from replaytest.lint.parse_guard import screen_source


@dataclass(frozen=True)
class AppliedFix:
    diagnostic: Diagnostic
    original: str
    replacement: str


@dataclass(frozen=True)
class SkippedFix:
    """A fix not applied: the file (display path), why, and the finding when it concerns one call."""

    path: str
    reason: str
    diagnostic: Diagnostic | None = None


@dataclass
class FixOutcome:
    applied: list[AppliedFix] = field(default_factory=list)
    skipped: list[SkippedFix] = field(default_factory=list)
    # display path -> (text before, text after) of every file rewritten (or, in a dry run, to be rewritten)
    changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    # display path -> the bytes written (or, in a dry run, that would be): the encoding kept as it was
    new_bytes: dict[str, bytes] = field(default_factory=dict)


def applicable(diagnostics: Sequence[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    return [d for d in diagnostics if d.fix is not None and (d.fix.safe or unsafe) and not d.trace]


def apply_fixes(diagnostics: Sequence[Diagnostic], *, unsafe: bool, cwd: Path) -> list[AppliedFix]:
    """Rewrite the files of the applicable diagnostics; returns what changed, file by file in order."""
    return fix_files(diagnostics, unsafe=unsafe, cwd=cwd).applied


def fix_files(
    diagnostics: Sequence[Diagnostic], *, unsafe: bool, cwd: Path, digests: Mapping[str, str] | None = None,
    write: bool = True, sources: Mapping[str, bytes] | None = None,
) -> FixOutcome:
    """Fix every file with applicable diagnostics. ``digests`` (display path -> sha256 of the bytes the
    lint run read) guards against files changed since; ``write=False`` computes the changes only (the new
    bytes in ``FixOutcome.new_bytes``). ``sources`` (display path -> bytes) are files whose text is not on
    disk (read from stdin): fixed from those bytes, never read nor written."""
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diagnostic in applicable(diagnostics, unsafe):
        by_file[diagnostic.path].append(diagnostic)
    outcome = FixOutcome()
    for display, items in sorted(by_file.items()):
        given = (sources or {}).get(display)
        _fix_one(cwd / display, display, items, (digests or {}).get(display), write and given is None, outcome,
                 given)
    return outcome


def _fix_one(
    path: Path, display: str, items: list[Diagnostic], digest: str | None, write: bool, outcome: FixOutcome,
    given: bytes | None = None,
) -> None:
    def skip(reason: str, diagnostic: Diagnostic | None = None) -> None:
        outcome.skipped.append(SkippedFix(display, reason, diagnostic))

    try:
        source = path.read_bytes() if given is None else given
    except OSError as error:
        return skip(f"cannot be read: {error.strerror or error}")
    if digest is not None and hashlib.sha256(source).hexdigest() != digest:
        return skip("changed since it was linted; run the fix again")
    if screen_source(source, str(path)).risky:
        # libcst's native parser may crash on, or take minutes over, a long deeply nested statement
        # that CPython accepts (parse_guard): never hand it such a file.
        return skip("not rewritten: a statement is nested too deeply for the rewriting parser")
    try:
        compile(source, str(path), "exec", dont_inherit=True)
        sites = FixSites(source)
        module = cst.parse_module(source)
    except (SyntaxError, ValueError, cst.ParserSyntaxError, RecursionError, MemoryError) as error:
        return skip(f"not rewritten: this Python cannot compile it ({type(error).__name__})")
    wanted: dict[tuple[int, int, int, int], Diagnostic] = {}
    for diagnostic in items:
        assert diagnostic.fix is not None
        problem = sites.problem(diagnostic.line, diagnostic.column, diagnostic.fix)
        if problem is not None:
            skip(problem, diagnostic)
            continue
        wanted[(diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column)] = diagnostic
    if not wanted:
        return None
    rewriter = _CallRewriter(wanted, module)
    new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter)
    if not rewriter.applied:
        return None
    imports = {d.fix.import_from for d, _, _ in rewriter.applied if d.fix and d.fix.import_from}
    for import_from in sorted(imports):
        if not sites.module_binds(import_from):
            new_module = _add_import(new_module, import_from)
    new_module = _remove_unused_imports(new_module, rewriter.heads)
    new_source = new_module.bytes
    try:
        compile(new_source, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return skip(f"not rewritten: the fixed file would not compile ({error})")
    if write:
        problem = _write_atomically(path, source, new_source)
        if problem is not None:
            return skip(problem)
    encoding = module.encoding
    outcome.changes[display] = (source.decode(encoding, "replace"), new_source.decode(encoding, "replace"))
    outcome.new_bytes[display] = new_source
    outcome.applied.extend(AppliedFix(d, before, after) for d, before, after in rewriter.applied)
    return None


def _write_atomically(path: Path, expected: bytes, data: bytes) -> str | None:
    """Replace ``path`` by ``data`` if it still holds ``expected``; keep its mode. None when written."""
    mode = path.stat().st_mode & 0o7777
    # A file without write permission is read-only on purpose, also for a user (root) who could write it.
    if not os.access(path, os.W_OK) or not mode & 0o222:
        return "not rewritten: the file is read-only"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".replaytest-fix")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        if path.read_bytes() != expected:  # saved by someone else while we worked
            os.unlink(temporary)
            return "changed while it was being fixed; run the fix again"
        os.replace(temporary, path)
    except OSError as error:
        if os.path.exists(temporary):
            os.unlink(temporary)
        return f"not rewritten: {error.strerror or error}"
    return None


class _CallRewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wanted: dict[tuple[int, int, int, int], Diagnostic], module: cst.Module) -> None:
        super().__init__()
        self.wanted = wanted
        self.module = module
        self.applied: list[tuple[Diagnostic, str, str]] = []
        self.heads: set[str] = set()  # first names of the replaced calls (``datetime`` of datetime.now())

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
        head = original.func
        while isinstance(head, cst.Attribute):
            head = head.value
        if isinstance(head, cst.Name):
            self.heads.add(head.value)
        self.applied.append((diagnostic, self.module.code_for_node(original), diagnostic.fix.replacement))
        return replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else replacement


def _add_import(module: cst.Module, import_from: tuple[str, str]) -> cst.Module:
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
        elif isinstance(existing, cst.SimpleStatementLine) and _is_future_import(existing):
            insert_at = index + 1
    body.insert(insert_at, statement)
    return module.with_changes(body=body)


def _is_future_import(statement: cst.SimpleStatementLine) -> bool:
    return any(
        isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
        for small in statement.body
    )


def _remove_unused_imports(module: cst.Module, candidates: set[str]) -> cst.Module:
    """Drop top-level imports of ``candidates`` that nothing in the module refers to any more: the
    replaced calls were their last users. A name still mentioned anywhere (code, ``__all__``, a string
    annotation, any string at all) stays."""
    if not candidates:
        return module
    tree = ast.parse(module.code)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    strings = " ".join(
        node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )
    unused = {
        name for name in candidates
        if name not in used and not re.search(rf"\b{re.escape(name)}\b", strings)
    }
    if not unused:
        return module
    return module.visit(_ImportRemover(unused))


class _ImportRemover(cst.CSTTransformer):
    """Removes the given bound names from the import statements of the module's own body."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.depth = 0

    # Only statements of the module's own body: an import in an indented block (a function, a class, an
    # ``if`` or ``with``) stays, so no block is ever left empty.
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self.depth += 1
        return True

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        self.depth -= 1
        return updated

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
        self.depth += 1
        return True

    def leave_SimpleStatementSuite(
        self, original: cst.SimpleStatementSuite, updated: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        self.depth -= 1
        return updated

    def _bound(self, alias: cst.ImportAlias) -> str:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            return alias.asname.name.value
        name = alias.name
        while isinstance(name, cst.Attribute):
            name = name.value  # type: ignore[assignment]
        return name.value if isinstance(name, cst.Name) else ""

    def _keep(self, names: Sequence[cst.ImportAlias]) -> list[cst.ImportAlias]:
        kept = [alias for alias in names if self._bound(alias) not in self.names]
        if kept and len(kept) != len(names):
            kept[-1] = kept[-1].with_changes(comma=names[-1].comma)  # keep the list's trailing-comma style
        return kept

    def leave_Import(
        self, original: cst.Import, updated: cst.Import
    ) -> cst.Import | cst.RemovalSentinel:
        if self.depth:
            return updated
        kept = self._keep(updated.names)
        if not kept:
            return cst.RemoveFromParent()
        return updated.with_changes(names=kept) if len(kept) != len(updated.names) else updated

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if self.depth or isinstance(updated.names, cst.ImportStar):
            return updated
        kept = self._keep(updated.names)
        if not kept:
            return cst.RemoveFromParent()
        if len(kept) == len(updated.names):
            return updated
        return updated.with_changes(names=kept)
