"""``replaytest impact``: which runs the current code breaks, per workflow type, grouped by divergence
point, with the verified version guards."""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import click

from replaytest.cli.replay_command import _run_replay
from replaytest.cli.shared import _IMPACT_FORMATS, EXIT_ERROR, _json_report, _ReplaySetupError, _safe, cli

if TYPE_CHECKING:
    from replaytest.impact.model import ImpactReport
    from replaytest.replay.adapter import WorkflowSet
    from replaytest.replay.exclusion import HistorySelection
    from replaytest.replay.reads import FileReads


def build_impact(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], details: bool, exclude: tuple[str, ...],
    show_progress: bool = False, reads: FileReads | None = None,
) -> ImpactReport:
    """Replay every history once (the settings ``replay`` and ``check`` read) and group the results; the
    guards and patch verdicts are attached to the returned report before it is rendered. ``reads`` gets the
    files the replay read (the guards' verification copy takes them)."""
    from replaytest.gate import workflow_files
    from replaytest.impact.grouping import build_report
    from replaytest.impact.model import UNKNOWN_WORKFLOW_TYPE
    from replaytest.impact.resume import attach_guard_blocks
    from replaytest.impact.retirement import attach_patches

    selected: list[HistorySelection] = []
    loaded: list[WorkflowSet] = []
    results = _run_replay(paths, workflow_specs, None, None, details, show_progress=show_progress,
                          exclude=exclude, selected=selected, loaded=loaded, rehearse=True, reads=reads)
    report = build_report(results)
    attach_patches(report.workflows, results, workflow_files(loaded[0]))
    attach_guard_blocks(report.workflows, workflow_files(loaded[0]))
    # What the patch verdicts could not count is said once, with the report's other notes; calls no
    # workflow type could be told for are such notes only, not a workflow type of their own.
    report.notes.extend(note for item in report.workflows for note in item.notes)
    report.workflows = [item for item in report.workflows if item.workflow_type != UNKNOWN_WORKFLOW_TYPE]
    report.notes.extend(note for selection in selected for note in selection.notes())
    excluded = sum(len(selection.excluded) for selection in selected)
    if excluded:
        report.notes.append(f"{excluded} {'history' if excluded == 1 else 'histories'} left out by the exclude "
                            "settings (not replayed, not counted)")
    return report


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--workflows", "-w", "workflow_specs", multiple=True, metavar="MODULE:ATTR",
              help="Current code to replay against (repeatable); default: the configured workflows.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(_IMPACT_FORMATS), default="text",
              show_default=True, help="markdown: a pull-request comment; github: one annotation per group.")
@click.option("--in-flight-only", is_flag=True, help="Exit 0 when only finished runs diverge.")
@click.option("--exclude", multiple=True, metavar="GLOBS",
              help="Also leave out histories matching these globs (relative to the project root; repeatable).")
@click.option("--details", is_flag=True, help="List every run id (long lists are cut or collapsed otherwise).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--base", "base_rev", metavar="REV",
              help="The code the recorded runs ran (the guards' old branch); default: the merge base with the "
                   "default branch.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the verified guards as a patch (git apply) instead.")
@click.option("--fix", "fix", is_flag=True,
              help="Write the verified guards into the files (an unsafe fix: review them before committing).")
def impact(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], output_format: str, in_flight_only: bool,
    exclude: tuple[str, ...], details: bool, quiet: bool, base_rev: str | None, show_diff: bool, fix: bool,
) -> None:
    """Which runs the current code breaks, per workflow type, grouped by divergence point: in-flight runs
    (the engine resumes them by replay) and finished ones, and the in-flight runs that have not reached the
    change yet. Histories and code come from the settings `check` reads (pytest ini first, then
    [tool.replaytest.replay]); PATHS and --workflows override them.

    Each group gets a version guard (Temporal, DBOS, journal; LangGraph: guidance) from the code at --base,
    shown as verified only after every history of its workflow type replayed green against a temporary copy
    of the code with it. --diff prints the verified guards as a patch; --fix writes them (the exit code
    still describes the code before the fix).

    Exit 0 no in-flight run breaks and no finished run diverges (with --in-flight-only: finished runs do not
    count), 1 otherwise, 2 a history that could not be checked (error, stale) or a configuration error
    (also: no git, an unknown --base revision or a shallow clone without the base with --base, --diff or --fix)."""

    from replaytest.impact.grouping import exit_code
    from replaytest.impact.guards import GuardApplyError, GuardSetupError, apply_guards, guards_diff
    from replaytest.impact.report import impact_data, render_github, render_markdown, render_text
    from replaytest.replay.progress import wanted
    from replaytest.replay.reads import FileReads

    if show_diff and fix:
        click.echo("error: --diff and --fix do not go together: --diff prints the guards, --fix writes them", err=True)
        sys.exit(EXIT_ERROR)
    try:
        reads = FileReads()
        report = build_impact(paths, workflow_specs, details, exclude, show_progress=wanted(quiet), reads=reads)
    except _ReplaySetupError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    try:
        # Nothing breaks, nothing to guard: git is not needed then (unless asked for).
        if base_rev or show_diff or fix or any(impact.groups for impact in report.workflows):
            _attach_impact_guards(report, workflow_specs, base_rev, reads.files.keys())
    except GuardSetupError as error:
        if base_rev or show_diff or fix:
            click.echo(f"error: {_safe(str(error))}", err=True)
            sys.exit(EXIT_ERROR)
        report.notes.append(f"no version guards: {error}")
    if show_diff:
        patch = guards_diff(report.workflows)
        click.echo(patch, nl=False)
        if not patch:
            click.echo("no verified guard to print (replaytest impact without --diff says why)", err=True)
        sys.exit(exit_code(report, in_flight_only))
    if in_flight_only:
        finished = sum(len(group.finished) for item in report.workflows for group in item.groups)
        if finished:
            report.notes.append(f"--in-flight-only: {finished} finished {'run diverges' if finished == 1 else 'runs diverge'}"
                                " without failing this run")
    if output_format == "json":
        click.echo(_json_report(impact_data(report)))
    elif output_format == "markdown":
        click.echo(render_markdown(report, details), nl=False)
    elif output_format == "github":
        click.echo(render_github(report, cwd=Path.cwd()), nl=False)
    else:
        click.echo(render_text(report, details), nl=False)
    if fix:
        try:
            written = apply_guards(report.workflows)
        except GuardApplyError as error:
            click.echo(f"error: {_safe(str(error))}", err=True)
            sys.exit(EXIT_ERROR)
        from replaytest.impact.guards import verified_guards
        from replaytest.replay.report import display_path

        count = len(verified_guards(report.workflows))
        files = ", ".join(display_path(path) for path in written) or "no file"
        # Machine-readable formats keep stdout to themselves.
        click.echo(f"applied {count} verified guard{'' if count == 1 else 's'}: {_safe(files)}",
                   err=output_format in ("json", "github"))
    sys.exit(exit_code(report, in_flight_only))


def _attach_impact_guards(
    report: ImpactReport, workflow_specs: tuple[str, ...], base_rev: str | None, reads: Collection[str],
) -> None:
    """Guards for the report's groups from the code at ``base_rev``, verified against the same current code
    and histories the report replayed (in a copy that holds the files that replay ``reads``)."""
    from replaytest.config import load_config
    from replaytest.impact.guards import attach_guards
    from replaytest.replay.settings import replay_plan

    config = load_config()
    if workflow_specs:
        specs, workflows_base = list(workflow_specs), Path.cwd()
    else:
        plan = replay_plan(config, Path.cwd())
        specs, workflows_base = list(plan.workflows), plan.workflows_base
    results = [
        result
        for impact in report.workflows
        for result in (*(r for group in impact.groups for r in (*group.in_flight, *group.finished, *group.unknown_status)),
                       *impact.not_reached, *impact.unaffected)
    ]
    attach_guards(report.workflows, results, root=config.root, base_rev=base_rev, workflow_specs=specs,
                  workflows_base=workflows_base, reads=reads)
