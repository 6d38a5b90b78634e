"""Which files to lint, what module each one is, and where an imported project module lives.

Directories are walked in sorted order, skipping tool and environment folders, ``exclude`` globs and
(inside a git work tree, by default) what ``.gitignore`` ignores, as git itself decides it; files given
explicitly are always linted, unless ``force_exclude`` applies ``exclude`` to them too (pre-commit names
files explicitly). A file's module name comes from its package (the chain of
directories holding ``__init__.py``); a file outside any package is also known by its path relative to
the project root (with a leading ``src/`` dropped), so both ``import util`` from a sibling script and
``import app.util`` from the root resolve.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

SKIPPED_DIRECTORIES = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox", "build", "dist",
     ".replaytest_cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs"}
)


@dataclass(frozen=True)
class SourceFile:
    path: Path  # absolute
    display: str  # relative to the working directory, POSIX separators
    module: str
    is_package: bool
    other_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class WalkProblem:
    """A path argument that does not exist, or a directory that cannot be listed."""

    display: str
    problem: str


def display_path(path: Path, cwd: Path) -> str:
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:  # another drive on Windows
        relative = str(path)
    return Path(relative).as_posix()


def is_excluded(relative: str, patterns: Sequence[str]) -> bool:
    """``exclude`` globs match the path relative to the project root, or any trailing part of it."""
    if not patterns:
        return False
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        bare = pattern[3:] if pattern.startswith("**/") else pattern
        for start in range(len(parts)):
            candidate = "/".join(parts[start:])
            if fnmatch.fnmatchcase(candidate, bare) or fnmatch.fnmatchcase(candidate, pattern):
                return True
    return False


class ModuleNamer:
    """Module names for paths, with ``__init__.py`` lookups cached per directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._has_init: dict[Path, bool] = {}
        self.import_roots: set[Path] = {root, root / "src"}

    def _package_dir(self, directory: Path) -> bool:
        known = self._has_init.get(directory)
        if known is None:
            known = (directory / "__init__.py").is_file()
            self._has_init[directory] = known
        return known

    def names(self, path: Path) -> tuple[str, bool, tuple[str, ...]]:
        """(primary module name, is a package ``__init__``, other names it is importable as)."""
        is_package = path.name == "__init__.py"
        parts: list[str] = [] if is_package else [path.stem]
        directory = path.parent
        while self._package_dir(directory) and directory.parent != directory:
            parts.insert(0, directory.name)
            directory = directory.parent
        self.import_roots.add(directory)
        package_name = ".".join(parts)
        others: list[str] = []
        try:
            relative = path.relative_to(self.root).with_suffix("")
            rel_parts = list(relative.parts)
            if rel_parts and rel_parts[-1] == "__init__":
                rel_parts.pop()
            if rel_parts and rel_parts[0] == "src":
                rel_parts.pop(0)
            root_name = ".".join(rel_parts)
        except ValueError:
            root_name = ""
        if len(parts) <= 1 and root_name and root_name != package_name:
            # A file outside any package: the root-relative name reads better and is importable from the root.
            primary = root_name
            if package_name:
                others.append(package_name)
        else:
            primary = package_name or root_name or path.stem
            if root_name and root_name != primary:
                others.append(root_name)
        return primary, is_package, tuple(others)

    def locate(self, module: str) -> Path | None:
        """The file of a project module not among the linted files, searched under the import roots."""
        relative = Path(*module.split("."))
        for root in sorted(self.import_roots):
            for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None


def walk(
    arguments: Iterable[Path], *, root: Path, exclude: Sequence[str], cwd: Path, namer: ModuleNamer,
    force_exclude: bool = False, respect_gitignore: bool = False, skipped: list[str] | None = None,
) -> tuple[list[SourceFile], list[WalkProblem]]:
    """The files to lint (each once, sorted within each argument) and the arguments that were unusable.
    Python files left out by ``exclude`` or ``.gitignore`` are appended to ``skipped`` (display paths)."""
    files: list[SourceFile] = []
    problems: list[WalkProblem] = []
    seen: set[Path] = set()
    left_out: list[str] = [] if skipped is None else skipped

    def add(path: Path) -> None:
        absolute = Path(os.path.abspath(path))
        if absolute in seen:
            return
        seen.add(absolute)
        module, is_package, others = namer.names(absolute)
        files.append(SourceFile(absolute, display_path(absolute, cwd), module, is_package, others))

    def unreadable(error: OSError) -> None:
        where = Path(error.filename) if error.filename else absolute
        problems.append(WalkProblem(display_path(where, cwd), f"cannot be listed: {error.strerror or error}"))

    def leave_out(path: Path) -> None:
        left_out.append(display_path(path, cwd))

    for argument in arguments:
        absolute = Path(os.path.abspath(argument))
        if absolute.is_dir():
            visible = git_visible_files(absolute) if respect_gitignore else None
            for path in _walk_directory(absolute, root, exclude, unreadable, leave_out):
                if visible is not None and not _visible(path, absolute, visible):
                    leave_out(path)
                    continue
                add(path)
        elif absolute.exists() or absolute.is_symlink():
            if force_exclude and is_excluded(_root_relative(absolute, root), exclude):
                leave_out(absolute)
                continue
            add(absolute)  # explicit files are linted; unreadable ones are reported when read
        else:
            problems.append(WalkProblem(display_path(absolute, cwd), "no such file or directory"))
    return files, problems


def _root_relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def git_visible_files(directory: Path) -> set[str] | None:
    """Paths under ``directory`` (relative to it, POSIX) that git does not ignore: tracked files plus
    untracked ones no ``.gitignore`` rule matches (a directory entry ends with ``/``). None outside a git
    work tree or without git: then nothing is left out. git decides, so every gitignore rule is honoured."""
    try:
        completed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--directory", "--", "."],
            cwd=directory, capture_output=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    return {entry for entry in completed.stdout.decode("utf-8", "surrogateescape").split("\0") if entry}


def _visible(path: Path, directory: Path, visible: set[str]) -> bool:
    relative = path.relative_to(directory).as_posix()
    if relative in visible:
        return True
    # An untracked directory git lists whole (``new/``), e.g. a nested repository.
    parts = relative.split("/")
    return any("/".join(parts[:end]) + "/" in visible for end in range(1, len(parts)))


def _walk_directory(
    directory: Path, root: Path, exclude: Sequence[str], onerror: Callable[[OSError], None],
    excluded: Callable[[Path], None] = lambda path: None,
) -> Iterator[Path]:
    def relative(path: str) -> str:
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            return Path(path).as_posix()

    for current, dirnames, filenames in os.walk(directory, onerror=onerror, followlinks=False):
        kept = []
        for name in sorted(dirnames):
            if name in SKIPPED_DIRECTORIES or name.endswith(".egg-info"):
                continue
            if is_excluded(relative(os.path.join(current, name)), exclude):
                excluded(Path(current, name))
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = os.path.join(current, name)
            if is_excluded(relative(path), exclude):
                excluded(Path(path))
                continue
            yield Path(path)
