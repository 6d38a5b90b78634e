"""Which history files the replay ``exclude`` globs leave out, and what a run says about that.

The globs mean what lint's ``exclude`` means (``path_patterns``: git's wildmatch, as in ``.gitignore``),
relative to the folder of the setting that holds them (the project root for ``[tool.replaytest.replay]
exclude`` and ``--exclude``, the ini file's folder for pytest's ``replay_exclude``): a history is excluded
when a setting's patterns match the file or a folder above it (a later ``!`` pattern takes it back). As in lint, a history file
named on the command line is replayed even when a glob matches it, unless ``force-exclude`` applies the
globs to named files too (pre-commit names files).

An excluded history is not replayed and gets no result: the summary counts it (and lists it with
details) under the setting that excluded it. A glob that excludes nothing is a note (a typo must not
read as "excluded"); globs that leave no history at all to replay are the caller's error to raise
(``nothing_left``), since a run that checks nothing must not read as a pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from replaytest.config import check_patterns
from replaytest.path_patterns import exclude_matcher, one_pattern


@dataclass(frozen=True)
class ExcludeSetting:
    """The globs of one setting, the folder they are relative to, and how to name the setting."""

    patterns: tuple[str, ...]
    base: Path
    origin: str  # e.g. "[tool.replaytest.replay] exclude in /p/pyproject.toml", "--exclude"

    def __post_init__(self) -> None:
        # A pattern that can match nothing is a usage error naming the setting, wherever the globs came from.
        check_patterns(None, self.origin, self.patterns, table="")


@dataclass(frozen=True)
class ExcludedHistory:
    """A history left out: its file, the glob that matched it and the setting that holds the glob."""

    path: Path
    pattern: str
    origin: str


@dataclass
class HistorySelection:
    """The outcome of applying the exclude settings to the history files of a run."""

    kept: list[Path] = field(default_factory=list)
    excluded: list[ExcludedHistory] = field(default_factory=list)
    unmatched: list[tuple[str, str]] = field(default_factory=list)  # (glob, origin) that matched no history
    # Set when every history was named on the command line and all are excluded (said, not an error).
    nothing_named_left: str | None = None

    def origins(self) -> list[tuple[str, int]]:
        """(setting, how many histories it excluded), in the order the settings first excluded one."""
        counts: dict[str, int] = {}
        for item in self.excluded:
            counts[item.origin] = counts.get(item.origin, 0) + 1
        return list(counts.items())

    def notes(self) -> list[str]:
        notes = [f"exclude glob {pattern!r} ({origin}) matches no history under the replay paths"
                 for pattern, origin in self.unmatched]
        return [*notes, self.nothing_named_left] if self.nothing_named_left else notes


def matching_globs(path: Path, settings: Sequence[ExcludeSetting]) -> list[tuple[str, str]]:
    """The (glob, origin) of each setting that excludes the history ``path`` (the file or a folder above it
    matches, and no later ``!`` pattern of that setting re-includes it): its first pattern that matches."""
    absolute = os.path.abspath(path)
    found = []
    for setting in settings:
        relative = _relative(absolute, os.path.abspath(setting.base))
        if not exclude_matcher(setting.patterns).excludes(relative):
            continue
        found.extend([(pattern, setting.origin) for pattern in setting.patterns
                      if not pattern.startswith("!") and one_pattern(pattern).excludes(relative)][:1])
    return found


def select_histories(
    files: Iterable[Path], settings: Sequence[ExcludeSetting], *, named: Iterable[Path] = (), force: bool = False
) -> HistorySelection:
    """Split ``files`` into kept and excluded (attributed to the first matching glob). ``named`` are the
    history files named on the command line (not folders): kept although a glob matches them, unless
    ``force``."""
    named_keys = {os.path.abspath(path) for path in named}
    selection = HistorySelection()
    matched: set[tuple[str, str]] = set()
    for path in files:
        found = matching_globs(path, settings)
        matched.update(found)
        if not found or (not force and os.path.abspath(path) in named_keys):
            selection.kept.append(path)
        else:
            selection.excluded.append(ExcludedHistory(path, *found[0]))
    # A ``!`` pattern takes histories back rather than leaving them out: never "matches no history".
    selection.unmatched = [(pattern, setting.origin) for setting in settings for pattern in setting.patterns
                           if (pattern, setting.origin) not in matched and not pattern.startswith("!")]
    return selection


def nothing_left(selection: HistorySelection, named_only: bool) -> tuple[bool, str] | None:
    """When the exclude settings leave no history to replay: (only named files were given, message).
    Named files that are all excluded (pre-commit staging only excluded ones) are a note, as in lint;
    folders whose every history is excluded are an error."""
    if selection.kept or not selection.excluded:
        return None
    settings = ", ".join(origin for origin, _ in selection.origins())
    if named_only:
        return True, f"every history given is excluded (by {settings}); nothing to replay"
    return False, (f"nothing to replay: exclude ({settings}) leaves out every history under the replay paths "
                   f"({len(selection.excluded)} excluded)")


def _relative(path: str, base: str) -> str:
    """``path`` relative to ``base`` with POSIX separators, or the whole path outside it (as lint does)."""
    prefix = base if base.endswith(os.sep) else base + os.sep
    if path.startswith(prefix):
        path = path[len(prefix):]
    return path.replace(os.sep, "/")
