"""Output of third-party libraries during a replay, kept for the report instead of the terminal.

Replaying makes the framework run workflow code that fails on purpose (a divergence, a sandbox
restriction), and frameworks log those failures with tracebacks (temporalio: "Failed activation on
workflow …" through ``logging``). Printed, they bury the report; captured, they belong to the history they
came from and are shown with ``--details``. Python-level writes to ``sys.stderr`` are captured too.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # a record that cannot be formatted must not break the replay
            self.lines.append(f"{record.levelname} {record.name}: {record.msg!r}")


class Captured:
    """What was captured: ``text`` once the block has ended."""

    text: str = ""


@contextmanager
def captured_output() -> Iterator[Captured]:
    """Route every log record (the root logger's handlers are set aside for the block) and every write
    to ``sys.stderr`` into ``Captured.text``. Loggers keep their levels: what a library would not have
    logged stays unlogged."""
    captured = Captured()
    collect = _Collect()
    root = logging.getLogger()
    saved_handlers = root.handlers[:]
    root.handlers[:] = [collect]
    stderr = io.StringIO()
    saved_stderr = sys.stderr
    sys.stderr = stderr
    try:
        yield captured
    finally:
        sys.stderr = saved_stderr
        root.handlers[:] = saved_handlers
        parts = [*collect.lines]
        if stderr.getvalue().strip():
            parts.append(stderr.getvalue().rstrip())
        captured.text = "\n".join(parts)
