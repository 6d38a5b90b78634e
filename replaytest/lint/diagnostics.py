"""Diagnostics from a resolved program: per file (syntax and read errors, module-level findings, the effects of
orchestration functions and of the helpers they call), fresh idempotency keys in helpers of retried units,
effects that re-run before a graph node's ``interrupt()``; and which offered fixes survive at their call site."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from replaytest.lint.context import LintContext
from replaytest.lint.discovery import SourceFile, display_path
from replaytest.lint.model import (
    ORCHESTRATION,
    PLAIN,
    STEP,
    Diagnostic,
    Effect,
    Fix,
    FunctionSummary,
    ModuleSummary,
    Related,
    Span,
)
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.resolve import Program, Reached
from replaytest.lint.rule import Rule
from replaytest.lint.rules import INTERNAL_ERROR_RULE, SYNTAX_RULE
from replaytest.lint.rules.rt205_rerun_before_interrupt import RepeatsEffectBeforeInterrupt
from replaytest.records import replace

if TYPE_CHECKING:

    from replaytest.lint.engine import LintRun



def error_diagnostic(source: SourceFile, error: Effect, context: LintContext) -> Diagnostic:
    rule = context.rules.get(error.rule)
    message = rule.message(error, None) if rule is not None else error.subject
    return Diagnostic(source.display, error.span.line, error.span.column, error.span.end_line, error.span.end_column,
                      error.rule, "syntax", message)


def internal_error(source: SourceFile, error: Exception) -> Diagnostic:
    import traceback  # only when the analyzer failed

    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    return Diagnostic(source.display, 1, 1, 1, 1, INTERNAL_ERROR_RULE, "syntax",
                      f"internal error while resolving: {error!r}{at}")


def file_diagnostics(run: LintRun, program: Program, source: SourceFile) -> list[Diagnostic]:
    context = run.context
    if source.path in run.read_errors:
        return [Diagnostic(source.display, 1, 1, 1, 1, SYNTAX_RULE, "syntax", f"{source.display} {run.read_errors[source.path]}")]
    summary = run.summaries.get(source.path)
    if summary is None:
        return []
    if summary.error is not None:
        return [error_diagnostic(source, summary.error, context)]
    diagnostics = []
    for finding in summary.findings:
        rule = context.rules[finding.rule]
        diagnostics.append(_diagnostic(source, finding.span, rule, rule.message(finding, None), None, None, ()))
    for function in summary.functions.values():
        if function.kind != ORCHESTRATION:
            continue
        profile = context.profile_by_name.get(function.framework)
        if profile is None:
            continue
        diagnostics.extend(_orchestration_diagnostics(run, program, source, summary, function, profile))
    return diagnostics


def helper_key_diagnostics(run: LintRun, program: Program) -> list[tuple[SourceFile, Diagnostic]]:
    """Fresh idempotency keys made in plain functions: findings when the function runs inside a retried
    unit — passed to a framework's step call, or called (directly or through other helpers) from a step
    or a retry-decorated function."""
    summaries = list({id(s): s for s in program.modules.values()}.values())
    if not any(function.keys for summary in summaries for function in summary.functions.values()):
        return []
    # Function -> (its summary, the function, where its keys are made: "helper, called from step x").
    reached: dict[str, tuple[ModuleSummary, FunctionSummary, str]] = {}
    queue: deque[tuple[ModuleSummary, FunctionSummary, str]] = deque()
    for summary in summaries:
        for function in summary.functions.values():
            if function.kind == STEP:
                queue.append((summary, function, f"step {function.name}"))
            elif function.retried:
                queue.append((summary, function, f"retried function {function.name}"))
        for target in summary.step_targets:
            found = program.find_function(target)
            if found is not None and found[1].kind == PLAIN:
                unit = f"{found[1].name}, which {summary.module} runs as a step"
                reached.setdefault(f"{found[0].module}.{found[1].name}", (found[0], found[1], unit))
                queue.append((found[0], found[1], f"step {found[1].name}"))
    # Breadth first from every unit, so a helper is attributed to the unit nearest to it.
    while queue:
        summary, function, unit = queue.popleft()
        for site in function.calls:
            found = program.find_function(site.target)
            if found is None or found[1].kind != PLAIN:
                continue
            name = f"{found[0].module}.{found[1].name}"
            if name not in reached:
                reached[name] = (found[0], found[1], f"{found[1].name}, called from {unit}")
                queue.append((found[0], found[1], unit))
    by_path = {str(source.path): source for source in run.files}
    diagnostics = []
    for summary, function, where in reached.values():
        source = by_path.get(summary.path)
        if source is None:
            continue
        for key in function.keys:
            rule = run.context.rules[key.rule]
            diagnostics.append((source, _diagnostic(source, key.span, rule, rule.message(key, None, via=where),
                                                    None, None, ())))
    return diagnostics


def graph_node_diagnostics(run: LintRun, program: Program) -> list[tuple[SourceFile, Diagnostic]]:
    """Effects in the part of a graph node that re-runs on resume (before its last ``interrupt()``),
    reported at the node function's line (through a helper: at the node's call, the chain in ``trace``).
    A node function in a file this run does not check is reported at the ``add_node`` call instead."""
    rule = next((r for r in run.context.rules.values() if isinstance(r, RepeatsEffectBeforeInterrupt)), None)
    if rule is None or not any(summary.graph_nodes for summary in program.modules.values()):
        return []
    from replaytest.lint.graph_nodes import RerunRegions  # only a project with graph nodes needs the walk

    by_path = {str(source.path): source for source in run.files}
    diagnostics = []
    for finding in RerunRegions(program, run.context.profile_by_name, rule.repeats, rule.code).findings():
        profile = run.context.profile_by_name[finding.node.framework]
        entry = f"{finding.summary.module}.{finding.function.name}"
        source = by_path.get(finding.summary.path)
        span, via, chain = finding.span, finding.via, finding.chain
        pause_at = f"line {finding.pause.span.line}"
        if source is None:
            source = by_path.get(finding.registered_in.path)
            if source is None:
                continue
            span, via = finding.node.span, f"{finding.function.name.rsplit('.', 1)[-1]}()"
            chain = (finding.registered_in.module, *finding.chain)
            pause_at = f"{display_path(Path(finding.summary.path), run.cwd)}:{finding.pause.span.line}"
        message = rule.node_message(finding.effect, profile, finding.node.name, finding.pause.text, pause_at, via,
                                    finding.in_loop)
        trace = chain if via is not None else ()
        diagnostic = _diagnostic(source, span, rule, message, profile.name, None, trace, entry)
        if via is not None:
            # Every hazard line the finding stands for: its own effect's, and those of the other effects of its
            # rule behind the same call (chains from the node function, from the registering module here).
            prefix = chain[: len(chain) - len(finding.chain)]
            items = [Reached(finding.effect, chain),
                     *(Reached(other.effect, (*prefix, *other.chain)) for other in finding.others)]
            # A tool run through a lookup is reported at each call running it (no root to merge them by).
            root = None if finding.through_lookup else _root_of(program, items[0])
            diagnostic = replace(diagnostic, trace_paths=_helper_paths(program, chain[:-1], run.cwd),
                                 root=root, message_tail=_more_hazards(program, items[1:], run.cwd),
                                 related=_hazard_lines(program, items, run.cwd))
        diagnostics.append((source, diagnostic))
    return diagnostics


def _orchestration_diagnostics(
    run: LintRun, program: Program, source: SourceFile, summary: ModuleSummary, function: FunctionSummary,
    profile: FrameworkProfile,
) -> list[Diagnostic]:
    context = run.context
    entry = f"{summary.module}.{function.name}"
    diagnostics = []
    for effect in function.effects:
        if effect.gathered_only or not program.applies(effect, profile):
            continue
        rule = context.rules[effect.rule]
        fix = _fix_for(effect, function, profile)
        message = _respell_context(rule.message(effect, profile), function, profile)
        message = _respell_log_only(_respell_query(message, effect, function, profile), effect, profile)
        diagnostics.append(_diagnostic(source, effect.span, rule, message, profile.name, fix, (), entry))
    for site in function.calls:
        reached, direct = program.call_effects(site, profile)
        # One finding per rule at a call site; the rule's other hazards behind it are named in its message.
        by_rule: dict[str, list[Reached]] = {}
        for item in reached:
            if item.effect.gathered_only:
                if not site.gathered:
                    continue
                item = replace(item, effect=replace(item.effect, gathered_only=False))
            by_rule.setdefault(item.effect.rule, []).append(item)
        for items in by_rule.values():
            item = items[0]
            rule = context.rules[item.effect.rule]
            if direct:
                message, trace = rule.message(item.effect, profile), tuple[str, ...]()
            else:
                message, trace = rule.message(item.effect, profile, via=site.subject), (entry, *item.chain)
            message = _respell_query(_respell_context(message, function, profile), item.effect, function, profile)
            message = _respell_log_only(message, item.effect, profile)
            diagnostic = _diagnostic(source, site.span, rule, message, profile.name, None, trace, entry)
            if not direct:
                diagnostic = replace(diagnostic, trace_paths=_helper_paths(program, item.chain[:-1], run.cwd),
                                     root=_root_of(program, item), message_tail=_more_hazards(program, items[1:], run.cwd),
                                     related=_hazard_lines(program, items, run.cwd))
            diagnostics.append(diagnostic)
    return diagnostics


_MORE_NAMED = 3


def _more_hazards(program: Program, others: list[Reached], cwd: Path) -> str:
    """`` (and 2 more: os.getenv() at app/config.py:12, os.environ at app/env.py:3)``: the other hazards of
    the same rule behind one helper call, which would otherwise show only once the first is fixed."""
    places = []
    for item in others:
        root = _root_of(program, item)
        where = f" at {display_path(Path(root[0]), cwd)}:{root[1]}" if root is not None else ""
        places.append(f"{item.effect.subject}{where}")
    if not places:
        return ""
    named = ", ".join(places[:_MORE_NAMED]) + (", …" if len(places) > _MORE_NAMED else "")
    return f" (and {len(places)} more: {named})"


def _hazard_lines(program: Program, items: list[Reached], cwd: Path) -> tuple[Related, ...]:
    """Every hazard line of the rule behind one helper call, the one the message names first included (the
    finding stands at the call; the message names three of the others)."""
    lines = []
    for item in items:
        root = _root_of(program, item)
        if root is not None:
            lines.append(Related(display_path(Path(root[0]), cwd), root[1], root[2], item.effect.subject))
    return tuple(dict.fromkeys(lines))


def _root_of(program: Program, item: Reached) -> tuple[str, int, int] | None:
    """The file and position of the effect at the end of a helper chain."""
    found = program.find_function(item.chain[-2]) if len(item.chain) >= 2 else None
    if found is None:
        return None
    return found[0].path, item.effect.span.line, item.effect.span.column


def _helper_paths(program: Program, helpers: tuple[str, ...], cwd: Path) -> tuple[str, ...]:
    paths = []
    for name in helpers:
        found = program.find_function(name)
        paths.append(display_path(Path(found[0].path), cwd) if found is not None else "")
    return tuple(paths)


def _respell_context(message: str, function: FunctionSummary, profile: FrameworkProfile) -> str:
    """Replacement texts spell the context parameter conventionally (``ctx.uuid()``); say it the way
    this function names it (``context.uuid()``)."""
    if not profile.context_param_names or not function.context_param:
        return message
    conventional = profile.context_param_names[0]
    if function.context_param == conventional:
        return message
    return message.replace(f"{conventional}.", f"{function.context_param}.")


def _respell_query(message: str, effect: Effect, function: FunctionSummary, profile: FrameworkProfile) -> str:
    """In a handler run outside the recorded history (a Temporal query) the finding does not break replay;
    say what it does break instead (the profile's ``query_words``)."""
    if not function.query or effect.category not in profile.query_categories or not profile.query_words:
        return message
    return message.replace(" in workflow code", f" {profile.query_words}", 1)


def _respell_log_only(message: str, effect: Effect, profile: FrameworkProfile) -> str:
    """A read whose value only fills a log line, in an engine that still rejects the read (Temporal's
    sandbox): say so (the profile's ``log_only_words``) instead of "in workflow code"."""
    if not effect.log_only or not profile.log_only_words or " in workflow code" not in message:
        return message
    return message.replace(" in workflow code", f" {profile.log_only_words}", 1)


def offerable_fixes(
    raw: list[tuple[SourceFile, Diagnostic]], stdin: Mapping[Path, bytes],
    reported: Callable[[Diagnostic], bool] | None = None,
) -> list[tuple[SourceFile, Diagnostic]]:
    """Drop the fixes whose replacement would not mean the same at its call (``fix_scope``): an ``await``
    outside an ``async def``, a replacement name shadowed there. Only files with a fix are parsed (by ast);
    a file read from stdin is judged by that text, not by a file at its path. With ``reported``, only the
    findings it accepts are checked: the caller reports no other (a pre-commit run of the whole project
    reports those in or through the changed files, and need not parse every other file holding a fix)."""
    from replaytest.lint.fix_scope import FixSites

    sites: dict[Path, FixSites | None] = {}
    kept = []
    for source, diagnostic in raw:
        if diagnostic.fix is not None and (reported is None or reported(diagnostic)):
            if source.path not in sites:
                try:
                    text = stdin[source.path] if source.path in stdin else source.path.read_bytes()
                    sites[source.path] = FixSites(text)
                except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                    sites[source.path] = None
            checker = sites[source.path]
            if checker is None or checker.problem(diagnostic.line, diagnostic.column, diagnostic.fix) is not None:
                diagnostic = replace(diagnostic, fix=None)
        kept.append((source, diagnostic))
    return kept


def _fix_for(effect: Effect, function: FunctionSummary, profile: FrameworkProfile) -> Fix | None:
    templates = profile.fixes.get(effect.qualname)
    if templates is None:
        return None
    for template in templates if isinstance(templates, tuple) else (templates,):
        if not template.fits(effect.args):
            continue
        if "{ctx}" in template.replacement and not function.context_param:
            return None
        replacement = template.replacement.replace("{ctx}", function.context_param).replace("{args}", effect.args)
        scope = "async" if replacement.startswith("await ") else template.scope
        return Fix(template.safe_for(effect.args), replacement, template.import_from, scope)
    return None


def _diagnostic(
    source: SourceFile, span: Span, rule: Rule, message: str, framework: str | None, fix: Fix | None,
    trace: tuple[str, ...], scope: str = "",
) -> Diagnostic:
    return Diagnostic(source.display, span.line, span.column, span.end_line, span.end_column, rule.code,
                      rule.category, message, framework, fix, tuple(trace), scope=scope)
