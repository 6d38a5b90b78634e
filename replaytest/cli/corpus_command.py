"""``replaytest corpus``: select a small history set that covers what the full set covers (per workflow
type), and copy it out or prune the rest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from replaytest.cli.replay_command import _run_replay
from replaytest.cli.shared import EXIT_ERROR, _json_report, _ReplaySetupError, _safe, cli

if TYPE_CHECKING:
    from replaytest.gate import CoverageRun
    from replaytest.replay.corpus import CorpusEntry, CorpusOutcome
    from replaytest.replay.divergence import ReplayResult
    from replaytest.replay.exclusion import HistorySelection


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--workflows", "-w", "workflow_specs", multiple=True, metavar="MODULE:ATTR",
              help="Current code to replay against (repeatable); default: the configured workflows.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), metavar="DIR",
              help="Copy the kept histories (and the blobs they name) into DIR, a new or empty folder.")
@click.option("--prune", is_flag=True,
              help="Delete the dropped histories from their folders, once the kept set is verified.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--details", is_flag=True, help="Also list every shape's commands and every dropped history.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--exclude", multiple=True, metavar="GLOBS",
              help="Also leave out histories matching these globs (relative to the project root; repeatable).")
def corpus(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], out_dir: Path | None, prune: bool, output_format: str,
    details: bool, quiet: bool, exclude: tuple[str, ...],
) -> None:
    """Select, per workflow type, a small set of the histories under PATHS that covers everything the full
    set covers: every command shape (command kinds and names, patch markers included) and every line and
    branch of orchestration code their replays execute. In-flight runs (running, parked), runs of unknown
    status and histories that do not replay cleanly are always kept. Histories and code come from the
    settings `check` reads; PATHS and --workflows override them.

    The kept set is replayed again and measured: the report shows coverage before and after. Without --out
    or --prune nothing is written (a report only); --out DIR copies the kept set, --prune deletes the
    dropped histories (only when the kept set covers everything).

    Exit 0 the kept set covers what the full set covers, 1 it does not (nothing deleted) or a history
    diverges from the current code (it is kept), 2 a history that could not be replayed (error, stale; it
    is kept), a dropped history --prune could not delete (the others are deleted; each one is named with
    the reason), or a usage/configuration error."""

    from replaytest.replay.corpus_files import CorpusOutputError
    from replaytest.replay.progress import wanted

    if out_dir is not None and prune:
        click.echo("error: --out and --prune do not go together: --out copies the kept set and leaves the folder "
                   "as it is, --prune deletes the dropped histories in place", err=True)
        sys.exit(EXIT_ERROR)
    try:
        outcome = _build_corpus(paths, workflow_specs, out_dir, prune, exclude, wanted(quiet))
    except (_ReplaySetupError, CorpusOutputError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(_json_report(outcome.data()))
    else:
        for line in outcome.text_lines(details):
            click.echo(_safe(line))
    sys.exit(outcome.exit_code())


def _build_corpus(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], out_dir: Path | None, prune: bool,
    exclude: tuple[str, ...], show_progress: bool,
) -> CorpusOutcome:
    """Replay and measure every history, select the kept set, write it (``--out``), replay and measure
    the kept set as written, and delete the dropped histories (``--prune``) only if it covers everything."""
    from replaytest.config import ConfigError, load_config
    from replaytest.gate import CoverageRun
    from replaytest.replay.corpus import CorpusOutcome, select_corpus
    from replaytest.replay.corpus_files import copy_kept, delete_dropped, plan_copies, refuse_out_dir
    from replaytest.replay.report import display_path
    from replaytest.replay.settings import replay_plan

    try:
        config = load_config()
        roots = list(paths) or list(replay_plan(config, Path.cwd()).paths)
    except ConfigError as error:
        raise _ReplaySetupError(str(error)) from error
    if out_dir is not None:
        refuse_out_dir(out_dir, roots)  # before the replays: a wrong folder costs nothing
    selected: list[HistorySelection] = []
    before_run = CoverageRun(config)
    results = _run_replay(paths, workflow_specs, None, None, False, coverage=before_run, show_progress=show_progress,
                          exclude=exclude, selected=selected)
    entries = _corpus_entries(results, before_run)
    selections = select_corpus(entries, display=display_path)
    outcome = CorpusOutcome(selections, notes=[note for selection in selected for note in selection.notes()])
    if not before_run.regions:
        outcome.notes.append("no orchestration functions found in the replayed workflows' modules: the selection "
                             "covers command shapes only, not lines or branches")
    kept = [item.entry.path for selection in selections for item in selection.kept]
    verify_paths = kept
    if out_dir is not None:
        targets = plan_copies(kept, roots, out_dir)
        outcome.written = copy_kept(targets)
        outcome.out_dir = out_dir
        verify_paths = [targets[path] for path in kept]
    # The kept set as it now stands (the copies, with --out) is replayed and measured on its own: "after"
    # is a measurement, never the selection's own arithmetic. It runs in a fresh process: a tracer only
    # follows threads started after it, and replayers keep theirs (Temporal's event loop and workflow
    # threads), so a second measurement in this process would miss what runs on them.
    if verify_paths:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        try:
            with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
                outcome.measure_after(pool.submit(_measured_entries, tuple(verify_paths), workflow_specs,
                                                  show_progress).result())
        except BrokenProcessPool as error:
            raise _ReplaySetupError(f"the kept set could not be replayed again to measure it (its process "
                                    f"ended: {error}); nothing was deleted") from error
    if prune and outcome.covers_everything:
        pruned = delete_dropped([entry.path for selection in selections for entry in selection.dropped])
        outcome.deleted, outcome.not_deleted = pruned.deleted, pruned.not_deleted
    elif prune:
        outcome.notes.append("--prune deleted nothing: the kept set does not cover what the full set covers")
    return outcome


def _measured_entries(paths: tuple[Path, ...], workflow_specs: tuple[str, ...], show_progress: bool) -> list[CorpusEntry]:
    """Replay and measure the histories ``paths`` (named one by one: no exclude glob applies); the
    selection entries of what they cover."""
    from replaytest.config import ConfigError, load_config
    from replaytest.gate import CoverageRun

    try:
        run = CoverageRun(load_config())
    except ConfigError as error:
        raise _ReplaySetupError(str(error)) from error
    results = _run_replay(paths, workflow_specs, None, None, False, coverage=run, show_progress=show_progress,
                          force_exclude=False)
    return _corpus_entries(results, run)


def _corpus_entries(results: list[ReplayResult], run: CoverageRun) -> list[CorpusEntry]:
    """One selection entry per replayed history: its digest, command shape and measured coverage."""
    import hashlib

    from replaytest.fileio import read_regular
    from replaytest.history import HistoryError, load_history
    from replaytest.plugins import load_plugins
    from replaytest.replay.corpus import CorpusEntry, command_shape, must_keep
    from replaytest.replay.coverage import HistoryCoverage, coverage_by_history
    from replaytest.replay.report import display_path
    from replaytest.replay.runner import read_head

    measured = coverage_by_history(run.data_file, run.regions)
    nothing = HistoryCoverage(frozenset(), frozenset())
    readers = [p for p in load_plugins() if p.history_reader is not None and p.replayer is not None]
    entries = []
    for result in results:
        label = display_path(result.history_path)
        reason, detail = must_keep(result.status, result.run_status)
        try:
            digest = "sha256:" + hashlib.sha256(read_regular(result.history_path)).hexdigest()
        except OSError:
            digest = ""
        shape = None
        if result.status in ("passed", "diverged"):
            # Engine formats (Temporal JSON) are read by their plugin, neutral histories here, as `diff` does.
            try:
                head = read_head(result.history_path)
                plugin = next((p for p in readers if p.replayer is not None and p.replayer.sniff(head)), None)
                history = plugin.read_history(result.history_path) if plugin is not None else load_history(result.history_path)
                shape = command_shape(history)
            except (OSError, HistoryError) as error:
                reason, detail = "not-replayed-cleanly", f"its command shape cannot be read: {error}"
        entries.append(CorpusEntry(result.history_path, label, digest, result.workflow_type, shape,
                                   measured.get(label, nothing), result.status, reason, detail))
    return entries
