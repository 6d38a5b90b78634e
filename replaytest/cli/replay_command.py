"""``replaytest replay``, and the replay run ``check``, ``impact`` and ``corpus`` share: loading the
settings and the current code once, choosing the histories (exclude settings, shards, the replay cache) and
the text report and exit code of replay results."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest.cli.shared import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    _json_report,
    _ReplaySetupError,
    _safe,
    _split,
    cli,
)
from replaytest.config import HAZARD_POLICIES, PROMPT_POLICIES, HazardPolicy, PromptPolicy

if TYPE_CHECKING:
    from replaytest.config import Config
    from replaytest.gate import CoverageRun
    from replaytest.replay.adapter import WorkflowSet
    from replaytest.replay.divergence import ReplayResult
    from replaytest.replay.exclusion import ExcludeSetting, HistorySelection
    from replaytest.replay.reads import FileReads
    from replaytest.replay.shard import Shard, ShardSelection


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--workflows", "-w", "workflow_specs", multiple=True, metavar="MODULE:ATTR",
              help="Current code to replay against (repeatable); default [tool.replaytest.replay] workflows.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--prompts", type=click.Choice(PROMPT_POLICIES),
              help="Prompt drift policy for every history status (default: fail running/parked, warn completed).")
@click.option("--prompts-pending", type=click.Choice(PROMPT_POLICIES),
              help="A prompt a running/parked run has not reached yet that changed since it started (default fail).")
@click.option("--strict-args", is_flag=True, default=None, help="Fail on args-mismatch instead of warning.")
@click.option("--hazards", type=click.Choice(HAZARD_POLICIES),
              help="A clock/random/uuid read the runtime guards caught in orchestration code (default fail).")
@click.option("--details", is_flag=True, help="Longer reports: more context, every warning in full.")
@click.option("--quiet", "-q", is_flag=True,
              help="Text format: report only histories that did not pass cleanly; no progress bar.")
@click.option("--exclude", multiple=True, metavar="GLOBS",
              help="Also leave out histories matching these globs (relative to the project root; repeatable).")
@click.option("--force-exclude", is_flag=True, default=None,
              help="Apply the exclude globs to history files named on the command line too.")
@click.option("--rehearse", is_flag=True,
              help="Also resume each in-flight run that replays green with the engine's own code, one step past "
                   "its history (effects stubbed), and report what the engine does (where the engine allows it).")
@click.option("--fresh-run", "fresh_run", multiple=True, metavar="PATCH_ID",
              help="Also start a fresh run of each workflow type with the engine's own code, from the input of "
                   "one of its histories (a finished one first; effects answered with that history's recorded "
                   "results), until this patch check is answered and the command after it issued (repeatable; "
                   "Temporal, DBOS and the journal: the engines with a patch API).")
def replay(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], output_format: str, prompts: PromptPolicy | None,
    prompts_pending: PromptPolicy | None, strict_args: bool | None, hazards: HazardPolicy | None, details: bool,
    quiet: bool, exclude: tuple[str, ...], force_exclude: bool | None, rehearse: bool, fresh_run: tuple[str, ...],
) -> None:
    """Replay history files (or folders of them) against the current code; stop each at its first divergence.

    Without PATHS the configured histories apply (pytest ini replay_paths, else [tool.replaytest.replay]
    paths). Histories matching the exclude globs (pytest ini replay_exclude, else [tool.replaytest.replay]
    exclude, plus --exclude) are not replayed and are counted as excluded. Exit 0 all passed, 1 a
    divergence, 2 usage error, malformed, unsupported or stale history (no current code for its workflow
    type), or exclude globs that leave no history to replay."""

    from replaytest.replay.progress import wanted
    from replaytest.replay.report import report_data

    selected: list[HistorySelection] = []
    try:
        results = _run_replay(paths, workflow_specs, prompts, strict_args, details, prompts_pending=prompts_pending,
                              show_progress=wanted(quiet), hazards=hazards, exclude=exclude,
                              force_exclude=force_exclude, selected=selected, rehearse=rehearse, fresh_run=fresh_run)
    except _ReplaySetupError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(_json_report(_with_exclusion(report_data(results), selected)))
    else:
        _echo_replay_text(results, details, quiet)
        _echo_exclusion_text(selected, details)
    sys.exit(_replay_exit_code(results))


def _run_replay(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], prompts: PromptPolicy | None, strict_args: bool | None,
    details: bool, require_configured: bool = False, *, coverage: CoverageRun | None = None,
    show_progress: bool = False, prompts_pending: PromptPolicy | None = None, skipped: list[int] | None = None,
    hazards: HazardPolicy | None = None,
    exclude: tuple[str, ...] = (), force_exclude: bool | None = None, selected: list[HistorySelection] | None = None,
    loaded: list[WorkflowSet] | None = None, shard: Shard | None = None, sharded: list[ShardSelection] | None = None,
    rehearse: bool = False, reads: FileReads | None = None, fresh_run: Sequence[str] = (),
) -> list[ReplayResult]:
    """Load configuration, replayers and the current code once, and replay every history file under PATHS
    (default: the project's replay settings, pytest's ini options first; see ``replay.settings``).
    ``coverage`` measures the replays; ``show_progress`` draws a progress bar on the terminal; with
    ``skipped`` (a list to append the count to) histories green in an earlier run are skipped while
    nothing their replay depended on changed (the incremental replay cache, ``replay.cache``). ``exclude``
    globs (``--exclude``) add to the configured ones; which histories they left out is appended to ``selected``;
    the current code replayed against is appended to ``loaded``. With ``shard`` only that shard's share of
    the histories left after exclusion replays (``replay.shard``); what it took is appended to ``sharded``.
    ``reads`` gets the files the workflows' imports and the replays read (``impact`` copies them)."""
    from contextlib import nullcontext

    from replaytest.config import ConfigError, load_config
    from replaytest.gate import progress
    from replaytest.plugins import PluginError, load_plugins
    from replaytest.replay.adapter import ReplayOptions
    from replaytest.replay.batch import replay_many
    from replaytest.replay.reads import FileReads
    from replaytest.replay.runner import WorkflowImportError, iter_history_files, load_workflows
    from replaytest.replay.settings import replay_plan

    try:
        config = load_config()
        plan = replay_plan(config, Path.cwd())
        if require_configured and plan.paths and not plan.workflows:
            raise _ReplaySetupError(
                f"histories are configured ({plan.paths_from}) but no current code to replay them against: set "
                "replay_workflows in [tool.pytest.ini_options] or workflows in [tool.replaytest.replay] "
                "(the pytest hook pytest_replaytest_workflows is not called outside pytest)"
            )
        plugins = load_plugins(config.frameworks)
        replayers = [p.replayer for p in plugins if p.replayer is not None]
        # What the workflow modules read while they are imported (a prompt template loaded at module
        # level) is part of what a cached verdict depends on.
        import_reads = FileReads(stacks=True)
        with import_reads.recording():
            if workflow_specs:
                workflows = load_workflows(workflow_specs, Path.cwd())
            else:
                workflows = load_workflows(plan.workflows, plan.workflows_base)
    except (ConfigError, PluginError, WorkflowImportError) as error:
        raise _ReplaySetupError(str(error)) from error
    if loaded is not None:
        loaded.append(workflows)
    targets = list(paths) or list(plan.paths)
    if not targets:
        raise _ReplaySetupError(
            "no history paths given, and none configured: neither replay_paths in [tool.pytest.ini_options] "
            "nor paths in [tool.replaytest.replay]"
        )
    if not workflow_specs and not plan.workflows:
        # Every history would come out stale, one block each, for one missing setting: say it once.
        raise _ReplaySetupError(
            "no current code to replay against: give --workflows MODULE:ATTR, or set replay_workflows in "
            "[tool.pytest.ini_options] or workflows in [tool.replaytest.replay] (the pytest hook "
            "pytest_replaytest_workflows is not called outside pytest)"
        )
    options = ReplayOptions(
        prompts_running=prompts or plan.prompts_running,
        prompts_completed=prompts or plan.prompts_completed,
        prompts_pending=prompts_pending or plan.prompts_pending,
        strict_args=plan.strict_args if strict_args is None else strict_args,
        details=details,
        hazards=hazards or plan.hazards,
        max_history_bytes=plan.max_history_bytes,
        max_blob_bytes=plan.max_blob_bytes,
        rehearse=rehearse,
        fresh_run=tuple(fresh_run),
        model_calls=plan.model_calls,
    )
    files = list(iter_history_files(targets))
    if not files:
        raise _ReplaySetupError(f"no *.json history files under {', '.join(map(str, targets))}")
    files = _excluded_left_out(files, paths, plan.exclude, exclude, config, force_exclude, selected)
    if shard is not None:
        from replaytest.replay.shard import select_shard

        share = select_shard(files, shard, plan.max_history_bytes)
        files = share.kept
        if sharded is not None:
            sharded.append(share)
    measure = None
    if coverage is not None:
        measure = coverage.start(workflows, [p.profile for p in plugins if p.profile is not None])
    cache = None
    if skipped is not None:
        from replaytest.replay.cache import ReplayCache

        # Coverage needs every history to run: then the cache only records the green ones, for later
        # runs without coverage to skip.
        cache = ReplayCache(
            config.cache_folder(), config.root, workflows, options, import_reads, skip=coverage is None, shard=shard
        )
    try:
        with progress(len(files), "replaying", show_progress) as advance, \
                (reads.recording() if reads is not None else nullcontext()):
            results = replay_many(files, replayers, workflows, options, measure=measure, cache=cache, advance=advance)
    finally:
        if coverage is not None:
            coverage.stop()
    if reads is not None:
        for name in import_reads.files:
            reads.files.setdefault(name, set())
    if cache is not None and skipped is not None:
        cache.save()
        skipped.append(cache.skipped)
    return results


def _excluded_left_out(
    files: list[Path], paths: tuple[Path, ...], configured: tuple[ExcludeSetting, ...], extra: tuple[str, ...],
    config: Config, force_exclude: bool | None, selected: list[HistorySelection] | None,
) -> list[Path]:
    """The history files the exclude settings keep (configured ones, then ``--exclude``, relative to the
    project root as lint's). Globs that leave nothing under folders are a setup error; history files named
    one by one that are all excluded leave an empty run with a note, as in lint."""
    from replaytest.replay.exclusion import ExcludeSetting, nothing_left, select_histories

    settings = list(configured)
    if _split(extra):
        settings.append(ExcludeSetting(_split(extra), config.root, "--exclude"))
    named = [path for path in paths if not path.is_dir()]
    force = config.force_exclude if force_exclude is None else force_exclude
    selection = select_histories(files, settings, named=named, force=force)
    left = nothing_left(selection, named_only=bool(paths) and len(named) == len(paths))
    if left is not None and not left[0]:
        raise _ReplaySetupError(left[1])
    if left is not None:
        selection.nothing_named_left = left[1]
    if selected is not None:
        selected.append(selection)
    return selection.kept


def _exclusion_lines(selected: list[HistorySelection], details: bool) -> list[str]:
    """How many histories which setting excluded (each file with ``details``), and the notes."""
    from replaytest.replay.report import display_path

    lines = []
    for selection in selected:
        for origin, number in selection.origins():
            lines.append(f"excluded {number} {'history' if number == 1 else 'histories'} (by {origin})")
        if details:
            lines.extend(f"  excluded {display_path(item.path)} (glob {item.pattern!r})" for item in selection.excluded)
        lines.extend(f"note: {note}" for note in selection.notes())
    return [_safe(line) for line in lines]


def _echo_exclusion_text(selected: list[HistorySelection], details: bool, err: bool = False) -> None:
    for line in _exclusion_lines(selected, details):
        click.echo(line, err=err)


def _with_exclusion(document: dict[str, Any], selected: list[HistorySelection]) -> dict[str, Any]:
    """The replay JSON document with ``summary.excluded`` (a count), the ``excluded`` histories (path,
    glob, setting) and the exclusion notes added to ``summary.notes``."""
    from replaytest.replay.report import display_path

    excluded = [item for selection in selected for item in selection.excluded]
    document["summary"]["excluded"] = len(excluded)
    document["summary"]["notes"] = [*document["summary"]["notes"],
                                    *(note for selection in selected for note in selection.notes())]
    document["excluded"] = [{"history": display_path(item.path), "glob": item.pattern, "setting": item.origin}
                            for item in excluded]
    return document


def _echo_replay_text(results: list[ReplayResult], details: bool, quiet: bool, skipped: int = 0) -> None:
    from replaytest.replay.report import (
        diverged_by_run_status,
        render_text,
        run_status_lines,
        summary_counts,
        summary_notes,
    )

    for result in results:
        if not (quiet and result.status == "passed" and not result.warnings):
            click.echo(render_text(result, details))
    counts = summary_counts(results)
    click.echo(
        f"replayed {counts['histories']} histories: {counts['passed']} passed, {counts['diverged']} diverged, "
        f"{counts['stale']} stale, {counts['error']} error; {counts['warnings']} warning(s)"
    )
    for line in run_status_lines(diverged_by_run_status(results)):
        click.echo(line)
    for line in summary_notes(results):
        click.echo(f"note: {line}")
    if skipped:
        click.echo(_skipped_line(skipped))


def _skipped_line(skipped: int) -> str:
    return (f"skipped {skipped} histories that replayed green before, with no change to them, their "
            "workflow's code or the files it read (--no-cache replays them)")


def _replay_exit_code(results: list[ReplayResult]) -> int:
    from replaytest.replay.report import summary_counts

    counts = summary_counts(results)
    if counts["stale"] or counts["error"]:
        return EXIT_ERROR
    return EXIT_FINDINGS if counts["diverged"] else EXIT_CLEAN
