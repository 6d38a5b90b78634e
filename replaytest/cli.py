"""The ``replaytest`` command line (click): lint, fix, rules, clean, replay, import, diff, redact, check, impact,
corpus, double-run (its own module, ``double_run_cli``).

Commands stay thin: they parse options, load configuration and plugins once, call into ``lint``,
``replay``, ``history`` or a plugin, and map the outcome to an exit code (0 clean, 1 findings or
divergences, 2 usage/configuration error or input that could not be checked).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from replaytest import __version__
from replaytest.config import HAZARD_POLICIES, PROMPT_POLICIES, HazardPolicy, PromptPolicy
from replaytest.fileio import escape_controls

if TYPE_CHECKING:
    from replaytest.config import Config
    from replaytest.gate import CoverageRun
    from replaytest.history.model import History
    from replaytest.history.redact import RedactedFile
    from replaytest.impact.model import ImpactReport
    from replaytest.lint.model import LintResult
    from replaytest.lint.rule import Rule
    from replaytest.replay.adapter import WorkflowSet
    from replaytest.replay.corpus import CorpusEntry, CorpusOutcome
    from replaytest.replay.divergence import ReplayResult
    from replaytest.replay.exclusion import ExcludeSetting, HistorySelection
    from replaytest.replay.reads import FileReads
    from replaytest.replay.shard import Shard, ShardSelection

def _safe(text: str) -> str:
    """One line of output holding names or values from input files, control characters escaped."""
    return escape_controls(text)


def _json_report(document: Any) -> str:
    """A JSON report as written to stdout: non-ASCII text kept, and a file name's bytes that are not UTF-8
    escaped (``fileio.escape_undecodable``), which would otherwise leave a report that does not parse."""
    import json
    import re

    from replaytest.fileio import escape_undecodable

    text = json.dumps(document, indent=2, ensure_ascii=False)
    # A lone surrogate can only be inside a JSON string: its escape (``\\xff``) is written as JSON text.
    return re.sub(r"[\ud800-\udfff]", lambda match: escape_undecodable(match.group()).replace("\\", "\\\\"), text)


EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replaytest")
def cli() -> None:
    """Keep durable-workflow orchestration code replay-safe."""


# --- lint side: lint, fix, rules ----------------------------------------------------------------


_FORMATS = ("text", "json", "sarif", "github")
_FIX_PASSES = 4


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


_COLOR_CHOICES = ("auto", "always", "never")


def _lint_options(function: Callable[..., None]) -> Callable[..., None]:
    """Options shared by ``lint`` and ``fix``."""
    options = [
        click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
        click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Configuration file to read instead of the one found from the first path: a "
                          "replaytest.toml (keys at the top level) or a pyproject.toml ([tool.replaytest])."),
        click.option("--isolated", is_flag=True,
                     help="Ignore every configuration file: each setting its default or the command line's."),
        click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes/prefixes/categories."),
        click.option("--extend-select", multiple=True, metavar="CODES",
                     help="Add these rule codes/prefixes/categories to the selection (the configured one, or --select)."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Also ignore these rule codes/prefixes/categories."),
        click.option("--extend-ignore", multiple=True, metavar="CODES",
                     help="Also ignore these rule codes/prefixes/categories (as --ignore: both add to the configured ignore)."),
        click.option("--exclude", multiple=True, metavar="GLOBS", help="Also exclude these path globs."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the summary cache."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (1 = serial, in-process)."),
        click.option("--force-exclude", is_flag=True, default=None,
                     help="Apply exclude to files named on the command line too (as pre-commit names them)."),
        click.option("--respect-gitignore/--no-respect-gitignore", default=None,
                     help="Leave out what .gitignore ignores when walking directories (default: on)."),
        click.option("--exit-non-zero-on-fix", is_flag=True,
                     help="With fixes applied: exit 1 even when no finding remains (ruff's flag)."),
        click.option("--color", "color", type=click.Choice(_COLOR_CHOICES), default="auto", show_default=True,
                     help="Colour in text output: auto colours a terminal unless NO_COLOR is set (FORCE_COLOR "
                          "forces it)."),
        click.option("--verbose", "-v", is_flag=True,
                     help="Also say on stderr which configuration file was read, the project root and the cache."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


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


def _lint_config(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], *, force_exclude: bool | None = None, respect_gitignore: bool | None = None,
    isolated: bool = False, extend_select: tuple[str, ...] = (), extend_ignore: tuple[str, ...] = (),
    overrides: dict[str, str] | None = None,
) -> Config:
    """The configuration a lint of ``paths`` uses: the file found from the first path (or ``--config``,
    or none with ``--isolated``) with the command line's settings on top. ``overrides`` receives, per
    setting the command line changed, the flag that did (``--show-settings`` says so)."""
    import dataclasses

    from replaytest.config import ConfigError, check_patterns, is_selector, load_config

    check_patterns(None, "--exclude", _split(exclude))
    if isolated and config_path is not None:
        raise ConfigError(None, "--isolated", "ignores every configuration file; it cannot be given with --config")
    targets = list(paths) or [Path(".")]
    first = targets[0]
    config = load_config(first if first.exists() else Path.cwd(), explicit=config_path, isolated=isolated)
    for name, values in (("--select", select), ("--ignore", ignore), ("--extend-select", extend_select),
                         ("--extend-ignore", extend_ignore)):
        for entry in _split(values):
            if not is_selector(entry):
                raise ConfigError(None, name, f"{entry!r} is neither a rule code (RT101, RT1) nor a category")
    chosen = _split(select) or config.select
    if _split(extend_select):  # as in ruff: on top of the selection, which is every rule when none is set
        chosen = (*(chosen or ("ALL",)), *_split(extend_select))
    changed = {
        "select": "--select" if _split(select) else "",
        "ignore": "/".join(flag for flag, values in (("--ignore", ignore), ("--extend-ignore", extend_ignore))
                           if _split(values)),
        "exclude": "--exclude" if _split(exclude) else "",
        "force_exclude": "--force-exclude" if force_exclude is not None else "",
        "respect_gitignore": "--[no-]respect-gitignore" if respect_gitignore is not None else "",
    }
    if _split(extend_select):
        changed["select"] = "/".join(filter(None, (changed["select"], "--extend-select")))
    if overrides is not None:
        overrides.update({key: flag for key, flag in changed.items() if flag})
    return dataclasses.replace(
        config,
        select=chosen,
        ignore=config.ignore + _split(ignore) + _split(extend_ignore),
        exclude=config.exclude + _split(exclude),
        force_exclude=config.force_exclude if force_exclude is None else force_exclude,
        respect_gitignore=config.respect_gitignore if respect_gitignore is None else respect_gitignore,
    )


def _run_lint(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], no_cache: bool, jobs: int | None, show_progress: bool = False, *,
    force_exclude: bool | None = None, respect_gitignore: bool | None = None, whole_project: bool = False,
    loaded: list[Config] | None = None, stdin: tuple[Path, bytes] | None = None, isolated: bool = False,
    extend_select: tuple[str, ...] = (), extend_ignore: tuple[str, ...] = (), verbose: bool = False,
) -> tuple[LintResult, Mapping[str, Rule]]:
    """Load configuration, plugins and rules once, lint, and return (result, rules); raise on setup errors.
    ``loaded`` receives the configuration used (``fix`` reads ``fixable``/``unfixable`` from it); ``stdin``
    is (path, text) of one file read from stdin, linted as if at that path."""
    from replaytest.config import CATEGORIES, ConfigError
    from replaytest.lint.engine import build_context, lint_paths
    from replaytest.lint.filtering import unknown_selectors
    from replaytest.plugins import load_plugins

    targets = list(paths) or [Path(".")]
    config = _lint_config(paths, config_path, select, ignore, exclude, force_exclude=force_exclude,
                          respect_gitignore=respect_gitignore, isolated=isolated, extend_select=extend_select,
                          extend_ignore=extend_ignore)
    if verbose:
        where = ("none (--isolated)" if isolated else
                 str(config.path) if config.path is not None else "none found (every setting its default)")
        click.echo(f"replaytest: configuration file: {_safe(where)}", err=True)
        click.echo(f"replaytest: project root: {_safe(str(config.root))}", err=True)
        click.echo(f"replaytest: cache: {'off (--no-cache)' if no_cache else _safe(str(config.root / config.cache_dir))}",
                   err=True)
    if loaded is not None:
        loaded.append(config)
    if whole_project:  # lint everything; report what PATHS contain or what reaches into them
        from replaytest.lint.scope import reachable_from

        changed = [p for p in targets if not p.is_dir()]
        if changed or not paths:
            targets = [config.root]
    profiles = [plugin.profile for plugin in load_plugins(config.frameworks) if plugin.profile is not None]
    context = build_context(config, profiles)
    for name, values in (("--select", select), ("--ignore", ignore), ("--extend-select", extend_select),
                         ("--extend-ignore", extend_ignore)):
        for entry in unknown_selectors(_split(values), context.rules, CATEGORIES):
            raise ConfigError(None, name, f"{entry!r} is not a known rule code, code prefix or category "
                                          "(`replaytest rules` lists them)")
    from replaytest.replay.progress import Progress

    with Progress("linting", show_progress) as progress:
        result = lint_paths(
            targets, config, profiles, use_cache=not no_cache, jobs=jobs, context=context, progress=progress.update,
            stdin=stdin,
        )
    if whole_project and paths and changed:
        result = reachable_from(result, changed, Path.cwd())
    if verbose:
        click.echo(f"replaytest: {result.files_checked} file(s) checked, {len(context.rules)} rule(s) selected",
                   err=True)
    return result, context.rules


def _setup_failed(error: Exception, output_format: str) -> None:
    import json

    click.echo(f"error: {_safe(str(error))}", err=True)
    if output_format == "json":
        click.echo(json.dumps({"version": 1, "diagnostics": [], "summary": {"files": 0, "diagnostics": 0, "errors": 1}}))
    sys.exit(EXIT_ERROR)


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
def lint(
    paths: tuple[Path, ...], config_path: Path | None, isolated: bool, select: tuple[str, ...],
    extend_select: tuple[str, ...], ignore: tuple[str, ...], extend_ignore: tuple[str, ...],
    exclude: tuple[str, ...], no_cache: bool, jobs: int | None, force_exclude: bool | None,
    respect_gitignore: bool | None, exit_non_zero_on_fix: bool, color: str, verbose: bool, output_format: str,
    exit_zero: bool, whole_project: bool, baseline: Path | None, write_baseline: Path | None, quiet: int,
    silent: bool, show_settings: bool, show_diff: bool, apply_fixes: bool, unsafe_fixes: bool, show_fixes: bool,
    statistics: bool, output_file: Path | None, stdin_filename: Path | None,
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

    quiet = 2 if silent else quiet
    if show_settings:
        sys.exit(_show_settings(paths, config_path, select, ignore, exclude, force_exclude, respect_gitignore,
                                isolated, extend_select, extend_ignore, output_format))
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
    elif output_format in ("sarif", "github"):
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


def _usage_error(message: str, output_format: str) -> None:
    _setup_failed(ValueError(message), output_format)


@cli.command()
@_lint_options
@click.option("--unsafe", "--unsafe-fixes", "unsafe", is_flag=True, help="Also apply fixes marked unsafe.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Write nothing; print a unified diff of what would change (exit 1 when something would).")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: one object with the applied, skipped and remaining fixes.")
@click.option("--show-fixes", is_flag=True, help="After the summary, list per file how many findings of each rule were fixed.")
@click.option("--stdin-filename", type=click.Path(dir_okay=False, path_type=Path),
              help="With PATHS `-` (or none): fix one file's source read from stdin as if it were at this path, "
                   "and write the fixed source to stdout (the summary goes to stderr).")
def fix(
    paths: tuple[Path, ...], config_path: Path | None, isolated: bool, select: tuple[str, ...],
    extend_select: tuple[str, ...], ignore: tuple[str, ...], extend_ignore: tuple[str, ...],
    exclude: tuple[str, ...], no_cache: bool, jobs: int | None, force_exclude: bool | None,
    respect_gitignore: bool | None, exit_non_zero_on_fix: bool, color: str, verbose: bool, unsafe: bool,
    show_diff: bool, output_format: str, show_fixes: bool, stdin_filename: Path | None,
) -> None:
    """Apply the safe fixes (and with --unsafe the unsafe ones) to PATHS, printing each change.

    A file is rewritten only if it is unchanged since it was linted, each replacement is valid where it
    goes, and the result compiles; otherwise it is left as it is and the reason printed.
    Exit 0 when no findings remain, 1 when some remain (with --diff: when something would change;
    with --exit-non-zero-on-fix: also when something was fixed), 2 on errors."""
    stdin: tuple[Path, bytes] | None = None
    if paths == (Path("-"),) or (stdin_filename is not None and not paths):
        if stdin_filename is None:
            _usage_error("reading stdin (`-`) needs --stdin-filename: the path the source would have decides its "
                         "module name, exclude and per-file-ignores", output_format)
        if show_diff:
            _usage_error("--diff cannot be used with a file read from stdin: the fixed source is what is written",
                         output_format)
        assert stdin_filename is not None
        stdin, paths = (stdin_filename, sys.stdin.buffer.read()), (stdin_filename,)
    elif stdin_filename is not None or Path("-") in paths:
        _usage_error("--stdin-filename names the file read from stdin: give `-` (or no paths) with it, and no other "
                     "path", output_format)
    sys.exit(_fix_exit_code(paths, config_path, select, ignore, exclude, no_cache, jobs, force_exclude,
                            respect_gitignore, unsafe, show_diff, output_format, show_fixes, isolated=isolated,
                            extend_select=extend_select, extend_ignore=extend_ignore,
                            exit_non_zero_on_fix=exit_non_zero_on_fix, verbose=verbose, stdin=stdin))


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


@cli.command()
@click.argument("code", required=False)
def rules(code: str | None) -> None:
    """List every rule (code, category, name), or print one rule's documentation."""
    from replaytest.lint.rules import RuleLoadError, load_rules

    try:
        available = load_rules()
    except RuleLoadError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if code is None:
        for rule in available:
            click.echo(f"{rule.code}  {rule.category:<16} {rule.name:<36} {rule.summary}")
        return
    for rule in available:
        if rule.code.upper() == code.upper():
            click.echo(f"# {rule.code} {rule.name} ({rule.category})\n")
            click.echo(rule.documentation())
            return
    click.echo(f"error: unknown rule {code!r}; run `replaytest rules` for the list", err=True)
    sys.exit(EXIT_ERROR)


@cli.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Configuration file to read instead of the one found (replaytest.toml or pyproject.toml).")
def clean(config_path: Path | None) -> None:
    """Delete the cache folder (cache-dir, default .replaytest_cache under the project root): lint summaries,
    green replays and replay-coverage data. Only a folder replaytest made (its README marker) is deleted.

    Exit 0 deleted or nothing to delete, 2 a configuration error or a folder that is not replaytest's."""
    from replaytest import cachedir
    from replaytest.config import ConfigError, load_config

    try:
        config = load_config(Path.cwd(), explicit=config_path)
        folder = config.root / config.cache_dir
        removed = cachedir.remove(folder)
    except (ConfigError, cachedir.CacheDirError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as error:
        click.echo(f"error: cannot delete {_safe(str(folder))}: {error.strerror or error}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"removed {_safe(str(folder))}" if removed else f"nothing to remove: {_safe(str(folder))} does not exist")


# --- replay side: replay, diff, redact ----------------------------------------------------------


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
def replay(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], output_format: str, prompts: PromptPolicy | None,
    prompts_pending: PromptPolicy | None, strict_args: bool | None, hazards: HazardPolicy | None, details: bool,
    quiet: bool, exclude: tuple[str, ...], force_exclude: bool | None, rehearse: bool,
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
                              force_exclude=force_exclude, selected=selected, rehearse=rehearse)
    except _ReplaySetupError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(_json_report(_with_exclusion(report_data(results), selected)))
    else:
        _echo_replay_text(results, details, quiet)
        _echo_exclusion_text(selected, details)
    sys.exit(_replay_exit_code(results))


class _ReplaySetupError(Exception):
    """Replay could not start: configuration, plugins, the current code, or no history files."""


def _run_replay(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], prompts: PromptPolicy | None, strict_args: bool | None,
    details: bool, require_configured: bool = False, *, coverage: CoverageRun | None = None,
    show_progress: bool = False, prompts_pending: PromptPolicy | None = None, skipped: list[int] | None = None,
    hazards: HazardPolicy | None = None,
    exclude: tuple[str, ...] = (), force_exclude: bool | None = None, selected: list[HistorySelection] | None = None,
    loaded: list[WorkflowSet] | None = None, shard: Shard | None = None, sharded: list[ShardSelection] | None = None,
    rehearse: bool = False, reads: FileReads | None = None,
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


@cli.command()
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--details", is_flag=True, help="Show more events of context.")
@click.option("--ignore-args", is_flag=True, help="Compare decisions only (runs on different inputs part where their paths part).")
def diff(a: Path, b: Path, output_format: str, details: bool, ignore_args: bool) -> None:
    """Show where two histories A and B of the same workflow part (first differing command, with context).

    Compares command streams (kind, name, arguments digest, prompt version, patch id), not results.
    Exit 0 identical command streams, 1 they differ, 2 unreadable/malformed or different workflow types."""

    from replaytest.history import HistoryError, load_history
    from replaytest.plugins import load_plugins
    from replaytest.replay.diff import DiffError, diff_histories
    from replaytest.replay.report import display_path, divergence_data, render_divergence
    from replaytest.replay.runner import read_head

    readers = [p for p in load_plugins() if p.history_reader is not None and p.replayer is not None]

    def read(path: Path) -> History:
        # Engine formats (Temporal JSON) are read by their plugin; neutral histories here.
        head = read_head(path)
        plugin = next((p for p in readers if p.replayer is not None and p.replayer.sniff(head)), None)
        return plugin.read_history(path) if plugin is not None else load_history(path)

    try:
        outcome = diff_histories(read(a), read(b), compare_args=not ignore_args)
    except OSError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    except (HistoryError, DiffError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        data = {
            "a": display_path(a), "b": display_path(b), "identical": outcome.identical,
            "divergence": None if outcome.divergence is None else divergence_data(outcome.divergence),
        }
        click.echo(_json_report(data))
    else:
        for label, path, history in (("A", a, outcome.a), ("B", b, outcome.b)):
            click.echo(f"{label}: {_safe(display_path(path))} ({_safe(history.workflow.type)} id {_safe(history.workflow.id)}, "
                       f"{history.status}, {len(history.events)} events)")
        if outcome.divergence is None:
            click.echo("identical command streams")
        else:
            click.echo(render_divergence(outcome.divergence, details, labels=("A", "B")))
    sys.exit(EXIT_CLEAN if outcome.identical else EXIT_FINDINGS)



@cli.command()
@click.option("--key", "keys", multiple=True, metavar="NAME", help="Key name to scrub anywhere in payloads (repeatable).")
@click.option("--path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub, e.g. $.input.customer.email (repeatable).")
@click.option("--in-place", is_flag=True, help="Rewrite each history file.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), help="Write redacted copies into DIR.")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def redact(keys: tuple[str, ...], paths: tuple[str, ...], in_place: bool, out_dir: Path | None, files: tuple[Path, ...]) -> None:
    """Scrub secrets and personal data from history FILES, keeping argument digests so they still replay.

    Without --key/--path the [tool.replaytest.redact] settings apply (key names default to common
    secret and contact fields). A redacted result stored as a blob is written under its new hash; with
    --in-place the old blob is deleted unless another file of the folder still names it (then it is kept
    and the output says which file)."""
    from replaytest.config import ConfigError, load_config
    from replaytest.history import HistoryError, RedactError, Redactor
    from replaytest.history.redact import RedactedFile, redact_file_report

    if in_place == (out_dir is not None):
        raise click.UsageError("give exactly one of --in-place or --out DIR")
    if out_dir is not None and len({source.name for source in files}) < len(files):
        raise click.UsageError("--out DIR would write two FILES with the same name to one place; redact them separately")
    try:
        settings = load_config().redact
        redactor = Redactor.configured(settings, keys, paths)
    except (ConfigError, RedactError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    failed = False
    from replaytest.plugins import load_plugins
    from replaytest.replay.runner import read_head

    # Engine formats (Temporal JSON) are redacted by their plugin; neutral histories here.
    engine_redactors = [p for p in load_plugins() if p.history_redactor is not None and p.replayer is not None]

    for source in files:
        target = source if out_dir is None else out_dir / source.name
        try:
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
            head = read_head(source)
            plugin = next((p for p in engine_redactors if p.replayer is not None and p.replayer.sniff(head)), None)
            if plugin is not None:
                report = RedactedFile(plugin.redact_history_file(source, target, redactor))
            else:
                report = redact_file_report(source, target, redactor)
        except OSError as error:
            click.echo(f"error: {_safe(str(source))}: {error.strerror or error}", err=True)
            failed = True
            continue
        except HistoryError as error:
            click.echo(f"error: {_safe(str(error))}", err=True)
            failed = True
            continue
        click.echo(f"{_safe(str(source))}: {report.replaced} value(s) redacted -> {_safe(str(target))}")
        _say_blobs(report, target)
    sys.exit(EXIT_ERROR if failed else EXIT_CLEAN)


def _say_blobs(report: RedactedFile, target: Path) -> None:
    """What ``redact --in-place`` did with the blobs that held values before redaction."""
    blobs = report.blobs
    for ref in blobs.removed:
        click.echo(f"  removed blob {ref} (it held the value before redaction)")
    for ref, paths in blobs.kept.items():
        others = [path for path in paths if path.resolve() != target.resolve()]
        if others:
            # A blob shared by hundreds of histories: name a few, count the rest.
            named = ", ".join(_safe(str(path)) for path in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            which = "that history is" if len(others) == 1 else "those histories are"
            click.echo(f"  kept blob {ref}: still named by {named}, so it holds the value before redaction "
                       f"until {which} redacted too")
    if blobs.unreadable and blobs.kept:
        click.echo(f"  kept {len(blobs.kept)} blob(s) holding values before redaction: "
                   f"{_safe(str(blobs.unreadable[0]))} cannot be read and may name them")


# --- check: the CI gate --------------------------------------------------------------------------


_CHECK_FORMATS = ("text", "json", "github", "sarif", "junit")


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
            click.echo(escape_controls(REPORTERS["text"](lint_result, rules), keep_newlines=True), nl=False)
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


# --- impact: what a deploy breaks ---------------------------------------------------------------


_IMPACT_FORMATS = ("text", "json", "markdown", "github")


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
    from replaytest.impact.retirement import attach_patches

    selected: list[HistorySelection] = []
    loaded: list[WorkflowSet] = []
    results = _run_replay(paths, workflow_specs, None, None, details, show_progress=show_progress,
                          exclude=exclude, selected=selected, loaded=loaded, rehearse=True, reads=reads)
    report = build_report(results)
    attach_patches(report.workflows, results, workflow_files(loaded[0]))
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


# --- corpus: a small history set that covers what the full set covers ---------------------------


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


# --- import: one subcommand per framework plugin that can fetch histories ------------------------


class _PluginImportGroup(click.Group):
    """Subcommands are the ``import_command`` of each installed plugin, loaded only when ``import`` runs
    (so other commands never import plugin modules for it)."""

    def _plugins(self) -> dict[str, Any]:
        from replaytest.plugins import PluginError, load_plugins

        try:
            plugins = load_plugins()
        except PluginError as error:
            raise click.ClickException(str(error)) from error
        # Keyed by the subcommand's name (``import azure-durable`` for plugin ``azure_durable``); the command
        # itself is imported only when it runs.
        return {name: plugin for plugin in plugins if (name := plugin.import_command_name) is not None}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._plugins())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from replaytest.plugins import PluginError

        plugin = self._plugins().get(cmd_name)
        if plugin is None:
            return None
        try:
            return plugin.load_import_command()  # type: ignore[no-any-return]
        except PluginError as error:
            raise click.ClickException(str(error)) from error


@cli.group("import", cls=_PluginImportGroup)
def import_group() -> None:
    """Fetch histories from a workflow engine into files for replay (one subcommand per framework)."""


# temporalio's native runtime keeps Rust threads that may take the GIL while the interpreter finalises, which
# aborts a process whose command had already finished and printed its result (SIGABRT instead of the exit
# code; temporalio/sdk-python#300, seen once in CI after a refused connection). A command that loaded it
# ends without finalising, after running the exit hooks and flushing the standard streams itself.
_NATIVE_RUNTIME_MODULES = ("temporalio.bridge.temporal_sdk_bridge",)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"): what the interpreter would print, and exit 1
    return 1


def _end_past_native_runtimes(code: object) -> None:
    if not any(name in sys.modules for name in _NATIVE_RUNTIME_MODULES):
        return
    import atexit
    import os
    import threading

    status = _exit_code(code)
    # What finalisation would do before the native threads can bite: wait for non-daemon threads and run
    # threading's shutdown hooks (the Temporal replayer closes its Replayers there), then the atexit hooks.
    shutdown_threads = getattr(threading, "_shutdown", None)
    if shutdown_threads is not None:
        shutdown_threads()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(status)


from replaytest.double_run_cli import double_run  # noqa: E402 - its own module (issue 36)

cli.add_command(double_run)


def main() -> None:
    try:
        cli.main(prog_name="replaytest")
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
    except SystemExit as stop:
        _end_past_native_runtimes(stop.code)
        raise
