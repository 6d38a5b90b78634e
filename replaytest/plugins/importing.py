"""The steps every ``replaytest import <engine>`` command shares, so each engine's importer holds only what reads
its engine: the redactor built from the configuration and the flags (a bad one is exit 2 before anything is
read), the size limit of what it reads in one piece (``import_byte_limit``), the refusal of one run
(``ImportRefused``) and what the import noticed (``ImportNotes``), and the closing summary with its refusals.
Naming and claiming the files written is ``import_files``.

The summary is one line on stdout, ``imported N histories into OUT (M value(s) redacted); K run(s) refused``,
and one ``refused: …`` line per refused run on stderr; a command that refused anything exits 2 after it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from replaytest.config import RedactSettings
    from replaytest.history.redact import Redactor

EXIT_ERROR = 2  # a configuration error or a refused run, as for every replaytest command


class ImportRefused(Exception):
    """A run that cannot be imported faithfully; the message names the run and where in it, and why. The
    importer refuses that run alone and goes on with the others."""


@dataclass
class ImportNotes:
    """What an import noticed besides the histories it wrote: the refused runs (one line each) and how many
    values redaction replaced. An engine's importer adds what only it notices."""

    refused: list[str] = field(default_factory=list)
    redacted: int = 0


def fail(message: str) -> NoReturn:
    """``error: message`` on stderr, exit 2."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def import_redactor(
    no_redact: bool, keys: Sequence[str], paths: Sequence[str], settings: RedactSettings | None = None
) -> Redactor | None:
    """The redactor of this import: ``[tool.replaytest.redact]`` (or ``settings``) plus ``--redact-key`` and
    ``--redact-path``; ``None`` with ``--no-redact``. A configuration or pattern error stops with exit 2."""
    if no_redact:
        return None
    from replaytest.config import ConfigError, load_config
    from replaytest.history.redact import RedactError, Redactor

    try:
        return Redactor.configured(settings if settings is not None else load_config().redact, keys, paths)
    except (ConfigError, RedactError) as error:
        fail(str(error))


def import_byte_limit() -> int:
    """The most bytes an import reads in one piece (a server's answer, a status file): the history size
    limit, ``[tool.replaytest.replay] max-history-bytes``, since what is read becomes histories. A
    configuration error stops with exit 2."""
    from replaytest.config import ConfigError, load_config

    try:
        return load_config().replay.max_history_bytes
    except ConfigError as error:
        fail(str(error))


def histories_counted(count: int) -> str:
    return f"{count} histor{'y' if count == 1 else 'ies'}"


def report_import(
    written: int,
    out_dir: Path,
    *,
    redaction: str | None,
    refused: Sequence[str] = (),
    refused_unit: str = "run",
    extra: Sequence[str] = (),
) -> None:
    """Print the closing summary (``redaction`` in parentheses when given, then the refusal count and any
    ``extra`` clauses) and the refusals; the caller exits 2 when anything was refused."""
    line = f"imported {histories_counted(written)} into {out_dir}"
    if redaction is not None:
        line += f" ({redaction})"
    if refused:
        line += f"; {len(refused)} {refused_unit}(s) refused"
    for clause in extra:
        line += f"; {clause}"
    click.echo(line)
    for reason in refused:
        click.echo(f"refused: {reason}", err=True)


def redaction_said(redactor: Redactor | None, replaced: int) -> str:
    """The summary's parenthesis: what redaction did."""
    return "not redacted" if redactor is None else f"{replaced} value(s) redacted"
