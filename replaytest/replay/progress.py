"""Progress with counts on stderr for long runs (lint, replay, import), only for a person watching.

A click progress bar when the total is known, a counter rewritten in place when it is not (an import
without ``--limit``); nothing at all when stderr is not a terminal, with ``--quiet``, or for runs too short
to need one (fewer than ``MIN_ITEMS`` items).
"""

from __future__ import annotations

import sys
from typing import Any

import click

MIN_ITEMS = 20


def wanted(quiet: bool) -> bool:
    """Progress only for a person watching: stderr is a terminal and --quiet was not given."""
    return not quiet and sys.stderr.isatty()


class Progress:
    """``update(done, total)`` after each item (``total`` None when unknown); ``close()`` at the end.
    Also a context manager."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled
        self._bar: Any = None
        self._counter = False

    def update(self, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if total is None:
            self._counter = True
            click.echo(f"\r{self.label}: {done}", nl=False, err=True)
            return
        if total < MIN_ITEMS:
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label=self.label, show_pos=True, show_eta=True, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._bar.pos)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        if self._counter:
            click.echo("", err=True)
            self._counter = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
