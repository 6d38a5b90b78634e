"""The pieces every command shares: the click group ``cli`` the commands register on (each command's module
is imported when that command is asked for, so ``replaytest lint`` loads neither the replay side nor the other
commands), the exit codes, the output format choices, the options ``lint`` and ``fix`` both take, and how a usage or setup error is said
(one line on stderr, exit 2) and how names from input files are printed safely."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from replaytest import __version__
from replaytest.fileio import escape_controls


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


# The module that defines each command (registering it on ``cli``, or, for ``double-run``, defining it to be
# added). A command module imports what it runs only when it runs; this table keeps the modules of the other
# commands (the replay side among them: check, replay, impact, corpus) out of every run.
_COMMAND_MODULES = {
    "check": "replaytest.cli.check_commands",
    "clean": "replaytest.cli.clean_command",
    "corpus": "replaytest.cli.corpus_command",
    "diff": "replaytest.cli.history_commands",
    "double-run": "replaytest.double_run_cli",
    "fix": "replaytest.cli.fix_command",
    "impact": "replaytest.cli.impact_command",
    "import": "replaytest.cli.import_commands",
    "lint": "replaytest.cli.lint_command",
    "merge-results": "replaytest.cli.check_commands",
    "redact": "replaytest.cli.history_commands",
    "replay": "replaytest.cli.replay_command",
    "rules": "replaytest.cli.rules_command",
}


class _LazyGroup(click.Group):
    """The ``replaytest`` group: lists every command, and imports a command's module when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        load_command(cmd_name)
        return self.commands.get(cmd_name)


def load_command(name: str) -> None:
    """Import the module of the command ``name`` (a no-op for a loaded or unknown name); a module that only
    defines its command (``double-run``) has it added to ``cli`` here."""
    if name in cli.commands or name not in _COMMAND_MODULES:
        return
    module = importlib.import_module(_COMMAND_MODULES[name])
    if name not in cli.commands:
        for value in vars(module).values():
            if isinstance(value, click.Command) and value.name == name:
                cli.add_command(value)
                break


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replaytest")
def cli() -> None:
    """Keep durable-workflow orchestration code replay-safe."""


# The output formats of lint, check and impact (the other commands with a --format offer text and json).
_FORMATS = ("text", "json", "sarif", "github", "junit")
_CHECK_FORMATS = ("text", "json", "github", "sarif", "junit")
_IMPACT_FORMATS = ("text", "json", "markdown", "github")


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


def _setup_failed(error: Exception, output_format: str) -> None:
    import json

    click.echo(f"error: {_safe(str(error))}", err=True)
    if output_format == "json":
        click.echo(json.dumps({"version": 1, "diagnostics": [], "summary": {"files": 0, "diagnostics": 0, "errors": 1}}))
    sys.exit(EXIT_ERROR)


def _usage_error(message: str, output_format: str) -> None:
    _setup_failed(ValueError(message), output_format)


class _ReplaySetupError(Exception):
    """Replay could not start: configuration, plugins, the current code, or no history files."""
