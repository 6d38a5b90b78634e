"""The last step of a lint run: selection (``select``/``ignore``/``per-file-ignores``), suppression comments
(honoured at the finding and at the helper line it comes from; unknown codes and unused ones reported),
one finding per helper hazard reached from several call sites, and line-independent fingerprints."""

from __future__ import annotations

from pathlib import Path

from replaytest.config import CATEGORIES, Config
from replaytest.fileio import read_regular
from replaytest.lint.context import LintContext
from replaytest.lint.discovery import SourceFile
from replaytest.lint.filtering import (
    UNUSED_SUPPRESSION_RULE,
    Selection,
    Suppression,
    fingerprint,
    parse_suppressions,
    selector_matches,
    suppress,
    unknown_selectors,
)
from replaytest.lint.model import (
    Diagnostic,
    LintResult,
    Related,
)
from replaytest.lint.rule import Rule
from replaytest.lint.rules import INTERNAL_ERROR_RULE
from replaytest.records import replace


def finish(
    raw: list[tuple[SourceFile, Diagnostic]], files: list[SourceFile], problems: list, config: Config, cwd: Path,
    context: LintContext, comments: dict[Path, list[Suppression]],
) -> LintResult:
    selection = Selection(config.select, config.ignore, config.per_file_ignores, config.root, cwd)
    prefixes = {code.rstrip("0123456789") for code in context.rules}

    def comments_of(path: Path) -> list[Suppression]:
        # A helper outside the linted files still has its suppression comments honoured at its own line.
        if path not in comments:
            try:
                text = decode(read_regular(path))
            except OSError:
                text = ""
            wanted = "replaytest" in text or "noqa" in text.lower()
            comments[path] = parse_suppressions(text, prefixes) if wanted else []
        return comments[path]

    kept: list[Diagnostic] = []
    seen: set[tuple] = set()
    # Findings reached through a helper, by (rule, helper line): reported once, at the first call site.
    through_helpers: dict[tuple, list[Diagnostic]] = {}
    for source, diagnostic in raw:
        if not selection.keeps(diagnostic):
            continue
        if suppress(diagnostic, comments_of(source.path)):
            continue
        if diagnostic.root is not None:
            root_path, root_line, root_column = diagnostic.root
            if suppress(replace(diagnostic, line=root_line, column=root_column), comments_of(Path(root_path))):
                continue
            through_helpers.setdefault((diagnostic.rule, diagnostic.root), []).append(diagnostic)
            continue
        key = (diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.rule, diagnostic.trace)
        if key in seen:
            continue
        seen.add(key)
        kept.append(diagnostic)
    for sites in through_helpers.values():
        sites.sort(key=Diagnostic.sort_key)
        first = sites[0]
        others = {(s.path, s.line, s.column): s.scope for s in sites[1:]}
        others.pop((first.path, first.line, first.column), None)
        if others:
            # The other call sites are named by function, not line, so the fingerprint survives edits elsewhere;
            # their lines are related locations (outside the fingerprint).
            plural = "s" if len(others) > 1 else ""
            names = ", ".join(sorted(set(others.values())))
            sites_related = tuple(Related(path, line, column, f"call site in {scope}" if scope else "call site")
                                  for (path, line, column), scope in sorted(others.items()))
            first = replace(first, message=f"{first.message} (also reached from {len(others)} other call site{plural}, in {names})",
                            related=(*first.related, *sites_related))
        kept.append(first)
    messages = [f"{problem.display}: {problem.problem}" for problem in problems]
    unused, comment_errors, comment_warnings = _check_comments(files, comments, selection, context)
    kept.extend(unused)
    messages.extend(comment_errors)
    kept = [replace(d, fingerprint=fingerprint(d.path, d.rule, d.message, d.trace, d.scope)) for d in kept]
    kept = [replace(d, message=d.message + d.message_tail, message_tail="") if d.message_tail else d for d in kept]
    kept.sort(key=Diagnostic.sort_key)
    failed_files = {d.path for d in kept if d.category == "syntax"}
    internal = sum(1 for d in kept if d.rule == INTERNAL_ERROR_RULE)
    return LintResult(kept, len(files), len(failed_files) + len(problems) + len(comment_errors), internal, messages,
                      warnings=comment_warnings)


def _check_comments(
    files: list[SourceFile], comments: dict[Path, list[Suppression]], selection: Selection, context: LintContext
) -> tuple[list[Diagnostic], list[str], list[str]]:
    """Unknown codes in suppression comments (configuration errors, as ``file:line: ...`` messages), RT003
    findings for comments, or codes in them, that suppressed nothing although their rules ran, and warnings
    for file-level exemptions after code, which are ignored (ruff's ``# ruff: noqa`` after code is: it warns
    and suppresses nothing; the exit code is the findings')."""
    codes = tuple(context.rules)
    unused_rule = context.rules.get(UNUSED_SUPPRESSION_RULE)
    checked_rules = [rule for rule in context.rules.values() if rule.category not in ("syntax", "suppression")]
    findings: list[Diagnostic] = []
    errors: list[str] = []
    warnings: list[str] = []
    for source in files:
        for comment in comments.get(source.path, ()):
            shown = f"# {comment.spelling}" + ("" if comment.selectors is None else
                                               ("[" + ", ".join(comment.selectors) + "]"
                                                if comment.spelling == "replaytest: ignore"
                                                else ": " + ", ".join(comment.selectors)))
            if comment.misplaced:
                # Ignored whole, codes included, as ruff skips such a directive before it reads its codes.
                warnings.append(f"{source.display}:{comment.line}: unexpected `# replaytest: noqa` after code, "
                                "ignored: a file-level exemption must stand on a line of its own; to suppress "
                                "findings on this line use `# replaytest: ignore[CODE]` or `# noqa: CODE`")
                continue
            unknown = unknown_selectors(comment.selectors or (), codes, CATEGORIES)
            for entry in unknown:
                errors.append(f"{source.display}:{comment.line}: unknown rule code or category {entry!r} in "
                              f"`{shown}` (`replaytest rules` lists them)")
            if unused_rule is None or comment.whole_file:  # an exemption is never "unused"
                continue

            def probe(rule: Rule) -> Diagnostic:
                return Diagnostic(source.display, comment.line, comment.column, comment.line, comment.column,
                                  rule.code, rule.category, "")

            if not selection.keeps(probe(unused_rule)):
                continue
            enabled = [rule for rule in checked_rules if selection.keeps(probe(rule))]
            if comment.selectors is None:
                idle = [] if comment.used or not enabled else [""]
            else:
                idle = [
                    entry for entry in comment.selectors
                    if entry not in comment.used and entry not in unknown
                    and not selector_matches(entry, probe(unused_rule))
                    and any(selector_matches(entry, probe(rule)) for rule in enabled)
                ]
            if not idle:
                continue
            if comment.selectors is None or len(idle) == len(comment.selectors):
                message = f"unused suppression: `{shown}` suppresses nothing here"
            else:
                message = f"unused suppression: {', '.join(idle)} in `{shown}` suppresses nothing here"
            findings.append(Diagnostic(source.display, comment.line, comment.column, comment.line, comment.column,
                                       unused_rule.code, unused_rule.category, message))
    return findings, errors, warnings


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")
