"""Renderings of a deploy-impact report (``replaytest impact --output-format …``): ``render_text`` (a
terminal, worst first), ``render_markdown`` (a pull-request comment or GitHub step summary), ``render_github``
(one workflow-command annotation per group at its line) and ``impact_data`` (the JSON document).

Every text that comes from a history (workflow types, run ids, command names, messages) has its control
characters escaped, as ``replay``'s reports do; markdown also keeps it from breaking a table or a code span.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from replaytest.fileio import escape_controls
from replaytest.impact.grouping import command_text, run_id
from replaytest.impact.model import (
    Guard,
    ImpactGroup,
    ImpactReport,
    PatchUse,
    PromptGroup,
    Verification,
    WorkflowImpact,
)
from replaytest.impact.resume import resume_groups
from replaytest.lint.reporters.external import PathRebaser
from replaytest.lint.reporters.github import escape_data, escape_property
from replaytest.prompts import short_version
from replaytest.replay.divergence import CommandView, ReplayResult
from replaytest.replay.report import display_path, view_data

IMPACT_REPORT_VERSION = 1
_SHOWN_RUNS = 10  # run ids listed before "… and N more" (text) or a collapsed <details> (markdown)
# Run ids a markdown group lists at most without --details: GitHub caps a step summary (1 MiB) and a comment
# (65,536 characters), and thousands of broken runs would not fit.
_MARKDOWN_MAX_RUNS = 200


# --- shared phrases -------------------------------------------------------------------------------


def verification_text(verification: Verification | None) -> str:
    """``verified: 5 of 5 histories replay green``, or ``NOT verified: <history> still fails: <why>``."""
    if verification is None:
        return "NOT verified: the guarded code was not replayed"
    if verification.verified:
        return (f"verified: {verification.passed} of {verification.histories} histories replay green"
                f"{_fresh_text(verification)}{_resume_text(verification)}")
    if verification.histories == 0:
        return "NOT verified: no history of this workflow type was replayed against it"
    if verification.failing:
        path, why = verification.failing[0]
        more = len(verification.failing) - 1
        tail = f" (and {more} more {'history' if more == 1 else 'histories'})" if more else ""
        return f"NOT verified: {display_path(path)} still fails: {why}{tail}"
    off = next((fresh for fresh in verification.fresh_runs if fresh.path != "new path"), None)
    if off is not None and verification.passed == verification.histories:
        words = {"old path": "takes the old path", "not rehearsed": "was not rehearsed"}.get(off.path, off.path)
        return (f"NOT verified: {verification.passed} of {verification.histories} histories replay green, but a new run "
                f"of the guarded code {words}: {off.text}")
    return f"NOT verified: {verification.passed} of {verification.histories} histories replay green"


def _fresh_text(verification: Verification) -> str:
    """``; a new run takes the new path (activity 'record_audit' next)``: the engine's fresh run of the guarded code."""
    if not verification.fresh_runs:
        return ""
    commands = [fresh.command for fresh in verification.fresh_runs if fresh.command]
    issued = f" ({', '.join(commands)} next)" if commands else ""
    return f"; a new run, as the engine rehearsed it, takes the new path{issued}"


def _resume_text(verification: Verification) -> str:
    """``; on resume on the guarded code (rehearsed on the engine): 2 in-flight runs take the old path``."""
    if not verification.resume:
        return ""
    counts: dict[str, int] = {}
    for _path, path_taken in verification.resume:
        counts[path_taken] = counts.get(path_taken, 0) + 1
    parts = []
    for path_taken, number in counts.items():
        runs = _count(number, "in-flight run", "in-flight runs")
        if path_taken in ("new path", "old path"):
            parts.append(f"{runs} {'takes' if number == 1 else 'take'} the {path_taken}")
        elif path_taken.startswith("does not reach"):
            parts.append(f"{runs} {'does' if number == 1 else 'do'} not reach the guard in the next step")
        else:
            parts.append(f"{runs} {path_taken}")
    return "; on resume of the guarded code, as the engine rehearsed it: " + ", ".join(parts)


def verdict_text(patch: PatchUse) -> str:
    """``2 runs still need it (oldest: wf-7)``, ``deprecate now``, ``remove now``, with the reason."""
    verdict = patch.verdict
    if verdict == "still-needed":
        number = len(patch.needed_by)
        # ``needed_by`` holds the runs oldest first, as the retirement step gives them.
        if number:
            return f"{number} {'run still needs' if number == 1 else 'runs still need'} it (oldest: {run_id(patch.needed_by[0])})"
        number = len(patch.replayed_old_by)
        return (f"still needed: no in-flight run needs it, but {number} retained finished "
                f"{'history replays' if number == 1 else 'histories replay'} its old branch (first: "
                f"{run_id(patch.replayed_old_by[0])}); removing it sends them down the new branch, which they "
                f"did not record")
    if verdict == "deprecate-now":
        number = len(patch.marked_by)
        records = f"{number} retained {'history records' if number == 1 else 'histories record'} the marker"
        if patch.deprecated:
            # Already a deprecate_patch: "deprecate now" would ask for what is done. It still consumes the
            # markers those histories hold, so it stays until none is retained.
            return f"already deprecated: keep it while retained histories record the marker ({records}); remove it once none does"
        return f"deprecate now: no in-flight run needs the old branch; {records}"
    return "remove now: no retained history needs either branch"


def _judged_by(path: str) -> str:
    return "replay only" if path == "unrehearsed" else "rehearsed on the engine"


def _describe(view: CommandView | None) -> str:
    return command_text(view)


def _no_command(group: ImpactGroup) -> bool:
    """A group no command of the history stands for: a prompt the runs have not reached yet changed
    (``prompt-drift`` by the pending-prompt check); the message names the prompt and its versions."""
    return all(view is None for view in group.recorded) and group.issued is None


def _where(group: ImpactGroup) -> str:
    if group.source is None and _no_command(group):
        return "at the resume point (a prompt the runs use after it changed)"
    if group.source is None:
        return "line unknown (the engine does not say which line issued this command)"
    text = f"{display_path(group.source.path)}:{group.source.line}"
    return f"{text} in {group.source.function}" if group.source.function else text


def _position(group: ImpactGroup) -> str:
    return f" at event #{group.position}" if group.position is not None else ""


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _totals(report: ImpactReport) -> dict[str, int]:
    groups = [group for impact in report.workflows for group in impact.groups]
    return {
        "workflow_types": len(report.workflows),
        "groups": len(groups),
        "in_flight_broken": sum(len(group.in_flight) for group in groups),
        "finished_diverged": sum(len(group.finished) for group in groups),
        "unknown_status_diverged": sum(len(group.unknown_status) for group in groups),
        "not_reached": sum(len(impact.not_reached) for impact in report.workflows),
        "unaffected": sum(len(impact.unaffected) for impact in report.workflows),
        "could_not_check": len(report.could_not_check),
        "patches": sum(len(impact.patches) for impact in report.workflows),
        "resume_refused": sum(
            1 for impact in report.workflows for verdict, runs in resume_groups(impact) if verdict.path == "breaks"
            for _run in runs
        ),
    }


def summary_sentence(report: ImpactReport) -> str:
    """``impact: 1 workflow type, 2 groups: 3 in-flight runs break, …`` — the report's last line."""
    totals = _totals(report)
    parts = [
        _count(totals["in_flight_broken"], "in-flight run breaks", "in-flight runs break"),
        _count(totals["finished_diverged"], "finished run diverges", "finished runs diverge"),
    ]
    if totals["unknown_status_diverged"]:
        parts.append(_count(totals["unknown_status_diverged"], "run of unknown status diverges",
                            "runs of unknown status diverge"))
    if totals["resume_refused"]:
        parts.append(_count(totals["resume_refused"], "in-flight run the engine refuses to resume",
                            "in-flight runs the engine refuses to resume"))
    parts += [
        f"{totals['not_reached']} in-flight not reached yet",
        f"{totals['unaffected']} unaffected",
        f"{totals['could_not_check']} could not be checked",
    ]
    head = (f"impact: {_count(totals['workflow_types'], 'workflow type', 'workflow types')}, "
            f"{_count(totals['groups'], 'group', 'groups')}")
    return f"{head}: {', '.join(parts)}"


# --- text -----------------------------------------------------------------------------------------


def render_text(report: ImpactReport, details: bool = False) -> str:
    """The terminal report: per workflow type (worst first) its groups with the runs, guard and guard
    note, the runs not reached, the patches' verdicts, then what could not be checked and the totals."""
    lines: list[str] = []
    for impact in report.workflows:
        lines.extend(_impact_text(impact, details))
        lines.append("")
    if report.could_not_check:
        lines.append(f"could not check {_count(len(report.could_not_check), 'history', 'histories')}:")
        for result in report.could_not_check:
            lines.append(f"  {display_path(result.history_path)}: {result.status}: {result.error or 'no reason given'}")
        lines.append("")
    for note in report.notes:
        lines.append(f"note: {note}")
    lines.append(summary_sentence(report))
    return "\n".join(escape_controls(line) for line in lines) + "\n"


def _impact_text(impact: WorkflowImpact, details: bool) -> list[str]:
    broken = sum(len(g.in_flight) + len(g.finished) + len(g.unknown_status) for g in impact.groups)
    head = f"{impact.workflow_type} ({impact.engine}): "
    if impact.groups:
        head += (f"{_count(len(impact.groups), 'divergence point', 'divergence points')}, "
                 f"{_count(broken, 'run breaks', 'runs break')}")
    else:
        head += "no run breaks"
    head += f"; {len(impact.not_reached)} in-flight not reached yet, {len(impact.unaffected)} unaffected"
    lines = [head]
    for group in impact.groups:
        lines.append(f"  {group.key.kind}{_position(group)}, {_where(group)}")
        if not _no_command(group):
            lines.append(f"    recorded  {'; '.join(_describe(view) for view in group.recorded) or 'nothing'}")
            lines.append(f"    code now  {_describe(group.issued)}")
        lines.append(f"    why       {group.message}")
        for title, runs in (("in-flight", group.in_flight), ("finished", group.finished),
                            ("status unknown", group.unknown_status)):
            if runs:
                lines.append(f"    {title} ({len(runs)}): {_ids_text(runs, details)}")
        lines.extend(_guard_text(group, _run_ids_by_history(impact), details))
    if impact.not_reached:
        lines.append(f"  not reached yet ({len(impact.not_reached)}): {_ids_text(impact.not_reached, details)}")
    for verdict, runs in resume_groups(impact):
        lines.append(f"  on resume ({len(runs)} in flight, {_judged_by(verdict.path)}): {verdict.text}: "
                     f"{_ids_text(runs, details)}")
    for prompt_group in impact.prompt_groups:
        lines.append(f"  {_prompt_head(prompt_group)}")
        for title, runs in _prompt_runs(prompt_group):
            if runs:
                lines.append(f"    {title} ({len(runs)}): {_ids_text(runs, details)}")
    if impact.guidance:
        lines.append(f"  guidance: {impact.guidance}")
    for patch in impact.patches:
        lines.append(f"  {_patch_head(patch)}: {verdict_text(patch)}")
    return lines


# What each ``PromptGroup.compared`` source means, as the report words it.
_COMPARED = {"call": "the version its recorded calls used", "manifest": "the run's start manifest"}


def _prompt_head(group: PromptGroup) -> str:
    """``prompt reply: sha256:… → sha256:… (compared with …), 2 in-flight runs``."""
    runs = len(group.not_called) + len(group.called)
    started = short_version(group.started) if group.started is not None else "(none: added since)"
    compared = " and ".join(_COMPARED.get(source, source) for source in group.compared)
    where = f", used at {display_path(group.source.path)}:{group.source.line}" if group.source is not None else ""
    return (f"prompt {group.prompt}: {started} -> {short_version(group.current)} (compared with {compared}{where}), "
            f"{_count(runs, 'in-flight run', 'in-flight runs')}")


def _prompt_runs(group: PromptGroup) -> list[tuple[str, list[ReplayResult]]]:
    return [
        ("not called yet, will use the new version", group.not_called),
        ("already called it, keep that result; any later call of it uses the new version", group.called),
    ]


def _ids_text(runs: Sequence[ReplayResult], details: bool) -> str:
    ids = [run_id(result) for result in runs]
    if details or len(ids) <= _SHOWN_RUNS:
        return ", ".join(ids)
    return ", ".join(ids[:_SHOWN_RUNS]) + f", … and {len(ids) - _SHOWN_RUNS} more (--details lists them)"


def _run_ids_by_history(impact: WorkflowImpact) -> dict[Path, str]:
    """Every run of ``impact`` by its resolved history path, to name the runs a guard's rehearsal lists by path."""
    results = [*impact.not_reached, *impact.unaffected]
    for group in impact.groups:
        results.extend((*group.in_flight, *group.finished, *group.unknown_status))
    return {result.history_path.resolve(): run_id(result) for result in results}


def _resume_runs_text(verification: Verification, run_ids: dict[Path, str], details: bool) -> list[str]:
    """``resume    old path (2): p-1, p-2``: which in-flight run takes which path on the guarded code, so a
    reader need not open the JSON to learn it (the verification line gives only the counts)."""
    by_path: dict[str, list[str]] = {}
    for history, path_taken in verification.resume:
        name = run_ids.get(history.resolve(), display_path(history))
        by_path.setdefault(path_taken, []).append(name)
    lines = []
    for path_taken, names in by_path.items():
        shown = names if details or len(names) <= _SHOWN_RUNS else names[:_SHOWN_RUNS]
        more = f", … and {len(names) - len(shown)} more (--details lists them)" if len(shown) < len(names) else ""
        lines.append(f"    resume    {path_taken} ({len(names)}): {', '.join(shown)}{more}")
    return lines


def _guard_text(group: ImpactGroup, run_ids: dict[Path, str] | None = None, details: bool = False) -> list[str]:
    lines = []
    guard = group.guard
    if guard is not None:
        lines.append(f"    guard     {_guard_head(guard)}: {verification_text(guard.verification)}")
        if guard.verification is not None:
            lines.extend(f"    verify    {note}" for note in guard.verification.notes)
            lines.extend(f"    fresh run {fresh.path}: {fresh.text}" for fresh in guard.verification.fresh_runs
                         if fresh.patch_id == guard.patch_id)
            if guard.verification.verified:
                lines.extend(_resume_runs_text(guard.verification, run_ids or {}, details))
        lines.extend(f"      {line}" for line in guard.diff.splitlines())
    if group.guard_note:
        lines.append(f"    {'no guard' if guard is None else 'note':<9} {group.guard_note}")
    return lines


def _guard_head(guard: Guard) -> str:
    if guard.kind == "keep-name":
        return (f"{guard.engine} rename: keep the recorded name {guard.patch_id!r} on {guard.function} in "
                f"{display_path(guard.path)}")
    return f"{guard.engine} patch {guard.patch_id!r} in {display_path(guard.path)} ({guard.function})"


def _patch_head(patch: PatchUse) -> str:
    call = "deprecate_patch" if patch.deprecated else "patch"
    return f"{call} {patch.patch_id!r} at {display_path(patch.path)}:{patch.line}"


# --- markdown -------------------------------------------------------------------------------------


def _md(text: str) -> str:
    """Table-cell text: controls escaped, pipes and HTML kept literal."""
    return (escape_controls(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
            .replace("<", "&lt;").replace(">", "&gt;"))


def _code(text: str) -> str:
    """An inline code span that no backtick in ``text`` can close early (and no pipe can split a cell)."""
    body = escape_controls(text).replace("`", "'").replace("|", "\\|")
    return f"`{body}`"


def render_markdown(report: ImpactReport, details: bool = False) -> str:
    """The report as a pull-request comment: a heading per workflow type, a table per group, the guard's diff
    in a ``diff`` block, long run-id lists collapsed in ``<details>``."""
    lines = ["## replaytest impact", "", _md(summary_sentence(report)), ""]
    for impact in report.workflows:
        lines.append(f"### {_code(impact.workflow_type)} ({_md(impact.engine)})")
        lines.append("")
        if not impact.groups:
            lines += ["No run breaks.", ""]
        for number, group in enumerate(impact.groups, 1):
            lines.extend(_group_markdown(number, group, details))
        if impact.not_reached:
            lines.append(f"**Not reached yet** ({len(impact.not_reached)} in-flight): "
                         f"{_ids_markdown(impact.not_reached, details, 'in-flight runs')}")
            lines.append("")
        for verdict, runs in resume_groups(impact):
            lines.append(f"**On resume** ({len(runs)} in-flight, {_judged_by(verdict.path)}): {_md(verdict.text)}: "
                         f"{_ids_markdown(runs, details, 'in-flight runs')}")
            lines.append("")
        if impact.prompt_groups:
            lines += ["**Prompt groups** (in-flight runs that will use another prompt version than they started "
                      "under: what they do once they resume changes):", "",
                      "| prompt | from | to | compared with | not called yet | already called |", "|---|---|---|---|---|---|"]
            for prompt_group in impact.prompt_groups:
                started = short_version(prompt_group.started) if prompt_group.started is not None else "(added since)"
                compared = " and ".join(_COMPARED.get(source, source) for source in prompt_group.compared)
                lines.append(
                    f"| {_code(prompt_group.prompt)} | {_code(started)} | {_code(short_version(prompt_group.current))} "
                    f"| {_md(compared)} | {_ids_markdown(prompt_group.not_called, details, 'runs') or '—'} "
                    f"| {_ids_markdown(prompt_group.called, details, 'runs') or '—'} |"
                )
            lines.append("")
        if impact.unaffected:
            lines += [f"Unaffected: {_count(len(impact.unaffected), 'run replays', 'runs replay')} green.", ""]
        if impact.guidance:
            lines += [f"**Guidance**: {_md(impact.guidance)}", ""]
        if impact.patches:
            lines += ["| patch | line | verdict |", "|---|---|---|"]
            for patch in impact.patches:
                call = "deprecate_patch" if patch.deprecated else "patch"
                lines.append(f"| {_code(patch.patch_id)} ({call}) | {_code(f'{display_path(patch.path)}:{patch.line}')} "
                             f"| {_md(verdict_text(patch))} |")
            lines.append("")
    if report.could_not_check:
        lines += [f"### Could not check {_count(len(report.could_not_check), 'history', 'histories')}", ""]
        for result in report.could_not_check:
            lines.append(f"- {_code(display_path(result.history_path))}: {result.status}: "
                         f"{_md(result.error or 'no reason given')}")
        lines.append("")
    for note in report.notes:
        lines.append(f"> note: {_md(note)}")
    if report.notes:
        lines.append("")
    return "\n".join(lines)


def _group_markdown(number: int, group: ImpactGroup, details: bool) -> list[str]:
    lines = [f"#### {number}. {_md(group.key.kind)}{_position(group)} — {_code(_where(group))}", "",
             "| | |", "|---|---|"]
    if not _no_command(group):
        lines += [f"| recorded | {', '.join(_code(_describe(view)) for view in group.recorded) or 'nothing'} |",
                  f"| code now | {_code(_describe(group.issued))} |"]
    lines.append(f"| why | {_md(group.message)} |")
    for title, runs in (("in-flight", group.in_flight), ("finished", group.finished),
                        ("status unknown", group.unknown_status)):
        if runs:
            lines.append(f"| {title} ({len(runs)}) | {_ids_markdown(runs, details, title + ' runs')} |")
    guard = group.guard
    if guard is not None:
        lines.append(f"| guard | {_md(_guard_head(guard))}: **{_md(verification_text(guard.verification))}** |")
        if guard.verification is not None:
            lines.extend(f"| verify | {_md(note)} |" for note in guard.verification.notes)
            lines.extend(f"| fresh run | {_md(fresh.path)}: {_md(fresh.text)} |" for fresh in guard.verification.fresh_runs
                         if fresh.patch_id == guard.patch_id)
    if group.guard_note:
        lines.append(f"| {'no guard' if guard is None else 'note'} | {_md(group.guard_note)} |")
    lines.append("")
    if guard is not None and guard.diff:
        fence = "````" if "```" in guard.diff else "```"
        lines += [f"{fence}diff", escape_controls(guard.diff, keep_newlines=True).rstrip("\n"), fence, ""]
    return lines


def _ids_markdown(runs: Sequence[ReplayResult], details: bool, what: str) -> str:
    shown = runs if details else runs[:_MARKDOWN_MAX_RUNS]
    ids = ", ".join(_code(run_id(result)) for result in shown)
    if len(shown) < len(runs):
        ids += f" … and {len(runs) - len(shown)} more (`--details` or the json report lists them)"
    if details or len(runs) <= _SHOWN_RUNS:
        return ids
    # Collapsed: a <details> element works inside a table cell on one line.
    return f"<details><summary>{len(runs)} {_md(what)}</summary>{ids}</details>"


# --- github ---------------------------------------------------------------------------------------


def render_github(report: ImpactReport, cwd: Path | None = None) -> str:
    """One workflow command per group at its line (the history file of its first run when the line is
    unknown): ``::error`` when in-flight runs (or runs of unknown status) break, ``::warning`` for finished
    runs only; one ``::error`` per history that could not be checked."""
    rebase = PathRebaser(cwd)
    lines = []
    for impact in report.workflows:
        for group in impact.groups:
            runs = [*group.in_flight, *group.unknown_status, *group.finished]
            if group.source is not None:
                path, line = group.source.path, group.source.line
            else:
                path, line = str(runs[0].history_path), 1
            level = "error" if group.in_flight or group.unknown_status else "warning"
            counts = [f"{number} {title}" for number, title in ((len(group.in_flight), "in-flight"),
                      (len(group.finished), "finished"), (len(group.unknown_status), "of unknown status")) if number]
            verb = "break" if level == "error" else "diverge"
            message = (f"{impact.workflow_type}: {' and '.join(counts)} "
                       f"{'run' if len(runs) == 1 else 'runs'} {verb}{_position(group)} ({group.key.kind}): "
                       f"{group.message}\n"
                       + ("" if _no_command(group) else f"recorded: {'; '.join(_describe(v) for v in group.recorded)}; "
                                                         f"code now: {_describe(group.issued)}\n")
                       + f"runs: {', '.join(run_id(r) for r in runs)}")
            if group.guard is not None:
                message += f"\nguard: {_guard_head(group.guard)}: {verification_text(group.guard.verification)}"
            elif group.guard_note:
                message += f"\nno guard: {group.guard_note}"
            title = f"replaytest impact: {group.key.kind}"
            properties = ",".join(f"{name}={escape_property(str(value))}"
                                  for name, value in (("file", rebase(path)), ("line", line), ("title", title)))
            lines.append(f"::{level} {properties}::{escape_data(escape_controls(message, keep_newlines=True))}")
    for result in report.could_not_check:
        properties = ",".join(f"{name}={escape_property(str(value))}" for name, value in
                              (("file", rebase(str(result.history_path))), ("line", 1),
                               ("title", f"replaytest impact: {result.status}")))
        text = f"{display_path(result.history_path)}: could not be checked ({result.status}): {result.error or 'no reason given'}"
        lines.append(f"::error {properties}::{escape_data(escape_controls(text))}")
    return "".join(line + "\n" for line in lines)


# --- json -----------------------------------------------------------------------------------------


def impact_data(report: ImpactReport) -> dict[str, Any]:
    """The ``--output-format json`` document: ``workflows`` (per type: groups, not_reached, unaffected,
    patches, guidance), ``could_not_check`` and ``summary`` (the counts of ``summary_sentence`` and notes)."""
    return {
        "version": IMPACT_REPORT_VERSION,
        "workflows": [_impact_data(impact) for impact in report.workflows],
        "could_not_check": [
            {"history": display_path(r.history_path), "workflow": {"type": r.workflow_type, "id": r.workflow_id},
             "status": r.status, "error": r.error}
            for r in report.could_not_check
        ],
        "summary": {**_totals(report), "notes": list(report.notes)},
    }


def _impact_data(impact: WorkflowImpact) -> dict[str, Any]:
    return {
        "type": impact.workflow_type,
        "engine": impact.engine,
        "groups": [_group_data(group) for group in impact.groups],
        "not_reached": [run_id(result) for result in impact.not_reached],
        "unaffected": [run_id(result) for result in impact.unaffected],
        "resume": [
            {"path": verdict.path, "text": verdict.text, "runs": [run_id(result) for result in runs]}
            for verdict, runs in resume_groups(impact)
        ],
        "patches": [_patch_data(patch) for patch in impact.patches],
        "guidance": impact.guidance,
        "prompt_groups": [
            {
                "prompt": group.prompt, "from": group.started, "to": group.current, "compared": list(group.compared),
                "runs": {"not_called": [run_id(r) for r in group.not_called], "called": [run_id(r) for r in group.called]},
                "source": None if group.source is None else {"path": group.source.path, "line": group.source.line},
            }
            for group in impact.prompt_groups
        ],
    }


def _group_data(group: ImpactGroup) -> dict[str, Any]:
    return {
        "kind": group.key.kind,
        "position": group.position,
        "path": None if group.source is None else display_path(group.source.path),
        "line": None if group.source is None else group.source.line,
        "function": None if group.source is None else group.source.function,
        "issued": view_data(group.issued),
        "recorded": [view_data(view) for view in group.recorded],
        "message": group.message,
        "runs": {
            "in_flight": [run_id(result) for result in group.in_flight],
            "finished": [run_id(result) for result in group.finished],
            "unknown_status": [run_id(result) for result in group.unknown_status],
        },
        "guard": None if group.guard is None else _guard_data(group.guard),
        "guard_note": group.guard_note,
    }


def _guard_data(guard: Guard) -> dict[str, Any]:
    verification = guard.verification
    return {
        "engine": guard.engine,
        "kind": guard.kind,
        "patch_id": guard.patch_id,
        "path": display_path(guard.path),
        "function": guard.function,
        "new_range": None if guard.new_range is None else list(guard.new_range),
        "old_range": None if guard.old_range is None else list(guard.old_range),
        "diff": guard.diff,
        "verified": None if verification is None else {
            "histories": verification.histories,
            "passed": verification.passed,
            "ok": verification.verified,
            "failing": [{"history": display_path(path), "reason": why} for path, why in verification.failing],
        },
        "verification": verification_text(verification),
        "resume": [] if verification is None else [
            {"history": display_path(path), "path": path_taken} for path, path_taken in verification.resume
        ],
        "fresh_run": _fresh_run_data(guard),
    }


def _fresh_run_data(guard: Guard) -> dict[str, Any] | None:
    """The guard's check in the engine's fresh run of the guarded code; None for a guard with no check (a kept
    name) or one not verified yet."""
    verification = guard.verification
    fresh = None if verification is None else next(
        (fresh for fresh in verification.fresh_runs if fresh.patch_id == guard.patch_id), None)
    if fresh is None:
        return None
    return {
        "path": fresh.path,
        "command": fresh.command,
        "text": fresh.text,
        "history": None if fresh.history is None else display_path(fresh.history),
        "driver": fresh.driver,
    }


def _patch_data(patch: PatchUse) -> dict[str, Any]:
    return {
        "patch_id": patch.patch_id,
        "engine": patch.engine,
        "path": display_path(patch.path),
        "line": patch.line,
        "deprecated": patch.deprecated,
        "needed_by": [run_id(result) for result in patch.needed_by],
        "marked_by": [run_id(result) for result in patch.marked_by],
        "replayed_old_by": [run_id(result) for result in patch.replayed_old_by],
        "verdict": patch.verdict,
        "verdict_text": verdict_text(patch),
    }
