"""The ``replaytest`` command line (click): lint, fix, rules, replay, import, diff, redact, check.

Commands stay thin: they parse options, load configuration and plugins once, call into ``lint``,
``replay``, ``history`` or a plugin, and map the outcome to an exit code (0 clean, 1 findings or
divergences, 2 usage/configuration error or input that could not be checked).
"""

from __future__ import annotations

import sys

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


# --- import: one subcommand per framework plugin that can fetch histories ------------------------


def main() -> None:
    try:
        cli.main(prog_name="replaytest")
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
