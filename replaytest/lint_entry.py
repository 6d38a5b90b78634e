"""The lint run behind ``replaytest lint``, and the command's lean path for the pre-commit hook.

``lint_config`` and ``run_lint`` are the run the click command (``cli/lint_command.py``), ``fix`` and ``check``
share: the configuration from file and flags, plugins and rules loaded once, ``lint_paths``. They live here,
outside the click package, so that the lean path can use them without importing click.

The lean path: ``lean_arguments`` recognises the arguments a pre-commit hook passes (``lint`` with
``--whole-project``, ``--force-exclude``, ``--no-cache``, ``--exit-zero``, ``--format``/``--output-format`` and
plain paths), with stdout and stderr not terminals (no colour, no progress bar); ``run_lean`` runs that lint
and writes what the click command writes, byte for byte, and returns its exit code. Any other argument
(``--help`` among them), a terminal, ``FORCE_COLOR`` or an ASCII-only stream (click re-encodes those) leaves the
run to click. Imports neither click nor another command: a warm one-file hook run spent about a tenth of its
CPU importing click. Runs with the cyclic garbage collector off (see ``run_lean``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replaytest.fileio import escape_controls

if TYPE_CHECKING:
    from replaytest.config import Config
    from replaytest.lint.model import LintResult
    from replaytest.lint.rule import Rule

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

_FORMATS = ("text", "json", "sarif", "github")
_LEAN_FLAGS = {"--whole-project": "whole_project", "--force-exclude": "force_exclude", "--no-cache": "no_cache",
               "--exit-zero": "exit_zero"}


def split_values(values: tuple[str, ...]) -> tuple[str, ...]:
    """Repeated, comma-separated option values as one tuple (``--select A,B --select C``)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _echo_click(message: str, *, err: bool = False, nl: bool = True) -> None:
    import click

    click.echo(message, err=err, nl=nl)


def lint_config(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], *, force_exclude: bool | None = None, respect_gitignore: bool | None = None,
    isolated: bool = False, extend_select: tuple[str, ...] = (), extend_ignore: tuple[str, ...] = (),
    overrides: dict[str, str] | None = None, remember: bool = False,
) -> Config:
    """The configuration a lint of ``paths`` uses: the file found from the first path (or ``--config``,
    or none with ``--isolated``) with the command line's settings on top. ``overrides`` receives, per
    setting the command line changed, the flag that did (``--show-settings`` says so). ``remember``: the file's
    table may come from the record a cached run kept of it (``load_config``)."""
    from replaytest.config import ConfigError, check_patterns, is_selector, load_config
    from replaytest.records import replace

    check_patterns(None, "--exclude", split_values(exclude))
    if isolated and config_path is not None:
        raise ConfigError(None, "--isolated", "ignores every configuration file; it cannot be given with --config")
    targets = list(paths) or [Path(".")]
    first = targets[0]
    config = load_config(first if first.exists() else Path.cwd(), explicit=config_path, isolated=isolated,
                         remember=remember)
    for name, values in (("--select", select), ("--ignore", ignore), ("--extend-select", extend_select),
                         ("--extend-ignore", extend_ignore)):
        for entry in split_values(values):
            if not is_selector(entry):
                raise ConfigError(None, name, f"{entry!r} is neither a rule code (RT101, RT1) nor a category")
    chosen = split_values(select) or config.select
    if split_values(extend_select):  # as in ruff: on top of the selection, which is every rule when none is set
        chosen = (*(chosen or ("ALL",)), *split_values(extend_select))
    changed = {
        "select": "--select" if split_values(select) else "",
        "ignore": "/".join(flag for flag, values in (("--ignore", ignore), ("--extend-ignore", extend_ignore))
                           if split_values(values)),
        "exclude": "--exclude" if split_values(exclude) else "",
        "force_exclude": "--force-exclude" if force_exclude is not None else "",
        "respect_gitignore": "--[no-]respect-gitignore" if respect_gitignore is not None else "",
    }
    if split_values(extend_select):
        changed["select"] = "/".join(filter(None, (changed["select"], "--extend-select")))
    if overrides is not None:
        overrides.update({key: flag for key, flag in changed.items() if flag})
    return replace(
        config,
        select=chosen,
        ignore=config.ignore + split_values(ignore) + split_values(extend_ignore),
        exclude=config.exclude + split_values(exclude),
        force_exclude=config.force_exclude if force_exclude is None else force_exclude,
        respect_gitignore=config.respect_gitignore if respect_gitignore is None else respect_gitignore,
    )


def run_lint(
    paths: tuple[Path, ...], config_path: Path | None, select: tuple[str, ...], ignore: tuple[str, ...],
    exclude: tuple[str, ...], no_cache: bool, jobs: int | None, show_progress: bool = False, *,
    force_exclude: bool | None = None, respect_gitignore: bool | None = None, whole_project: bool = False,
    loaded: list[Config] | None = None, stdin: tuple[Path, bytes] | None = None, isolated: bool = False,
    extend_select: tuple[str, ...] = (), extend_ignore: tuple[str, ...] = (), verbose: bool = False,
) -> tuple[LintResult, Mapping[str, Rule]]:
    """Load configuration, plugins and rules once, lint, and return (result, rules); raise on setup errors.
    ``loaded`` receives the configuration used (``fix`` reads ``fixable``/``unfixable`` from it); ``stdin``
    is (path, text) of one file read from stdin, linted as if at that path. Click (the progress bar,
    ``--verbose``'s lines) is imported only when it is used."""
    from replaytest.config import CATEGORIES, ConfigError
    from replaytest.lint.engine import build_context, lint_paths
    from replaytest.lint.filtering import unknown_selectors
    from replaytest.plugins import load_plugins

    targets = list(paths) or [Path(".")]
    config = lint_config(paths, config_path, select, ignore, exclude, force_exclude=force_exclude,
                         respect_gitignore=respect_gitignore, isolated=isolated, extend_select=extend_select,
                         extend_ignore=extend_ignore, remember=not no_cache)
    if verbose:
        where = ("none (--isolated)" if isolated else
                 str(config.path) if config.path is not None else "none found (every setting its default)")
        _echo_click(f"replaytest: configuration file: {escape_controls(where)}", err=True)
        _echo_click(f"replaytest: project root: {escape_controls(str(config.root))}", err=True)
        cache = "off (--no-cache)" if no_cache else escape_controls(str(config.root / config.cache_dir))
        _echo_click(f"replaytest: cache: {cache}", err=True)
    if loaded is not None:
        loaded.append(config)
    narrow_to = None
    if whole_project:  # lint everything; report what PATHS contain or what reaches into them
        changed = [p for p in targets if not p.is_dir()]
        if changed or not paths:
            targets = [config.root]
        if paths and changed:
            narrow_to = changed
    profiles = [plugin.profile for plugin in load_plugins(config.frameworks) if plugin.profile is not None]
    context = build_context(config, profiles)
    for name, values in (("--select", select), ("--ignore", ignore), ("--extend-select", extend_select),
                         ("--extend-ignore", extend_ignore)):
        for entry in unknown_selectors(split_values(values), context.rules, CATEGORIES):
            raise ConfigError(None, name, f"{entry!r} is not a known rule code, code prefix or category "
                                          "(`replaytest rules` lists them)")
    if show_progress:
        from replaytest.replay.progress import Progress

        with Progress("linting", show_progress) as progress:
            result = lint_paths(targets, config, profiles, use_cache=not no_cache, jobs=jobs, context=context,
                                progress=progress.update, stdin=stdin, reachable_from=narrow_to)
    else:
        result = lint_paths(targets, config, profiles, use_cache=not no_cache, jobs=jobs, context=context,
                            stdin=stdin, reachable_from=narrow_to)
    if verbose:
        _echo_click(f"replaytest: {result.files_checked} file(s) checked, {len(context.rules)} rule(s) selected",
                    err=True)
    return result, context.rules


# --- the lean path ---------------------------------------------------------------------------------------


def lean_arguments(argv: Sequence[str]) -> dict[str, Any] | None:
    """The options of a ``lint`` the lean path runs (see the module docstring), or None for click."""
    if not argv or argv[0] != "lint" or os.name != "posix" or os.environ.get("FORCE_COLOR"):
        return None
    for stream in (sys.stdout, sys.stderr):
        if stream is None or _is_terminal(stream) or _ascii_only(stream):
            return None
    options: dict[str, Any] = {"whole_project": False, "force_exclude": False, "no_cache": False,
                               "exit_zero": False, "output_format": "text"}
    paths: list[Path] = []
    rest = list(argv[1:])
    index = 0
    while index < len(rest):
        argument = rest[index]
        if argument in _LEAN_FLAGS:
            options[_LEAN_FLAGS[argument]] = True
        elif argument in ("--format", "--output-format"):
            if index + 1 == len(rest) or rest[index + 1] not in _FORMATS:
                return None
            options["output_format"] = rest[index + 1]
            index += 1
        elif argument.startswith(("--format=", "--output-format=")):
            value = argument.split("=", 1)[1]
            if value not in _FORMATS:
                return None
            options["output_format"] = value
        elif not argument or argument.startswith("-"):  # another option, "-" (stdin), "--": click's
            return None
        else:
            paths.append(Path(argument))
        index += 1
    options["paths"] = tuple(paths)
    return options


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream: let click say what it says
        return True


def _ascii_only(stream: Any) -> bool:
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii"
    except LookupError:
        return False


def _echo(message: str, *, err: bool = False, nl: bool = True) -> None:
    """What ``click.echo`` writes to a stream that is not a terminal: the message (and a newline), flushed.
    A message holding an escape character goes through click, which strips ANSI sequences there."""
    if "\033" in message:
        _echo_click(message, err=err, nl=nl)
        return
    stream = sys.stderr if err else sys.stdout
    text = message + "\n" if nl else message
    if stream is None or not text:
        return
    stream.write(text)
    stream.flush()


def run_lean(options: Mapping[str, Any]) -> int:
    """``replaytest lint`` with the options ``lean_arguments`` found; its output and exit code are the click
    command's (``cli/lint_command.py``, ``lint``) for the same arguments."""
    import errno
    import gc

    # The process ends with the run, and lint makes almost no reference cycles for the collector to find (a cold
    # run over 785 files left 786 unreachable objects, 0.3 MiB): its passes over every young object were about
    # 4 ms of a warm one-file run's 0.1 s CPU. Reference counting still frees everything else as it goes.
    gc.disable()
    try:
        return _lean_lint(options)
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        # As click does: a reader that went away ends the run with 1, without a second error at exit.
        sys.stdout = _QuietFlush(sys.stdout)
        sys.stderr = _QuietFlush(sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        _echo_click("", err=True)
        _echo_click("Aborted!", err=True)
        return 1


def _lean_lint(options: Mapping[str, Any]) -> int:
    import json

    from replaytest.config import ConfigError
    from replaytest.lint.filtering import BaselineError
    from replaytest.lint.reporters import REPORTERS
    from replaytest.lint.rules import RuleLoadError
    from replaytest.plugins import PluginError

    output_format = options["output_format"]
    try:
        result, rules = run_lint(
            options["paths"], None, (), (), (), options["no_cache"], None, False,
            force_exclude=True if options["force_exclude"] else None, whole_project=options["whole_project"],
        )
    except (ConfigError, PluginError, RuleLoadError, BaselineError) as error:
        _echo(f"error: {escape_controls(str(error))}", err=True)
        if output_format == "json":
            _echo(json.dumps({"version": 1, "diagnostics": [], "summary": {"files": 0, "diagnostics": 0, "errors": 1}}))
        return EXIT_ERROR
    for problem in result.problems:
        _echo(f"error: {problem}", err=True)
    for warning in result.warnings:
        _echo(f"warning: {escape_controls(warning)}", err=True)
    for note in result.notes:
        _echo(f"replaytest: {note}", err=True)
    if output_format in ("sarif", "github"):
        report = REPORTERS[output_format](result, rules, cwd=Path.cwd())  # type: ignore[call-arg]
    else:
        report = REPORTERS[output_format](result, rules)
        report = escape_controls(report, keep_newlines=True) if output_format == "text" else report
    _echo(report, nl=False)
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if result.diagnostics and not options["exit_zero"] else EXIT_CLEAN


class _QuietFlush:
    """A stream whose ``flush`` ignores a closed pipe (the interpreter flushes at exit)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError:
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
