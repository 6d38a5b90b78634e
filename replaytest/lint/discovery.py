"""Which files to lint, what module each one is, and where an imported project module lives.

Directories are walked in sorted order, skipping tool and environment folders, ``exclude`` globs and
(inside a git work tree, by default) what ``.gitignore`` ignores, as git itself decides it; files given
explicitly are always linted, unless ``force_exclude`` applies ``exclude`` to them too (pre-commit names
files explicitly).

Module names follow Python's import system, PEP 420 namespace packages included. A file inside a
regular package (the chain of directories holding ``__init__.py``) is named by that chain. Any other
file is named by its path relative to the deepest *source root* holding it: the ``src`` setting
(like ruff's; default ``[".", "src"]``, relative to the project root), so ``app/util.py`` is
``app.util`` with or without ``app/__init__.py`` and ``src/app/util.py`` is ``app.util`` too.

An imported project module is looked up, in order, under the source roots, the folders that hold the
linted regular packages, and then (automatic detection) every folder between a linted file and the
project root that contains the imported top-level name as a ``.py`` file or a folder: a project whose
modules import each other relative to ``service/src_app`` resolves without configuration. Standard
library names are never looked up in the project. ``unresolved_project_modules`` names the imports that
look like the project's own (their top-level name is a folder or file of the project) but that no root
holds, so the run can say once that helpers in them were not followed.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
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
    """Module names for paths, and the files of imported project modules; directory lookups are cached."""

    def __init__(self, root: Path, source_roots: Sequence[Path] = ()) -> None:
        self.root = root
        # Deepest first: a file is named relative to the innermost source root holding it.
        configured = source_roots or (root, root / "src")
        self.source_roots: tuple[Path, ...] = tuple(sorted(set(configured), key=lambda p: (-len(p.parts), p)))
        self.import_roots: set[Path] = set(self.source_roots)
        self._has_init: dict[Path, bool] = {}
        # Folders that may be on sys.path when the project runs: each linted file's folder and its
        # ancestors up to the project root (or up to the path argument's parent outside the root).
        self._candidate_dirs: set[Path] = set()
        self._listings: dict[Path, frozenset[str]] = {}
        self._located: dict[str, Path | None] = {}

    def _package_dir(self, directory: Path) -> bool:
        known = self._has_init.get(directory)
        if known is None:
            known = (directory / "__init__.py").is_file()
            self._has_init[directory] = known
        return known

    def _source_relative(self, path: Path) -> list[str] | None:
        for source_root in self.source_roots:
            try:
                return list(path.relative_to(source_root).parts)
            except ValueError:
                continue
        try:
            return list(path.relative_to(self.root).parts)
        except ValueError:
            return None

    def names(self, path: Path, ceiling: Path | None = None) -> tuple[str, bool, tuple[str, ...]]:
        """(primary module name, is a package ``__init__``, other names it is importable as).
        ``ceiling`` bounds the candidate import folders of a file outside the project root."""
        is_package = path.name == "__init__.py"
        parts: list[str] = [] if is_package else [path.stem]
        directory = path.parent
        while self._package_dir(directory) and directory.parent != directory:
            parts.insert(0, directory.name)
            directory = directory.parent
        self.import_roots.add(directory)
        self._add_candidates(path.parent, ceiling)
        package_name = ".".join(parts)
        others: list[str] = []
        relative = self._source_relative(path.with_suffix(""))
        if relative and relative[-1] == "__init__":
            relative.pop()
        root_name = ".".join(relative) if relative else ""
        if len(parts) <= 1 and root_name and root_name != package_name:
            # Outside any regular package: a namespace-package name relative to the source root,
            # importable as Python would (PEP 420); the bare file name too, for sibling scripts.
            primary = root_name
            if package_name:
                others.append(package_name)
        else:
            primary = package_name or root_name or path.stem
            if root_name and root_name != primary:
                others.append(root_name)
        return primary, is_package, tuple(others)

    def _add_candidates(self, directory: Path, ceiling: Path | None) -> None:
        top = self.root if directory == self.root or self.root in directory.parents else ceiling
        while directory not in self._candidate_dirs:
            self._candidate_dirs.add(directory)
            if top is None or directory == top or directory.parent == directory:
                break
            directory = directory.parent

    def _listing(self, directory: Path) -> frozenset[str]:
        """Top-level module names a folder offers: its ``*.py`` stems and its sub-folders."""
        known = self._listings.get(directory)
        if known is None:
            names: set[str] = set()
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.name.endswith(".py"):
                            names.add(entry.name[:-3])
                        elif entry.name not in SKIPPED_DIRECTORIES and entry.is_dir():
                            names.add(entry.name)
            except OSError:
                pass
            known = frozenset(names)
            self._listings[directory] = known
        return known

    def _detected_roots(self, top_name: str) -> list[Path]:
        """Folders between the linted files and the project root that hold ``top_name`` (shallowest first)."""
        if top_name in _STDLIB_MODULES:
            return []
        found = [d for d in self._candidate_dirs if d not in self.import_roots and top_name in self._listing(d)]
        return sorted(found, key=lambda p: (len(p.parts), p))

    def locate(self, module: str) -> Path | None:
        """The file of a project module not among the linted files, searched under the import roots and
        then under the automatically detected ones (see the module docstring)."""
        if module in self._located:
            return self._located[module]
        relative = Path(*module.split("."))
        found: Path | None = None
        if relative.parts[0] in _STDLIB_MODULES:  # a project file named json.py never shadows json
            self._located[module] = None
            return None
        roots = [*sorted(self.import_roots), *self._detected_roots(relative.parts[0])]
        for root in roots:
            for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
                if candidate.is_file():
                    found = candidate
                    break
            if found is not None:
                break
        self._located[module] = found
        return found

    def is_namespace_dir(self, module: str) -> bool:
        """A folder (without ``__init__.py``) that Python would import as a namespace package."""
        relative = Path(*module.split("."))
        roots = [*self.import_roots, *self._detected_roots(relative.parts[0])]
        return any((root / relative).is_dir() for root in roots)

    def looks_like_project(self, module: str) -> bool:
        """Its top-level name is a file or folder of the project, in a root or a candidate folder."""
        top = module.split(".")[0]
        if top in _STDLIB_MODULES:
            return False
        return any(top in self._listing(d) for d in (*self.import_roots, *self._candidate_dirs))

    def unresolved_project_modules(self, missing: Iterable[str]) -> list[str]:
        """Of the module names resolution could not load, those that look like the project's own: each
        once, and only the shortest one of a chain (``app.gone`` rather than also ``app.gone.sub``)."""
        candidates = sorted(
            name for name in set(missing)
            if self.looks_like_project(name) and not self.is_namespace_dir(name) and self.locate(name) is None
        )
        kept: list[str] = []
        for name in candidates:
            if not any(name.startswith(f"{shorter}.") for shorter in kept):
                kept.append(name)
        return kept


_STDLIB_MODULES = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset(sys.builtin_module_names)


def resolve_source_roots(root: Path, patterns: Sequence[str]) -> tuple[list[Path], list[str]]:
    """The ``src`` setting's folders (globs allowed, relative to the project root), and the entries that
    match no folder (a configuration error: a typo would otherwise silently lose every helper)."""
    found: list[Path] = []
    unmatched: list[str] = []
    for pattern in patterns:
        if any(char in pattern for char in "*?["):
            matches = sorted(p.resolve() for p in root.glob(pattern) if p.is_dir())
        else:
            candidate = (root / pattern).resolve()
            matches = [candidate] if candidate.is_dir() else []
        if not matches:
            unmatched.append(pattern)
        found.extend(matches)
    return found, unmatched


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

    def add(path: Path, ceiling: Path) -> None:
        absolute = Path(os.path.abspath(path))
        if absolute in seen:
            return
        seen.add(absolute)
        module, is_package, others = namer.names(absolute, ceiling)
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
                add(path, absolute.parent)
        elif absolute.exists() or absolute.is_symlink():
            if force_exclude and is_excluded(_root_relative(absolute, root), exclude):
                leave_out(absolute)
                continue
            add(absolute, absolute.parent)  # explicit files are linted; unreadable ones are reported when read
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
    visible = _git_ls_files(directory, collapse=True)
    if visible is not None and "./" in visible:
        # ``directory`` itself is untracked (a new project folder): collapsed, git would list it as "./"
        # and hide what .gitignore leaves out inside it; list its files one by one instead.
        visible = _git_ls_files(directory, collapse=False)
    return visible


def _git_ls_files(directory: Path, collapse: bool) -> set[str] | None:
    command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    if collapse:
        command.append("--directory")
    try:
        completed = subprocess.run([*command, "--", "."], cwd=directory, capture_output=True, timeout=60, check=False)
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
