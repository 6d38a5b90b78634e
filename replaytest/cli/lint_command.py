"""``replaytest lint`` (its lint run, which ``fix`` and ``check`` share, is ``replaytest.lint_entry``'s, outside the
click package: the hook's lean path runs it without click), the text report's colours, ``--show-settings``, a
file read from stdin, and the fix run behind both ``lint --fix`` and ``fix``."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest.cli.shared import (
    _FORMATS,
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    _json_report,
    _lint_options,
    _safe,
    _setup_failed,
    _usage_error,
    cli,
)
from replaytest.fileio import escape_controls
from replaytest.lint_entry import lint_config as _lint_config
from replaytest.lint_entry import run_lint as _run_lint

if TYPE_CHECKING:
    from replaytest.config import Config
    from replaytest.lint.model import LintResult
    from replaytest.lint.rule import Rule


_FIX_PASSES = 4


def wants_color(choice: str, stream: Any = None) -> bool:
    """Whether text output is coloured: ``always``/``never`` as said; ``auto`` as ruff decides it, a
    non-empty ``FORCE_COLOR`` first, then a non-empty ``NO_COLOR`` (no-color.org), else whether the stream
    is a terminal."""
    import os

    if choice != "auto":
        return choice == "always"
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _colored_report(report: str) -> str:
    """The text report with ruff's colours: the path bold, the rule code bold red, a fix green, the
    summary bold; the text itself unchanged (a pipe given --color always still reads the same words)."""
    import re

    lines = []
    finding = re.compile(r"^(.+?:\d+:\d+:) ([A-Z]+[0-9]+) ")
    for line in report.split("\n"):
        match = finding.match(line)
        if match:
            line = (click.style(match.group(1), bold=True) + " " + click.style(match.group(2), fg="red", bold=True)
                    + " " + line[match.end():])
        elif line.startswith("    fix ("):
            line = click.style(line, fg="green")
        elif line.startswith(("Found ", "All checks passed", "No findings")):
            line = click.style(line, bold=True)
        lines.append(line)
    return "\n".join(lines)


@cli.command()
@_lint_options
@click.option("--format", "--output-format", "output_format", type=click.Choice(_FORMATS), default="text",
              show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option("--whole-project", is_flag=True,
              help="Lint the whole project; report the findings in PATHS and those reached through a helper in "
                   "PATHS (the pre-commit default: a change to a helper shows at the workflow that calls it).")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="Report only findings not recorded in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False, path_type=Path),
              help="Record today's findings in this baseline file and exit 0.")
@click.option("--quiet", "-q", count=True,
              help="No summary line and no progress bar (-qq: nothing but errors, as --silent).")
@click.option("--silent", is_flag=True, help="Print nothing but errors; the exit code still tells (ruff's -qq).")
@click.option("--show-settings", is_flag=True,
              help="Print the settings this lint would use and where each comes from (file, flag or default); "
                   "lint nothing.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the fixes as a unified diff and write nothing (exit 1 when there are fixes), as "
                   "`replaytest fix --diff`.")
@click.option("--fix", "apply_fixes", is_flag=True, help="Apply the fixes, as `replaytest fix` does (ruff's --fix).")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix: also apply fixes marked unsafe.")
@click.option("--show-fixes", is_flag=True,
              help="With --fix: list per file how many findings of each rule were fixed (without --fix each "
                   "finding's fix is printed beneath it anyway).")
@click.option("--statistics", is_flag=True,
              help="Print one line per rule instead of each finding: count, code, [*] when fixable, name.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report to this file instead of stdout (errors and notes stay on stderr).")
@click.option("--stdin-filename", type=click.Path(dir_okay=False, path_type=Path),
              help="With PATHS `-` (or none): read one file's source from stdin and lint it as if it were at "
                   "this path (module name, exclude, per-file-ignores).")
@click.option("--watch", is_flag=True,
              help="Lint again whenever a Python file or the configuration under PATHS changes, clearing the "
                   "screen between runs on a terminal; Ctrl-C stops (exit 0). Needs the watch extra.")
def lint(
    paths: tuple[Path, ...], config_path: Path | None, isolated: bool, select: tuple[str, ...],
    extend_select: tuple[str, ...], ignore: tuple[str, ...], extend_ignore: tuple[str, ...],
    exclude: tuple[str, ...], no_cache: bool, jobs: int | None, force_exclude: bool | None,
    respect_gitignore: bool | None, exit_non_zero_on_fix: bool, color: str, verbose: bool, output_format: str,
    exit_zero: bool, whole_project: bool, baseline: Path | None, write_baseline: Path | None, quiet: int,
    silent: bool, show_settings: bool, show_diff: bool, apply_fixes: bool, unsafe_fixes: bool, show_fixes: bool,
    statistics: bool, output_file: Path | None, stdin_filename: Path | None, watch: bool,
) -> None:
    """Find replay-unsafe code in orchestration functions (default PATHS: the current directory).

    Exit 0 no findings, 1 findings, 2 usage/configuration error or a file that could not be checked."""
    from replaytest.config import ConfigError
    from replaytest.lint.filtering import BaselineError, new_findings, read_baseline
    from replaytest.lint.filtering import write_baseline as store
    from replaytest.lint.reporters import REPORTERS
    from replaytest.lint.rules import RuleLoadError
    from replaytest.plugins import PluginError
    from replaytest.replay.progress import wanted

    if verbose and (quiet or silent):  # as ruff's -v, -q and -s: one level of output, not two at once
        _usage_error(f"-v/--verbose cannot be used with {'--silent' if silent else '-q/--quiet'}: give one of them",
                     output_format)
    quiet = 2 if silent else quiet
    if show_settings:
        sys.exit(_show_settings(paths, config_path, select, ignore, exclude, force_exclude, respect_gitignore,
                                isolated, extend_select, extend_ignore, output_format))
    if watch:
        sys.exit(_watch(paths, config_path, select, ignore, exclude, force_exclude, respect_gitignore, isolated,
                        extend_select, extend_ignore, stdin_filename=stdin_filename, apply_fixes=apply_fixes,
                        show_diff=show_diff, output_format=output_format, write_baseline=write_baseline,
                        output_file=output_file))
    if apply_fixes and show_diff:
        _usage_error("--fix writes the fixes and --diff prints them without writing: give one of them", output_format)
    stdin, paths = _stdin_source(paths, stdin_filename, show_diff, whole_project, output_format)
    if apply_fixes or show_diff:
        flag = "--fix" if apply_fixes else "--diff"
        if output_format not in ("text", "json") or baseline or write_baseline or statistics or output_file:
            click.echo(f"error: {flag} takes the options of `replaytest fix` (--output-format text or json, "
                       f"--unsafe-fixes); run lint without {flag} for the other options", err=True)
            sys.exit(EXIT_ERROR)
        sys.exit(_fix_exit_code(paths, config_path, select, ignore, exclude, no_cache, jobs, force_exclude,
                                respect_gitignore, unsafe_fixes, show_diff, output_format, show_fixes,
                                isolated=isolated, extend_select=extend_select, extend_ignore=extend_ignore,
                                exit_non_zero_on_fix=exit_non_zero_on_fix, verbose=verbose, stdin=stdin))
    if unsafe_fixes:
        click.echo("error: --unsafe-fixes applies fixes only with --fix or --diff", err=True)
        sys.exit(EXIT_ERROR)
    try:
        known = read_baseline(baseline) if baseline is not None else None
        result, rules = _run_lint(paths, config_path, select, ignore, exclude, no_cache, jobs,
                                  wanted(bool(quiet)), force_exclude=force_exclude,
                                  respect_gitignore=respect_gitignore, whole_project=whole_project, stdin=stdin,
                                  isolated=isolated, extend_select=extend_select, extend_ignore=extend_ignore,
                                  verbose=verbose)
    except (ConfigError, PluginError, RuleLoadError, BaselineError) as error:
        _setup_failed(error, output_format)
        return
    for problem in result.problems:
        click.echo(f"error: {problem}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {_safe(warning)}", err=True)
    for note in result.notes:
        click.echo(f"replaytest: {note}", err=True)
    if write_baseline is not None:
        try:
            store(write_baseline, result.diagnostics)
        except OSError as error:
            click.echo(f"error: cannot write the baseline {write_baseline}: {error.strerror or error}", err=True)
            sys.exit(EXIT_ERROR)
        click.echo(f"wrote {len(result.diagnostics)} finding(s) to {write_baseline}", err=True)
        sys.exit(EXIT_ERROR if result.errors else EXIT_CLEAN)
    if known is not None:
        result.diagnostics = new_findings(result.diagnostics, known)
    if statistics:
        from replaytest.lint.reporters.statistics import render_statistics

        report = render_statistics(result, rules, output_format)
    elif output_format in ("sarif", "github", "junit"):
        # CI formats: paths relative to the repository root, wherever in it the job runs.
        report = REPORTERS[output_format](result, rules, cwd=Path.cwd())  # type: ignore[call-arg]
    else:
        report = REPORTERS[output_format](result, rules)
        report = escape_controls(report, keep_newlines=True) if output_format == "text" else report
    colored = False
    if output_format == "text" and not statistics:
        if quiet:  # ruff's -q: the findings without the summary line (a clean run prints nothing)
            report = "".join(report.splitlines(keepends=True)[:-1])
        if output_file is None and wants_color(color):
            report, colored = _colored_report(report), True
    if quiet >= 2:
        report = ""  # --silent / -qq: the exit code says it; errors were printed above
    if output_file is not None:
        try:
            output_file.parent.mkdir(parents=True, exist_ok=True)
            output_file.write_text(report, encoding="utf-8")
        except OSError as error:
            click.echo(f"error: cannot write the report to {_safe(str(output_file))}: {error.strerror or error}",
                       err=True)
            sys.exit(EXIT_ERROR)
    else:
        click.echo(report, nl=False, color=colored or None)
    if result.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.diagnostics and not exit_zero else EXIT_CLEAN)


def _watch(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], force_exclude: bool | None, respect_gitignore: bool | None, isolated: bool,
    extend_select: tuple[str, ...], extend_ignore: tuple[str, ...], *, stdin_filename: Path | None,
    apply_fixes: bool, show_diff: bool, output_format: str, write_baseline: Path | None, output_file: Path | None,
) -> int:
    """``lint --watch``: this same command without ``--watch``, run again on each change (``lint_watch``)."""
    from replaytest.cli.lint_watch import watch_lint, watch_refusal

    problem = watch_refusal(apply_fixes=apply_fixes, show_diff=show_diff,
                            reads_stdin=Path("-") in paths or stdin_filename is not None,
                            output_format=output_format, write_baseline=write_baseline is not None,
                            output_file=output_file is not None)
    if problem is not None:
        _usage_error(problem, output_format)
    once = dict(click.get_current_context().params, watch=False)
    assert lint.callback is not None
    callback = lint.callback
    return watch_lint(lambda: callback(**once), paths, lambda: _lint_config(
        paths, config_path, select, ignore, exclude, force_exclude=force_exclude, respect_gitignore=respect_gitignore,
        isolated=isolated, extend_select=extend_select, extend_ignore=extend_ignore))


def _show_settings(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], force_exclude: bool | None, respect_gitignore: bool | None, isolated: bool,
    extend_select: tuple[str, ...], extend_ignore: tuple[str, ...], output_format: str,
) -> int:
    """``lint --show-settings``: every setting the lint would use and where it came from; the exit code."""
    from replaytest.config import ConfigError
    from replaytest.settings_report import settings_document, settings_lines

    overrides: dict[str, str] = {}
    try:
        config = _lint_config(paths, config_path, select, ignore, exclude, force_exclude=force_exclude,
                              respect_gitignore=respect_gitignore, isolated=isolated, extend_select=extend_select,
                              extend_ignore=extend_ignore, overrides=overrides)
    except ConfigError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        return EXIT_ERROR
    if output_format == "json":
        click.echo(_json_report(settings_document(config, overrides, isolated=isolated)))
    else:
        for line in settings_lines(config, overrides, isolated=isolated):
            click.echo(_safe(line))
    return EXIT_CLEAN


def _stdin_source(
    paths: tuple[Path, ...], stdin_filename: Path | None, show_diff: bool, whole_project: bool, output_format: str,
) -> tuple[tuple[Path, bytes] | None, tuple[Path, ...]]:
    """(stdin file, the paths to lint) for ``lint``: PATHS ``-``, or none with ``--stdin-filename``, read
    one file from stdin; otherwise the paths as given. Combinations that cannot mean one file exit 2."""
    reads_stdin = paths == (Path("-"),) or (stdin_filename is not None and not paths)
    if not reads_stdin:
        if Path("-") in paths:
            _usage_error("`-` (read stdin) cannot be combined with other paths", output_format)
        if stdin_filename is not None:
            _usage_error("--stdin-filename names the file read from stdin: give `-` (or no paths) with it",
                         output_format)
        return None, paths
    if stdin_filename is None:
        _usage_error("reading stdin (`-`) needs --stdin-filename: the path the source would have decides its module "
                     "name, exclude and per-file-ignores", output_format)
    if show_diff or whole_project:
        # --fix is fine: the fixed source goes to stdout, as ruff writes it.
        _usage_error(f"{'--diff' if show_diff else '--whole-project'} cannot be used with a file read from stdin",
                     output_format)
    assert stdin_filename is not None
    return (stdin_filename, sys.stdin.buffer.read()), (stdin_filename,)


def _fix_exit_code(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], no_cache: bool, jobs: int | None, force_exclude: bool | None,
    respect_gitignore: bool | None, unsafe: bool, show_diff: bool, output_format: str, show_fixes: bool = False,
    *, isolated: bool = False, extend_select: tuple[str, ...] = (), extend_ignore: tuple[str, ...] = (),
    exit_non_zero_on_fix: bool = False, verbose: bool = False, stdin: tuple[Path, bytes] | None = None,
) -> int:
    """``fix`` (and ``lint --fix``/``--diff``): lint, apply what ``fixable``/``unfixable`` allow, report; the
    exit code. With ``stdin`` (path, source) the one file read from stdin is fixed in memory and its fixed
    source written to stdout."""
    from replaytest.config import ConfigError
    from replaytest.lint.filtering import may_fix
    from replaytest.lint.fix_runner import fix_stdin, run_fix
    from replaytest.lint.rules import RuleLoadError
    from replaytest.plugins import PluginError

    loaded: list[Config] = []

    def lint_once(source: tuple[Path, bytes] | None = stdin) -> tuple[LintResult, Mapping[str, Rule]]:
        return _run_lint(paths, config_path, select, ignore, exclude, no_cache, jobs,
                         force_exclude=force_exclude, respect_gitignore=respect_gitignore, loaded=loaded,
                         isolated=isolated, extend_select=extend_select, extend_ignore=extend_ignore,
                         verbose=verbose and not loaded, stdin=source)

    setup_errors = (ConfigError, PluginError, RuleLoadError)
    allowed = lambda diagnostic: may_fix(diagnostic, loaded[-1].fixable, loaded[-1].unfixable)  # noqa: E731
    if stdin is not None:
        return fix_stdin(lambda text: lint_once((stdin[0], text)), stdin[1], unsafe=unsafe,
                         output_format=output_format, passes=_FIX_PASSES, setup_errors=setup_errors,
                         allowed=allowed, exit_non_zero_on_fix=exit_non_zero_on_fix)
    return run_fix(
        lint_once, unsafe=unsafe, show_diff=show_diff, output_format=output_format, passes=_FIX_PASSES,
        setup_errors=setup_errors, allowed=allowed, show_fixes=show_fixes, exit_non_zero_on_fix=exit_non_zero_on_fix,
    )
