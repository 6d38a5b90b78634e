"""``HistoryError``: a history file (or dict) that cannot be used, naming the file and the JSON path."""

from __future__ import annotations

from pathlib import Path


class HistoryError(Exception):
    """A history is malformed, of an unknown format or newer version, or a blob does not match its hash.

    ``str()`` reads ``path/to/file.json: $.events[3].kind: expected one of step, model, …``; the file
    part is left out when the history did not come from a file, the JSON path when the problem is the
    file as a whole (unreadable, invalid JSON — then the message gives line and column).
    """

    def __init__(self, path: Path | str | None, json_path: str | None, message: str) -> None:
        self.path = path
        self.json_path = json_path
        self.message = message
        parts = [str(part) for part in (path, json_path) if part is not None]
        super().__init__(": ".join([*parts, message]))
