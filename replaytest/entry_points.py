"""One entry-point group, and one distribution's version, read from the installed distributions without
importing ``importlib.metadata``.

Every lint run looks for third-party plugins (group ``replaytest.plugins``). ``importlib.metadata``
answers that correctly but costs a one-file run about 15 ms: importing it (email, zipfile, csv) and
building a ``Distribution`` for each of a few hundred installed packages. What it reads is simple: the
``entry_points.txt`` of every ``*.dist-info`` / ``*.egg-info`` folder in each ``sys.path`` directory,
first distribution of a (normalised) name wins. This module reads exactly that, in the same order, and the
``Version`` field of that first folder's ``METADATA`` (``PKG-INFO`` of an ``.egg-info``) for ``version``
(``replaytest.__version__`` is read so on every run: the one place it is written is pyproject.toml).

Where the layout is not that simple — a ``sys.path`` entry that is a zip file or an ``.egg``, or a
metadata finder other than the standard path finder on ``sys.meta_path`` (one that could supply
distributions from elsewhere) — it asks ``importlib.metadata`` instead, so the answer is never a guess.
``tests/test_entry_points.py`` compares both on real and crafted environments.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, NamedTuple

_METADATA_SUFFIXES = (".dist-info", ".egg-info")
# importlib.metadata.EntryPoint.pattern: ``module[:attr[.attr…]] [extras]``.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPoint(NamedTuple):
    name: str
    value: str
    group: str

    def load(self) -> Any:
        """Import the module the value names and return the attribute, as ``EntryPoint.load`` does."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point value {self.value!r} is not 'module:attribute'")
        found: Any = importlib.import_module(match.group("module"))
        for attribute in (match.group("attr") or "").split("."):
            if attribute:
                found = getattr(found, attribute)
        return found


# One scan per process and sys.path: the plugin and the rule groups are both asked for on every lint run.
# (sys.path, the entry points, the first metadata folder of each normalised distribution name), the last
# two None where reading the folders would not be exact.
_scanned: tuple[tuple[str, ...], list[EntryPoint] | None, dict[str, str] | None] | None = None


def _scan() -> tuple[list[EntryPoint] | None, dict[str, str] | None]:
    global _scanned
    path = tuple(sys.path)
    if _scanned is None or _scanned[0] != path:
        folders: dict[str, str] = {}
        found = _read_folders(folders)
        _scanned = (path, found, None if found is None else folders)
    return _scanned[1], _scanned[2]


def version(distribution: str) -> str | None:
    """The installed version of ``distribution``, as ``importlib.metadata.version`` answers it (which is
    asked where the folders cannot be read exactly, or the field is missing); None when no such
    distribution is installed."""
    _, folders = _scan()
    folder = None if folders is None else folders.get(_normalised(distribution))
    if folder is not None:
        headers = _read_text(os.path.join(folder, "PKG-INFO" if folder.lower().endswith(".egg-info") else "METADATA"))
        for line in (headers or "").splitlines():
            if not line.strip():
                break  # the headers end at the first blank line; the description follows
            if line.startswith("Version:"):
                return line[len("Version:"):].strip()
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as metadata_version

    try:
        return metadata_version(distribution)
    except PackageNotFoundError:
        return None


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` across the installed distributions, in ``importlib.metadata`` order."""
    found, _ = _scan()
    if found is None:
        from importlib.metadata import entry_points as metadata_entry_points

        return [EntryPoint(entry.name, entry.value, entry.group) for entry in metadata_entry_points(group=group)]
    return [entry for entry in found if entry.group == group]


def _read_folders(folders: dict[str, str] | None = None) -> list[EntryPoint] | None:
    """Every entry point read straight from the metadata folders; None where that would not be exact.
    ``folders`` receives the first metadata folder of each (normalised) distribution name."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        finder_class = finder if isinstance(finder, type) else type(finder)
        if getattr(finder, "find_distributions", None) is not None and finder_class is not PathFinder:
            return None
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for entry in sys.path:
        directory = entry or "."
        try:
            names = os.listdir(directory)
        except NotADirectoryError:
            return None  # a zip file on sys.path can hold distributions
        except OSError:
            continue  # missing or unreadable: importlib.metadata finds nothing there either
        for name in names:
            lowered = name.lower()
            if lowered.endswith(".egg"):
                return None
            if not lowered.endswith(_METADATA_SUFFIXES):
                continue
            distribution = _normalised(name.rpartition(".")[0].partition("-")[0])
            if distribution in seen:
                continue
            seen.add(distribution)
            if folders is not None:
                folders[distribution] = os.path.join(directory, name)
            text = _read_text(os.path.join(directory, name, "entry_points.txt"))
            if text is not None:
                found.extend(_entries(text))
    return found


def _normalised(name: str) -> str:
    """importlib.metadata's key for "the same distribution": PEP 503 with underscores."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _entries(text: str) -> list[EntryPoint]:
    """The ``name = value`` lines under each ``[group]``, parsed as ``importlib.metadata.Sectioned`` does."""
    entries = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section is None:
            continue
        name, _, value = line.partition("=")
        entries.append(EntryPoint(name.strip(), value.strip(), section))
    return entries
