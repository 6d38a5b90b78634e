"""``replaytest check`` (the CI gate: lint, then replay the configured histories, one report and exit code)
and ``replaytest merge-results`` (one report from the reports of ``check --shard I/N`` runs)."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest.cli.lint_command import _run_lint
from replaytest.cli.replay_command import (
    _echo_exclusion_text,
    _echo_replay_text,
    _replay_exit_code,
    _run_replay,
    _skipped_line,
    _with_exclusion,
)
from replaytest.cli.shared import (
    _CHECK_FORMATS,
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    _json_report,
    _ReplaySetupError,
    _safe,
    cli,
)
from replaytest.config import PROMPT_POLICIES, PromptPolicy
from replaytest.fileio import escape_controls

if TYPE_CHECKING:
    from replaytest.lint.rule import Rule
    from replaytest.replay.exclusion import HistorySelection
    from replaytest.replay.shard import ShardSelection


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--output-format", "--format", "output_format", type=click.Choice(_CHECK_FORMATS), default="text",
              show_default=True, help="github annotations, SARIF and junit cover findings and divergences alike.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the lint summary cache or the replay cache.")
@click.option("--details", is_flag=True, help="Longer divergence reports.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--coverage", "measure_coverage", is_flag=True,
              help="Measure which lines and branches of orchestration code the histories execute, per workflow type.")
@click.option("--coverage-html", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Also write coverage's HTML report into DIR (implies --coverage).")
@click.option("--diff-base", metavar="REV",
              help="List orchestration lines changed since git REV that no history reaches; fail on them (implies --coverage).")
@click.option("--fail-under", type=click.FloatRange(0, 100), metavar="PERCENT",
              help="Fail when replay coverage of changed orchestration lines is below PERCENT (default 100 with --diff-base).")
@click.option("--exclude", multiple=True, metavar="GLOBS",
              help="Also leave out histories matching these globs (relative to the project root; repeatable).")
@click.option("--shard", "shard_spec", metavar="I/N",
              help="Replay only shard I (1-based) of N: histories split by content digest, for a CI matrix of N jobs.")
@click.option("--prompts", type=click.Choice(PROMPT_POLICIES),
              help="Prompt drift policy for every history status, as for replay (default: the configured "
                   "prompts-running / prompts-completed).")
@click.option("--prompts-pending", type=click.Choice(PROMPT_POLICIES),
              help="A prompt a running/parked run has not reached yet that changed since it started, as for replay.")
@click.option("--no-lint", is_flag=True,
              help="Replay only: leave the lint to a job of its own (a CI matrix of --shard jobs would otherwise "
                   "report every finding once per shard). The report says the lint did not run.")
def check(
    paths: tuple[Path, ...], output_format: str, no_cache: bool, details: bool, quiet: bool, measure_coverage: bool,
    coverage_html: Path | None, diff_base: str | None, fail_under: float | None, exclude: tuple[str, ...],
    shard_spec: str | None, prompts: PromptPolicy | None, prompts_pending: PromptPolicy | None, no_lint: bool,
) -> None:
    """The CI gate: lint PATHS (default: the current directory), then replay the configured histories
    against the current code; one report, one exit code. Histories and code come from the same settings
    pytest uses: replay_paths/replay_workflows in the pytest ini ([tool.pytest.ini_options]) first, then
    [tool.replaytest.replay].

    Without configured histories only the lint runs, and the report says so. Exit 0 both clean, 1 findings,
    a divergence or (--diff-base) changed orchestration lines no history reaches, 2 a file or history that
    could not be checked, or a usage/configuration error.

    With --shard I/N only shard I of the histories replays (each history's shard is its content digest mod
    N), and the report says how many of how many it took; the N shards' caches and reports combine
    (replaytest merge-results)."""
    import json

    from replaytest.config import ConfigError, load_config
    from replaytest.gate import CoverageRun, show_progress
    from replaytest.lint.reporters import CI_REPORTERS, REPORTERS
    from replaytest.lint.rules import RuleLoadError
    from replaytest.plugins import PluginError
    from replaytest.replay.annotations import replay_annotations, uncovered_change_annotations
    from replaytest.replay.coverage import CoverageSetupError
    from replaytest.replay.report import display_path, report_data
    from replaytest.replay.settings import replay_plan
    from replaytest.replay.shard import ShardSpecError, parse_shard

    coverage = None
    shard = None
    sharded: list[ShardSelection] = []
    try:
        if shard_spec is not None:
            shard = parse_shard(shard_spec)
            if diff_base is not None or fail_under is not None:
                raise _ReplaySetupError(
                    f"--shard {shard.label} with --diff-base/--fail-under: the uncovered-lines verdict needs the coverage "
                    "of every history, and a shard replays 1/N of them; run the --diff-base gate without --shard"
                )
        if no_lint:
            from replaytest.lint.model import LintResult

            no_rules: Mapping[str, Rule] = {}
            lint_result, rules = LintResult(diagnostics=[], files_checked=0), no_rules
        else:
            lint_result, rules = _run_lint(paths, None, (), (), (), no_cache, None, show_progress(quiet))
        replay_config = load_config()
        plan = replay_plan(replay_config, Path.cwd())
        replay_configured = plan.configured
        if no_lint and not replay_configured:
            raise _ReplaySetupError("--no-lint without configured histories would check nothing: neither "
                                    "replay_paths in [tool.pytest.ini_options] nor paths in [tool.replaytest.replay] "
                                    "is set")
        coverage_flags = [flag for flag, given in (
            ("--coverage", measure_coverage), ("--coverage-html", coverage_html is not None),
            ("--diff-base", diff_base is not None), ("--fail-under", fail_under is not None)) if given]
        if coverage_flags:
            if not replay_configured:
                # Named as the user typed it: --diff-base implies --coverage, but "--coverage needs…" names
                # a flag that was never given.
                raise _ReplaySetupError(
                    f"{'/'.join(coverage_flags)} needs histories (replay coverage): neither replay_paths in "
                    "[tool.pytest.ini_options] nor paths in [tool.replaytest.replay] is set"
                )
            coverage = CoverageRun(replay_config, html_dir=coverage_html, diff_base=diff_base, fail_under=fail_under)
        skipped: list[int] | None = None if no_cache else []
        selected: list[HistorySelection] = []
        results = (
            _run_replay((), (), prompts, None, details, require_configured=True, coverage=coverage,
                        show_progress=show_progress(quiet), skipped=skipped, exclude=exclude, selected=selected,
                        shard=shard, sharded=sharded, prompts_pending=prompts_pending)
            if replay_configured else []
        )
        coverage_text, coverage_failed, uncovered = "", False, []
        coverage_document: dict[str, Any] | None = None
        if coverage is not None:
            workflow_of = {display_path(r.history_path): r.workflow_type for r in results}
            coverage_report, coverage_text, coverage_failed = coverage.report(workflow_of, Path.cwd())
            uncovered = uncovered_change_annotations(coverage_report.uncovered_changed, coverage_failed)
            coverage_document = coverage.document(coverage_report, coverage_failed)
            if shard is not None:
                coverage_text += f"\nnote: coverage of shard {shard.label}'s histories only"
    except (ConfigError, PluginError, RuleLoadError, _ReplaySetupError, CoverageSetupError, ShardSpecError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if plan.stale == "skip":  # replay_stale = skip: a stale history is skipped, as under pytest
        results = [result for result in results if result.status != "stale"]
    for problem in lint_result.problems:
        click.echo(f"error: {problem}", err=True)
    for warning in lint_result.warnings:
        click.echo(f"warning: {_safe(warning)}", err=True)
    if lint_result.errors:
        lint_code = EXIT_ERROR
    else:
        lint_code = EXIT_FINDINGS if lint_result.diagnostics else EXIT_CLEAN
    replay_code = _replay_exit_code(results) if results else EXIT_CLEAN
    if output_format == "json":
        lint_document = json.loads(REPORTERS["json"](lint_result, rules))
        if no_lint:
            lint_document["skipped"] = "--no-lint"
        document = {
            "lint": lint_document,
            "replay": {**_with_exclusion(report_data(results), selected), "skipped": sum(skipped or ()),
                       "shard": sharded[0].data() if sharded else None}
            if replay_configured else None,
            "coverage": coverage_document,  # null without --coverage (or an option implying it)
        }
        click.echo(_json_report(document))
    elif output_format in CI_REPORTERS:
        extra = [*replay_annotations(results, details), *uncovered]
        rendered = CI_REPORTERS[output_format](lint_result, rules, extra=extra, cwd=Path.cwd())
        if sharded:
            from replaytest.replay.shard_reports import mark_shard

            rendered = mark_shard(rendered, output_format, sharded[0])  # for merge-results
        click.echo(rendered, nl=False)
        _echo_exclusion_text(selected, details, err=True)  # beside the machine-readable report, as below
        for share in sharded:
            click.echo(share.line(), err=True)
        if sum(skipped or ()):  # a skipped history has no annotation or test case: say so beside them
            click.echo(_skipped_line(sum(skipped or ())), err=True)
        if not replay_configured:
            click.echo("no histories configured (neither replay_paths in [tool.pytest.ini_options] nor paths in "
                       "[tool.replaytest.replay]); replay skipped", err=True)
        if no_lint:
            click.echo(_LINT_NOT_RUN, err=True)
    else:
        if no_lint:  # never "All checks passed" for a lint that did not run
            click.echo(_LINT_NOT_RUN)
        else:
            lint_text = escape_controls(REPORTERS["text"](lint_result, rules), keep_newlines=True)
            # The lint's own last line ("All checks passed (…)") speaks of the lint alone; the replay's lines
            # follow it, so say whose verdict it is (read alone it looked like the whole check's).
            click.echo(_LINT_VERDICT.sub(r"lint: \1", lint_text), nl=False)
        if replay_configured:
            _echo_replay_text(results, details, quiet=True, skipped=sum(skipped or ()))
            _echo_exclusion_text(selected, details)
            for share in sharded:
                click.echo(share.line())
        else:
            click.echo("no histories configured (neither replay_paths in [tool.pytest.ini_options] nor paths in "
                       "[tool.replaytest.replay]); replay skipped")
    if coverage_text and output_format != "json":
        # The JSON document holds the coverage itself; the other machine-readable formats keep stdout
        # to themselves, so the table goes to stderr beside them.
        click.echo(coverage_text, err=output_format != "text")
    if output_format == "text" and results:
        from replaytest.impact.grouping import divergence_point, summary_lines

        for line in summary_lines(filter(None, map(divergence_point, results))):
            click.echo(line)
    coverage_code = EXIT_FINDINGS if coverage_failed else EXIT_CLEAN
    sys.exit(max(lint_code, replay_code, coverage_code))


_LINT_NOT_RUN = "lint not run (--no-lint): a job of its own lints"
_LINT_VERDICT = re.compile(r"^(All checks passed|Found \d+ finding|No findings)", re.MULTILINE)


@cli.command("merge-results")
@click.argument("reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def merge_results(reports: tuple[Path, ...]) -> None:
    """Merge the reports of `check --shard I/N` runs (one per shard, all JSON, all SARIF or all JUnit) into
    one, written to stdout: lint findings once, every shard's replayed histories, every count worked out
    again from the results (a shard's own summary is not trusted).

    Exit as `check` over all the histories would: 0 only when everything passed, 1 a divergence or lint
    findings in the merged report, 2 a history that could not be checked (stale, error). Exit 2 with nothing
    written for reports that cannot be merged truthfully: a report that is not one of these or is malformed,
    of another format than the others, without a shard mark, a shard missing or given twice, of another N
    or set of histories than the others, shards whose histories do not add up to the total they split, or
    one history in two shards (a history that changed between the shard jobs)."""
    from replaytest.fileio import read_regular
    from replaytest.replay.shard_reports import MergeError, merge_reports

    texts = []
    for path in reports:
        try:
            texts.append((str(path), read_regular(path).decode("utf-8")))
        except (OSError, UnicodeDecodeError) as error:
            click.echo(f"error: {_safe(str(path))}: cannot read the report: {error}", err=True)
            sys.exit(EXIT_ERROR)
    try:
        merged = merge_reports(texts)
    except MergeError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError) as error:
        # A document of the right kind with parts missing that the checks above did not name.
        click.echo(f"error: a report lacks what check writes ({type(error).__name__}: {_safe(str(error))[:200]}); "
                   "merge the unedited output of `replaytest check --shard I/N`", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(merged.text, nl=False)
    sys.exit(merged.exit_code)
