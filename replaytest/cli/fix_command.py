"""``replaytest fix``: apply the safe (and with ``--unsafe`` the unsafe) fixes; its options are lint's, and
the run is the one ``lint --fix`` makes (``lint_command``), the fixing itself in ``replaytest.lint.fix_runner``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replaytest.cli.lint_command import _fix_exit_code
from replaytest.cli.shared import _lint_options, _usage_error, cli


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
