"""Where importers write: collision-free history file names, and no run's file ever replacing another's.

Every importer (``import dbos``, ``import langgraph``, ``import temporal``) names each file after the ids
it records for the run, as written in the file (after redaction, so a name never shows what the history
hides). ``history_file_name`` keeps an id made of safe characters (``A-Z a-z 0-9 . _ -``) as it is and
gives any other one a hash of the exact ids: ``order_1`` → ``order_1.json``, ``order/1`` →
``order_1-<12 hex>.json``, ``order:1`` → ``order_1-<12 other hex>.json``. Long ids are cut and hashed
the same way, so a name stays within file-system limits.

A name can still be taken: an id crafted to look like another's hashed name, or two ids differing only
in case on a case-insensitive file system. ``ImportFolder.claim`` therefore checks every target before
it is written: a file this import already wrote for another run, or a file already there that records
another run (or is no history this importer can read), is never replaced — that run is refused with a
message naming the file, both runs and the fix. A file recording the *same* run (a re-import) is
replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_HASH_CHARS = 12
# File systems cap a name at 255 bytes; a stem this long is cut and hashed, leaving room for the suffix.
_MAX_STEM = 160


def history_file_name(*ids: str, separator: str = "_") -> str:
    """``ids`` joined by ``separator`` as a file name (``.json``): unchanged when every character is safe,
    else made safe and followed by ``-`` and a hash of the exact ids, so distinct ids get distinct names."""
    safe = [_UNSAFE.sub("_", part) for part in ids]
    stem = separator.join(safe)
    lossless = safe == list(ids) and stem and not stem.startswith(".") and len(stem) <= _MAX_STEM
    if lossless:
        return f"{stem}.json"
    digest = hashlib.sha256("\0".join(ids).encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    stem = stem.lstrip(".")[:_MAX_STEM]
    return f"{stem}-{digest}.json" if stem else f"{digest}.json"


@dataclass(frozen=True)
class RunKey:
    """The run a history file records, as the file records it: ``ids`` are compared, ``label`` is shown."""

    ids: tuple[str | None, ...]
    label: str = field(compare=False)


class ImportCollision(Exception):
    """A run whose file name is taken by another run's file (the message names both and the fix)."""


class ImportFolder:
    """The output folder of one import: hands out targets and refuses any that would replace another run.

    ``recorded_run`` reads the ``RunKey`` an existing file records (``None``: not a history this importer
    reads), from its parsed JSON."""

    def __init__(self, out: Path, recorded_run: Callable[[Any], RunKey | None]) -> None:
        self.out = out
        self.recorded_run = recorded_run
        self.claimed: dict[str, RunKey] = {}

    def claim(self, name: str, run: RunKey) -> Path:
        """The path to write ``run``'s history to; ``ImportCollision`` when another run's file is there."""
        path = self.out / name
        earlier = self.claimed.get(name)
        if earlier is not None and earlier != run:
            raise ImportCollision(
                f"{path}: {run.label} was not written: this import already wrote {earlier.label} there "
                "(their ids give one file name); import it on its own into another folder (--out)"
            )
        if path.is_symlink():
            raise ImportCollision(f"{path}: {run.label} was not written: the path is a symbolic link; remove it or import into another folder (--out)")
        if earlier is None and path.exists():
            existing = self._existing(path)
            if existing != run:
                alias = self._written_as(path)
                if alias is not None:
                    holds = f"holds {self.claimed[alias].label}, written by this import as {alias} (a case-insensitive file system?)"
                elif existing is not None:
                    holds = f"holds {existing.label} from an earlier import"
                else:
                    holds = "is not a history of this engine"
                raise ImportCollision(
                    f"{path}: {run.label} was not written: the file {holds}; move that file away or import "
                    "into another folder (--out)"
                )
        self.claimed[name] = run
        return path

    def _written_as(self, path: Path) -> str | None:
        """The name under which this import wrote the file now found at ``path``, if it did."""
        for name in self.claimed:
            try:
                if os.path.samefile(self.out / name, path):
                    return name
            except OSError:
                continue
        return None

    def _existing(self, path: Path) -> RunKey | None:
        from replaytest.fileio import read_regular

        try:
            data = read_regular(path)
            document = json.loads(data.decode("utf-8-sig"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
        try:
            return self.recorded_run(document)
        except (KeyError, TypeError, AttributeError, IndexError):
            return None


def neutral_run(document: Any, *, engine: str, label: str = "workflow") -> RunKey | None:
    """The ``RunKey`` of a neutral history document of ``engine`` (its workflow type and id: DBOS keeps one
    history per workflow id, LangGraph one per thread); None for any other document."""
    if not isinstance(document, dict) or document.get("format") != "replaytest-history":
        return None
    workflow = document.get("workflow")
    if not isinstance(workflow, dict) or workflow.get("engine", "journal") != engine:
        return None
    type_name, workflow_id = workflow.get("type"), workflow.get("id")
    if not isinstance(type_name, str) or not isinstance(workflow_id, str):
        return None
    return neutral_key(engine, type_name, workflow_id, label)


def neutral_key(engine: str, type_name: str, workflow_id: str, label: str = "workflow") -> RunKey:
    """The ``RunKey`` of a neutral history being written (what ``neutral_run`` reads back from its file)."""
    return RunKey((engine, type_name, workflow_id), f"{label} {workflow_id!r} ({type_name})")
