"""Content-keyed cache of module summaries under ``<root>/<cache-dir>/lint/``.

The key hashes the analyzer fingerprint (tool version, configuration, rule set, profiles, analyzer
code), the module name and the file's bytes, so an edit that keeps size and mtime still misses, and a
summary is reused exactly when it would be recomputed identically. Entries are JSON, written atomically;
an unreadable or corrupt entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from replaytest.lint.model import ModuleSummary, summary_from_json, summary_to_json

_CACHE_README = "Created by replaytest lint. Safe to delete.\n"


def summary_key(fingerprint: str, module: str, is_package: bool, data: bytes) -> str:
    digest = hashlib.sha256()
    digest.update(fingerprint.encode())
    digest.update(b"\0")
    digest.update(f"{module}:{int(is_package)}".encode())
    digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


class SummaryCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory / "lint"
        self._prepared = False

    def get(self, key: str, path: str) -> ModuleSummary | None:
        try:
            with open(self.directory / key[:2] / f"{key}.json", "rb") as handle:
                data = json.load(handle)
            summary = summary_from_json(data)
        except (OSError, ValueError, KeyError, TypeError, RecursionError):  # a damaged entry is a miss
            return None
        return summary if summary.path == path else replace(summary, path=path)

    def put(self, key: str, summary: ModuleSummary) -> None:
        try:
            self._prepare()
            folder = self.directory / key[:2]
            folder.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(summary_to_json(summary), out, separators=(",", ":"))
            os.replace(temporary, folder / f"{key}.json")
        except OSError:
            return  # a read-only checkout lints without caching

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        top = self.directory.parent
        for name, text in (("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"),
                           (".gitignore", "*\n"), ("README", _CACHE_README)):
            marker = top / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")
        self._prepared = True
