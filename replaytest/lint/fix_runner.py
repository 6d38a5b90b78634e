"""The ``replaytest fix`` command's run: lint, fix, repeat while fixes land, report, exit code.

Kept out of ``cli.py`` so the command there only parses options. A fix inside another fixed call
(``random.choice([uuid4()])``) lands on the next pass, so the command repeats lint-and-fix a few times;
``--diff`` makes one pass and writes nothing. ``fix_stdin`` does the same for one file read from stdin, in
memory, and writes the fixed source to stdout.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from replaytest.fileio import escape_controls
from replaytest.lint.model import Diagnostic, LintResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def run_fix(
    lint: Callable[[], tuple[LintResult, Mapping[str, Any]]], *, unsafe: bool, show_diff: bool, output_format: str,
    passes: int, setup_errors: tuple[type[Exception], ...], allowed: Callable[[Diagnostic], bool] = lambda _: True,
    show_fixes: bool = False, exit_non_zero_on_fix: bool = False,
) -> int:
    """Run the fix command; returns its exit code. ``lint`` runs the configured lint once and raises one
    of ``setup_errors`` when configuration, plugins or rules cannot be loaded (exit 2). ``allowed`` says
    whether a diagnostic's fix may be applied (``fixable``/``unfixable``); one that may not stays remaining.
    ``exit_non_zero_on_fix`` (ruff's flag): exit 1 when a fix was written, even with nothing remaining."""
    from replaytest.lint.fix import AppliedFix, SkippedFix, fix_files

    applied: list[AppliedFix] = []
    skipped: list[SkippedFix] = []
    changes: dict[str, tuple[str, str]] = {}
    cwd = Path.cwd()
    result: LintResult | None = None
    for _ in range(1 if show_diff else passes + 1):
        try:
            result, _rules = lint()
        except setup_errors as error:
            click.echo(f"error: {error}", err=True)
            return EXIT_ERROR
        outcome = fix_files([d for d in result.diagnostics if allowed(d)], unsafe=unsafe, cwd=cwd, digests=result.source_digests,
                            write=not show_diff)
        applied.extend(outcome.applied)
        skipped = outcome.skipped  # the last pass's: earlier passes' skips are retried
        for display, (before, after) in outcome.changes.items():
            changes[display] = (changes.get(display, (before, after))[0], after)
        if show_diff or not outcome.applied:
            break
    assert result is not None
    if show_diff:
        remaining = [d for d in result.diagnostics if d not in {change.diagnostic for change in applied}]
    else:
        remaining = list(result.diagnostics)
    if output_format == "json":
        click.echo(json.dumps({
            "version": 1,
            "applied": [{**change.diagnostic.to_json(), "original": change.original} for change in applied],
            "skipped": [{"path": s.path, "reason": s.reason,
                         "diagnostic": s.diagnostic.to_json() if s.diagnostic else None} for s in skipped],
            "remaining": [d.to_json() for d in remaining],
            "diff": _diff_text(changes) if show_diff else None,
        }, indent=2))
    else:
        if show_diff:
            click.echo(_diff_text(changes), nl=False)
        else:
            for change in applied:
                d = change.diagnostic
                click.echo(f"{d.path}:{d.line}:{d.column}: {d.rule} {change.original} -> {change.replacement}")
        for skip in skipped:
            where = f"{skip.path}:{skip.diagnostic.line}:{skip.diagnostic.column}: {skip.diagnostic.rule}" \
                if skip.diagnostic else skip.path
            click.echo(f"{where} fix not applied: {skip.reason}", err=True)
        files = len({change.diagnostic.path for change in applied})
        verb = "Would fix" if show_diff else "Fixed"
        click.echo(f"{verb} {len(applied)} finding(s) in {files} file(s); {len(remaining)} remaining.",
                   err=show_diff)
        if show_fixes and applied and not show_diff:
            click.echo(_enumeration(applied))
    for problem in result.problems:
        click.echo(f"error: {problem}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {escape_controls(warning)}", err=True)
    if result.errors:
        return EXIT_ERROR
    if show_diff:
        return EXIT_FINDINGS if changes else EXIT_CLEAN
    if exit_non_zero_on_fix and applied:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def fix_stdin(
    lint: Callable[[bytes], tuple[LintResult, Mapping[str, Any]]], source: bytes, *, unsafe: bool, output_format: str,
    passes: int, setup_errors: tuple[type[Exception], ...], allowed: Callable[[Diagnostic], bool],
    exit_non_zero_on_fix: bool = False,
) -> int:
    """``fix -`` with ``--stdin-filename``: fix ``source`` in memory, pass after pass as ``run_fix`` does,
    and write the fixed source to stdout (unchanged when nothing applied: a pipe never loses the file);
    the summary and the findings that remain go to stderr (json: one object on stdout with ``source``)."""
    from replaytest.lint.fix import AppliedFix, SkippedFix, fix_files

    applied: list[AppliedFix] = []
    skipped: list[SkippedFix] = []
    current = source
    result: LintResult | None = None
    for _ in range(passes + 1):
        try:
            result, _rules = lint(current)
        except setup_errors as error:
            click.echo(f"error: {error}", err=True)
            return EXIT_ERROR
        wanted = [d for d in result.diagnostics if allowed(d)]
        sources = {d.path: current for d in wanted}
        outcome = fix_files(wanted, unsafe=unsafe, cwd=Path.cwd(), write=False, sources=sources)
        applied.extend(outcome.applied)
        skipped = outcome.skipped
        if not outcome.applied:
            break
        [current] = outcome.new_bytes.values()  # one file: the one read from stdin
    assert result is not None
    remaining = list(result.diagnostics)
    if output_format == "json":
        click.echo(json.dumps({
            "version": 1,
            "applied": [{**change.diagnostic.to_json(), "original": change.original} for change in applied],
            "skipped": [{"path": s.path, "reason": s.reason,
                         "diagnostic": s.diagnostic.to_json() if s.diagnostic else None} for s in skipped],
            "remaining": [d.to_json() for d in remaining],
            "source": current.decode("utf-8", "surrogateescape"),
        }, indent=2))
    else:
        click.echo(current, nl=False)
        for d in remaining:
            click.echo(escape_controls(f"{d.path}:{d.line}:{d.column}: {d.rule} {d.message}"), err=True)
        for skip in skipped:
            click.echo(f"{skip.path} fix not applied: {skip.reason}", err=True)
        click.echo(f"Fixed {len(applied)} finding(s); {len(remaining)} remaining.", err=True)
    for problem in result.problems:
        click.echo(f"error: {problem}", err=True)
    if result.errors:
        return EXIT_ERROR
    if exit_non_zero_on_fix and applied:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _enumeration(applied: list[Any]) -> str:
    """ruff's ``--show-fixes`` list: per file, how many findings of each rule were fixed."""
    by_file: dict[str, Counter[str]] = {}
    for change in applied:
        by_file.setdefault(change.diagnostic.path, Counter())[change.diagnostic.rule] += 1
    lines = [f"Fixed {len(applied)} finding{'s' if len(applied) != 1 else ''}:"]
    for path in sorted(by_file):
        lines.append(f"- {path}:")
        lines.extend(f"    {count} × {rule}" for rule, count in sorted(by_file[path].items()))
    return "\n".join(lines)


def _diff_text(changes: Mapping[str, tuple[str, str]]) -> str:
    parts: list[str] = []
    for display, (before, after) in sorted(changes.items()):
        parts.extend(difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{display}", f"b/{display}"
        ))
    return "".join(parts)


__all__ = ["fix_stdin", "run_fix"]
