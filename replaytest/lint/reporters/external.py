"""What the reporters need from results that are not lint findings (replay divergences, stale or broken
histories, uncovered changed lines), and where a report's paths are rooted.

``ExternalResult`` is structural, so the replay side produces such results without the linter importing
it. ``repository_root`` finds the top of the git checkout: CI annotations and SARIF URIs must be relative to
it, not to the working directory, or a job with a ``working-directory`` maps them to the wrong files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol


class ExternalResult(Protocol):
    """One checked item of another kind than a lint finding (e.g. one replayed history).

    ``level`` is ``error`` or ``warning`` for a problem and None for an item that passed (junit lists those
    as passing test cases; the other formats leave them out). ``path`` is relative to the working directory
    like a diagnostic's, ``line`` 1-based; ``code`` names the kind (``replay/command-mismatch``).
    ``properties`` are ``(name, value)`` facts about the item (a replayed run's ``run_status``) that junit
    writes as test case properties and SARIF as the result's property bag.
    """

    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def code(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def details(self) -> str: ...
    @property
    def level(self) -> str | None: ...
    @property
    def suite(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def properties(self) -> Sequence[tuple[str, str]]: ...


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a folder, or a file in a worktree or
    submodule), which is what ``git rev-parse --show-toplevel`` answers, without running git."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


class PathRebaser:
    """Turns paths relative to ``cwd`` into paths relative to the repository root (POSIX separators);
    without a repository (or a path outside it) they stay as they were."""

    def __init__(self, cwd: Path | None) -> None:
        self.cwd = cwd.resolve() if cwd is not None else None
        self.root = repository_root(cwd) if cwd is not None else None

    def __call__(self, path: str) -> str:
        if self.cwd is None or self.root is None or not path:
            return path
        absolute = Path(os.path.normpath(self.cwd / path))
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError:
            return path

    @property
    def base_description(self) -> str:
        if self.root is not None:
            return "The top level of the git repository replaytest ran in."
        return "The directory replaytest ran in."
