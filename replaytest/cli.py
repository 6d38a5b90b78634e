"""The ``replaytest`` command line (click): lint, fix, rules, replay, import, diff, redact, check.

Commands stay thin: they parse options, load configuration and plugins once, call into ``lint``,
``replay``, ``history`` or a plugin, and map the outcome to an exit code (0 clean, 1 findings or
divergences, 2 usage/configuration error or input that could not be checked).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replaytest import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replaytest")
def cli() -> None:
    """Keep durable-workflow orchestration code replay-safe."""


# --- lint side: lint, fix, rules ----------------------------------------------------------------


# --- replay side: replay, diff, redact ----------------------------------------------------------


@cli.command()
@click.option("--key", "keys", multiple=True, metavar="NAME", help="Key name to scrub anywhere in payloads (repeatable).")
@click.option("--path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub, e.g. $.input.customer.email (repeatable).")
@click.option("--in-place", is_flag=True, help="Rewrite each history file.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), help="Write redacted copies into DIR.")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def redact(keys: tuple[str, ...], paths: tuple[str, ...], in_place: bool, out_dir: Path | None, files: tuple[Path, ...]) -> None:
    """Scrub secrets and personal data from history FILES, keeping argument digests so they still replay.

    Without --key/--path the [tool.replaytest.redact] settings apply (key names default to common
    secret and contact fields)."""
    from replaytest.config import ConfigError, load_config
    from replaytest.history import DEFAULT_KEY_NAMES, HistoryError, RedactError, Redactor, redact_file

    if in_place == (out_dir is not None):
        raise click.UsageError("give exactly one of --in-place or --out DIR")
    try:
        settings = load_config().redact
        redactor = Redactor.build(
            keys or settings.key_names or DEFAULT_KEY_NAMES, paths or settings.json_paths, settings.replacement
        )
    except (ConfigError, RedactError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    failed = False
    for source in files:
        target = source if in_place else out_dir / source.name
        try:
            count = redact_file(source, target, redactor)
        except HistoryError as error:
            click.echo(f"error: {error}", err=True)
            failed = True
            continue
        click.echo(f"{source}: {count} value(s) redacted -> {target}")
    sys.exit(EXIT_ERROR if failed else EXIT_CLEAN)


# --- import: one subcommand per framework plugin that can fetch histories ------------------------


def main() -> None:
    try:
        cli.main(prog_name="replaytest")
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
