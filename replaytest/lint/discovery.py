"""Which files to lint, what module each one is, and where an imported project module lives.

Directories are walked in sorted order, skipping tool and environment folders, what ``exclude`` matches
and (by default) what the ``.gitignore`` files ignore, read as git reads them (``path_patterns``: git's
wildmatch through ``pathspec``, in or outside a git repository); an excluded or ignored folder is not
entered. Files given explicitly are always linted, unless ``force_exclude`` applies ``exclude`` to them too
(pre-commit names files explicitly).

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
holds, so the run can say once that helpers in them were not followed. A top-level name this interpreter
imports from outside the project (an installed distribution such as the OpenAI Agents SDK's ``agents``,
next to a project folder that happens to be called ``agents``) is third-party, not the project's: Python
itself prefers that regular package to a same-named namespace folder. It is looked up with
``importlib.util.find_spec`` on the top-level name only, which finds without importing anything.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from replaytest.path_patterns import (  # the one meaning of an exclude glob, lint's and replay's
    ExcludeMatcher,
    GitignoreRules,
    exclude_matcher,
)
from replaytest.records import FrozenRecord

SKIPPED_DIRECTORIES = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox", "build", "dist",
     ".replaytest_cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs"}
)


class SourceFile(FrozenRecord):
    """A Python file the run checks: its path, how it is displayed and the module name(s) it has."""

    path: Path  # absolute
    display: str  # relative to the working directory, POSIX separators
    module: str
    is_package: bool
    other_names: tuple[str, ...] = ()

    def __init__(
        self, path: Path, display: str, module: str, is_package: bool, other_names: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(path=path, display=display, module=module, is_package=is_package,
            other_names=other_names)


class WalkProblem(FrozenRecord):
    """A path argument that does not exist, or a directory that cannot be listed."""

    display: str
    problem: str

    def __init__(self, display: str, problem: str) -> None:
        self.__dict__.update(display=display, problem=problem)


class WalkWatch:
    """What a walk's outcome depends on in the file system besides the files' contents: each folder it listed
    and each ``.gitignore``-style file it read or looked for, with the stat each had before (``os.stat_result``;
    None: not there; for a ``.git`` marker, only its kind). A folder's mtime and ctime change when an entry is
    added, removed or renamed in it, so the same stats give the same listing; ``unsure`` is set where they
    would not (a symbolic link, whose target can change kind; a file argument; a folder that could not be
    listed)."""

    def __init__(self) -> None:
        self.folders: list[tuple[str, os.stat_result]] = []
        # As ``GitignoreRules.opened``: a stat, None (absent) or a kind ("dir", "file", "none") per path.
        self.opened: list[tuple[str, os.stat_result | str | None]] = []
        self.unsure = False
        # Per folder listed, (its sub-folders' names, its other entries' names): what the module namer would
        # list it for again (``ModuleNamer.take_listings``).
        self.listings: dict[str, tuple[list[str], list[str]]] = {}


def display_path(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` with POSIX separators (the whole path on another Windows drive)."""
    return _display(os.path.abspath(path), os.path.abspath(cwd))


class ModuleNamer:
    """Module names for paths, and the files of imported project modules; directory lookups are cached.

    Paths are handled as strings inside (``os.path``): a warm run names every linted file and looks up
    every imported project module, and ``pathlib`` made that most of its time (about 0.6 s of 1.1 s
    for 785 files under a profiler). The cached folder listings also decide which roots can hold a
    module at all, so a lookup stats only where the top-level name exists."""

    def __init__(self, root: Path, source_roots: Sequence[Path] = ()) -> None:
        self.root = root
        self._root = os.fspath(root)
        # Deepest first: a file is named relative to the innermost source root holding it.
        configured = source_roots or (root, root / "src")
        self.source_roots: tuple[Path, ...] = tuple(sorted(set(configured), key=lambda p: (-len(p.parts), p)))
        self._source_roots = tuple(os.fspath(p) for p in self.source_roots)
        self._import_roots: set[str] = set(self._source_roots)
        self._has_init: dict[str, bool] = {}
        # Folders that may be on sys.path when the project runs: each linted file's folder and its
        # ancestors up to the project root (or up to the path argument's parent outside the root).
        self._candidate_dirs: set[str] = set()
        self._listings: dict[str, frozenset[str]] = {}
        self._entries: dict[str, frozenset[str] | None] = {}
        self._located: dict[str, Path | None] = {}
        # Detected roots by top-level name; emptied whenever a folder joins the candidates or the roots
        # (a warm run asked 103 times and listed 200 folders each time: 20,000 lookups).
        self._detected: dict[str, list[str]] = {}
        # looks_like_project's verdict per top-level name; cleared with _detected when the folders change.
        self._project_tops: dict[str, bool] = {}
        # Per top-level name, the candidate folders (not import roots) that offer it, from one pass over their
        # listings; and the import roots in lookup order. Both cleared with _detected.
        self._offered_by: dict[str, list[str]] | None = None
        # Listings a walk made, not yet read into _listings and _entries (``take_listings``).
        self._walked_listings: dict[str, tuple[Iterable[str], Iterable[str]]] = {}
        self._roots_in_order: list[str] | None = None
        # Top-level name -> whether this interpreter imports it from outside the project.
        self._installed: dict[str, bool] = {}

    @property
    def import_roots(self) -> frozenset[Path]:
        """Folders imports are looked up under: the source roots and the folders holding linted packages."""
        return frozenset(Path(directory) for directory in self._import_roots)

    def package_markers(self) -> dict[str, bool]:
        """Per folder asked so far, whether it holds an ``__init__.py`` (what named the files in and above it)."""
        return dict(self._has_init)

    def walked_folders(self) -> tuple[list[str], list[str]]:
        """(import roots, candidate folders) the files named so far added: what ``restore_walked`` sets again
        when a run takes a walk's files from the file index instead of naming them."""
        return sorted(self._import_roots), sorted(self._candidate_dirs)

    def restore_walked(self, import_roots: Iterable[str], candidate_dirs: Iterable[str]) -> None:
        self._import_roots.update(import_roots)
        self._candidate_dirs.update(candidate_dirs)
        self._folders_changed()

    def take_listings(self, listings: Mapping[str, tuple[Iterable[str], Iterable[str]]]) -> None:
        """Folder listings a walk made (per folder, its sub-folders' names and its other entries' names), so
        that module lookups do not list those folders again (each is read when a lookup first asks for it)."""
        self._walked_listings.update(listings)

    def _take_walked(self, directory: str) -> bool:
        """Fill ``_listings`` and ``_entries`` of ``directory`` from a walk's listing; False when there is none."""
        listing = self._walked_listings.pop(directory, None)
        if listing is None:
            return False
        folders, files = listing
        offered: set[str] = set()
        entries: set[str] = set()
        for name in (*folders, *files):
            entries.add(name)
            if name.endswith(".py"):
                offered.add(name[:-3])
                entries.add(name[:-3])
        offered.update(name for name in folders if not name.endswith(".py") and name not in SKIPPED_DIRECTORIES)
        self._listings.setdefault(directory, frozenset(offered))
        self._entries.setdefault(directory, frozenset(entries))
        return True

    def _folders_changed(self) -> None:
        self._detected.clear()
        self._project_tops.clear()
        self._offered_by = None
        self._roots_in_order = None

    def _package_dir(self, directory: str) -> bool:
        known = self._has_init.get(directory)
        if known is None:
            known = os.path.isfile(os.path.join(directory, "__init__.py"))
            self._has_init[directory] = known
        return known

    def _source_relative(self, path: str) -> list[str] | None:
        for source_root in self._source_roots:
            parts = _relative_parts(path, source_root)
            if parts is not None:
                return parts
        return _relative_parts(path, self._root)

    def names(self, path: Path, ceiling: Path | None = None) -> tuple[str, bool, tuple[str, ...]]:
        """(primary module name, is a package ``__init__``, other names it is importable as).
        ``ceiling`` bounds the candidate import folders of a file outside the project root."""
        return self._names(os.fspath(path), None if ceiling is None else os.fspath(ceiling))

    def _names(self, path: str, ceiling: str | None) -> tuple[str, bool, tuple[str, ...]]:
        folder, filename = os.path.split(path)
        is_package = filename == "__init__.py"
        stem = _stem(filename)
        parts: list[str] = [] if is_package else [stem]
        directory = folder
        while self._package_dir(directory) and os.path.dirname(directory) != directory:
            parts.insert(0, os.path.basename(directory))
            directory = os.path.dirname(directory)
        if directory not in self._import_roots:
            self._import_roots.add(directory)
            self._folders_changed()
        self._add_candidates(folder, ceiling)
        package_name = ".".join(parts)
        others: list[str] = []
        relative = self._source_relative(os.path.join(folder, stem))
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
            primary = package_name or root_name or stem
            if root_name and root_name != primary:
                others.append(root_name)
        return primary, is_package, tuple(others)

    def _add_candidates(self, directory: str, ceiling: str | None) -> None:
        top = self._root if _relative_parts(directory, self._root) is not None else ceiling
        while directory not in self._candidate_dirs:
            self._candidate_dirs.add(directory)
            self._folders_changed()
            parent = os.path.dirname(directory)
            if top is None or directory == top or parent == directory:
                break
            directory = parent

    def _listing(self, directory: str) -> frozenset[str]:
        """Top-level module names a folder offers: its ``*.py`` stems and its sub-folders."""
        known = self._listings.get(directory)
        if known is None and self._take_walked(directory):
            return self._listings[directory]
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

    def _may_hold(self, directory: str, name: str) -> bool:
        """Whether ``directory`` may hold ``name`` or ``name.py``: one listing per folder (cached), so a
        lookup stats only under the roots that have the module's first part. A folder that cannot be
        listed (execute-only) may still hold it: then the caller stats as before."""
        if directory not in self._entries and not self._take_walked(directory):
            names: set[str] | None = set()
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        names.add(entry.name)  # type: ignore[union-attr]
                        if entry.name.endswith(".py"):
                            names.add(entry.name[:-3])  # type: ignore[union-attr]
            except OSError:
                names = None
            self._entries[directory] = None if names is None else frozenset(names)
        known = self._entries[directory]
        return known is None or name in known

    def _detected_roots(self, top_name: str) -> list[str]:
        """Folders between the linted files and the project root that hold ``top_name`` (shallowest first)."""
        if top_name in _STDLIB_MODULES:
            return []
        known = self._detected.get(top_name)
        if known is None:
            if self._offered_by is None:
                offered_by: dict[str, list[str]] = {}
                for directory in self._candidate_dirs:
                    if directory not in self._import_roots:
                        for name in self._listing(directory):
                            offered_by.setdefault(name, []).append(directory)
                self._offered_by = offered_by
            found = self._offered_by.get(top_name, [])
            known = self._detected[top_name] = sorted(found, key=lambda d: (d.count(os.sep), _path_key(d)))
        return known

    def locate(self, module: str) -> Path | None:
        """The file of a project module not among the linted files, searched under the import roots and
        then under the automatically detected ones (see the module docstring)."""
        if module in self._located:
            return self._located[module]
        parts = [part for part in module.split(".") if part]
        found: str | None = None
        if not parts or parts[0] in _STDLIB_MODULES:  # a project file named json.py never shadows json
            self._located[module] = None
            return None
        if self._roots_in_order is None:
            self._roots_in_order = sorted(self._import_roots, key=_path_key)
        roots = [*self._roots_in_order, *self._detected_roots(parts[0])]
        file_name = os.path.join(*parts[:-1], parts[-1] + ".py")
        package_init = os.path.join(*parts, "__init__.py")
        for root in roots:
            if not self._may_hold(root, parts[0]):
                continue
            for candidate in (os.path.join(root, file_name), os.path.join(root, package_init)):
                if os.path.isfile(candidate):
                    found = candidate
                    break
            if found is not None:
                break
        located = Path(found) if found is not None else None
        self._located[module] = located
        return located

    def is_namespace_dir(self, module: str) -> bool:
        """A folder (without ``__init__.py``) that Python would import as a namespace package."""
        parts = [part for part in module.split(".") if part]
        if not parts:
            return False
        roots = [*self._import_roots, *self._detected_roots(parts[0])]
        return any(self._may_hold(root, parts[0]) and os.path.isdir(os.path.join(root, *parts)) for root in roots)

    def looks_like_project(self, module: str) -> bool:
        """Its top-level name is a file or folder of the project, in a root or a candidate folder."""
        top = module.split(".")[0]
        if top in _STDLIB_MODULES:
            return False
        known = self._project_tops.get(top)
        if known is None:
            known = self._project_tops[top] = any(
                top in self._listing(d) for d in (*self._import_roots, *self._candidate_dirs))
        return known

    def installed_elsewhere(self, module: str) -> bool:
        """Whether this interpreter imports the top-level name of ``module`` from outside the project:
        an installed distribution (site-packages counts as outside even in a ``.venv`` under the project
        root), or a folder on ``sys.path`` that is not the project's. An editable install of the project
        itself resolves into the project, so its names stay the project's."""
        top = module.split(".")[0]
        known = self._installed.get(top)
        if known is None:
            # A regular module or package of the project under that name is what resolution follows (a
            # copy of the project installed into its own environment does not make it third-party).
            known = self._installed[top] = self.locate(top) is None and any(
                _outside_project(location, self._root) for location in _import_locations(top)
            )
        return known

    def held_by_source_root(self, module: str) -> bool:
        """Whether the top-level name of ``module`` is a file or folder directly under a source root or a
        folder holding linted packages (not only under an automatically detected folder)."""
        top = module.split(".")[0]
        return any(top in self._listing(directory) for directory in self._import_roots)

    def unresolved_project_modules(self, missing: Iterable[str]) -> list[str]:
        """Of the module names resolution could not load, those that look like the project's own and that
        no installed distribution provides: each once, and only the shortest one of a chain (``app.gone``
        rather than also ``app.gone.sub``)."""
        candidates = sorted(
            name for name in set(missing)
            if self.looks_like_project(name) and not self.is_namespace_dir(name) and self.locate(name) is None
            and not self.installed_elsewhere(name)
        )
        kept: list[str] = []
        for name in candidates:
            if not any(name.startswith(f"{shorter}.") for shorter in kept):
                kept.append(name)
        return kept


def _stem(name: str) -> str:
    """``PurePath.stem`` for a file name: without its last suffix (a leading or trailing dot is none)."""
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _relative_parts(path: str, base: str) -> list[str] | None:
    """``path`` relative to ``base`` as a list of names (empty for ``base`` itself), None outside it."""
    if path == base:
        return []
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix):].split(os.sep)


def _path_key(path: str) -> list[str]:
    """Sort key ordering string paths as ``PurePath`` objects are ordered (by their parts)."""
    return os.path.normcase(path).split(os.sep)


def _import_locations(top: str) -> list[str]:
    """Where this interpreter would import the top-level module ``top`` from (its file, or its package
    folders), found without importing it; empty when it is not importable here."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # a finder that fails, or a name in sys.modules without a spec
        return []
    if spec is None:
        return []
    locations = list(spec.submodule_search_locations or ())
    if spec.origin and os.path.isabs(spec.origin):
        locations.append(spec.origin)
    return [os.path.abspath(location) for location in locations]


def _site_directories() -> tuple[str, ...]:
    """The interpreter's install folders for distributions (site-packages, the user's included)."""
    import sysconfig  # only when a name is left unresolved: most runs do not pay for importing it

    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("purelib", "platlib") if key in paths}
    user_site = sysconfig.get_paths(f"{os.name}_user") if f"{os.name}_user" in sysconfig.get_scheme_names() else {}
    folders.update(user_site[key] for key in ("purelib", "platlib") if key in user_site)
    return tuple(os.path.abspath(folder) for folder in folders)


def _outside_project(location: str, root: str) -> bool:
    """A location outside the project root, or inside an install folder (a ``.venv`` under the root)."""
    location, root = os.path.realpath(location), os.path.realpath(root)
    if _relative_parts(location, root) is None:
        return True
    return any(_relative_parts(location, os.path.realpath(folder)) is not None for folder in _site_directories())


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
    virtual: Collection[Path] = (), watch: WalkWatch | None = None,
) -> tuple[list[SourceFile], list[WalkProblem]]:
    """The files to lint (each once, sorted within each argument) and the arguments that were unusable.
    Python files left out by ``exclude`` or ``.gitignore`` are appended to ``skipped`` (display paths).
    ``virtual`` are files whose text comes from elsewhere (stdin): they count as existing files. ``watch``
    receives what the outcome depends on in the file system (see ``WalkWatch``)."""
    files: list[SourceFile] = []
    problems: list[WalkProblem] = []
    seen: set[str] = set()
    excluded = exclude_matcher(exclude)
    left_out: list[str] = [] if skipped is None else skipped
    here = os.path.abspath(cwd)
    top = os.fspath(root)
    virtual_files = {Path(os.path.abspath(path)) for path in virtual}

    def add(path: str, ceiling: str) -> None:
        if path in seen:
            return
        seen.add(path)
        module, is_package, others = namer._names(path, ceiling)
        files.append(SourceFile(Path(path), _display(path, here), module, is_package, others))

    def unreadable(error: OSError) -> None:
        where = os.fspath(error.filename) if error.filename else absolute
        problems.append(WalkProblem(_display(os.path.abspath(where), here),
                                    f"cannot be listed: {error.strerror or error}"))

    def leave_out(path: str) -> None:
        left_out.append(_display(path, here))

    for argument in arguments:
        absolute = os.path.abspath(argument)
        if os.path.isdir(absolute):
            opened = watch.opened if watch is not None else None
            ignore = GitignoreRules.above(absolute, top, opened) if respect_gitignore else None
            for path in _walk_directory(absolute, top, excluded, unreadable, leave_out, ignore, watch):
                add(path, os.path.dirname(absolute))
            continue
        if watch is not None:  # a file argument (or none there): the outcome is not only the folders'
            watch.unsure = True
        if os.path.lexists(absolute) or Path(absolute) in virtual_files:
            if force_exclude and excluded.excludes(_root_relative(absolute, top)):
                leave_out(absolute)
                continue
            if Path(absolute) not in virtual_files and not _reads_as_python(absolute):
                problems.append(WalkProblem(_display(absolute, here), NOT_PYTHON))
                continue
            add(absolute, os.path.dirname(absolute))  # explicit files are linted; unreadable ones are reported when read
        else:
            problems.append(WalkProblem(_display(absolute, here), "no such file or directory"))
    return files, problems


# A file named on the command line is linted when its name says Python, or its first line is a python shebang
# (pre-commit's ``types: [python]`` passes such scripts); any other file (``README.md``, ``config.yaml``) is an
# error, not a syntax error or, for text that happens to parse (``x: 1``), a silent pass.
_PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
NOT_PYTHON = "not a Python file (lint reads .py and .pyi files, and scripts whose first line is a python shebang)"


def named_file_problem(path: str) -> str | None:
    """Why the file ``path`` (absolute), named on the command line, cannot be linted, or None: what ``walk``
    says of it (``--whole-project`` lints the project and reports on the files it names)."""
    if not os.path.lexists(path):
        return "no such file or directory"
    return None if os.path.isdir(path) or _reads_as_python(path) else NOT_PYTHON


def _reads_as_python(path: str) -> bool:
    """Whether the explicitly named ``path`` is one lint reads: a Python name or a python shebang. A file that is
    not a regular one or cannot be opened counts as one, so that reading it reports why it was not linted."""
    if path.endswith(_PYTHON_SUFFIXES) or not os.path.isfile(path):
        return True
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return True
    return first.startswith(b"#!") and b"python" in first


def _display(path: str, cwd: str) -> str:
    """``display_path`` for an absolute, normalised string path and working directory."""
    relative = path[len(cwd) + 1:] if path.startswith(cwd) and path[len(cwd):len(cwd) + 1] == os.sep else None
    if not relative:
        try:
            relative = os.path.relpath(path, cwd)
        except ValueError:  # another drive on Windows
            relative = path
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


def _root_relative(path: str, root: str) -> str:
    """``path`` relative to the project root (POSIX separators), or the whole path outside it."""
    parts = _relative_parts(path, root)
    return "/".join(parts) if parts is not None else path.replace(os.sep, "/")


def _walk_directory(
    directory: str, root: str, exclude: ExcludeMatcher, onerror: Callable[[OSError], None],
    excluded: Callable[[str], None] = lambda path: None, ignore: GitignoreRules | None = None,
    watch: WalkWatch | None = None,
) -> Iterator[str]:
    """The ``.py`` files under ``directory`` in ``os.walk``'s top-down order (each folder's files sorted,
    then its sub-folders, sorted, depth first), without following symlinked folders; skipped, excluded and
    ignored folders are not entered. ``ignore`` (None: no ``.gitignore`` is read) holds the rules in force
    above ``directory``; each folder's own ``.gitignore`` joins them for what lies under it. One
    ``os.scandir`` per folder; file types come from the listing. ``watch`` receives each folder listed with
    its stat taken before the listing, and whether an entry's type could change without its folder's stat
    (a symbolic link, an entry whose type could not be read, a folder that could not be listed)."""
    pending: list[tuple[str, GitignoreRules | None]] = [(directory, ignore)]
    while pending:
        current, rules = pending.pop()
        folders: list[tuple[str, bool]] = []
        names: list[str] = []
        others: list[str] = []
        has_gitignore = False
        try:
            if watch is not None:
                watch.folders.append((current, os.stat(current)))
            with os.scandir(current) as entries:
                for entry in entries:
                    try:
                        is_folder = entry.is_dir()
                        if watch is not None and entry.is_symlink():
                            watch.unsure = True
                    except OSError:
                        is_folder = False
                        if watch is not None:
                            watch.unsure = True
                    if is_folder:
                        folders.append((entry.name, entry.is_symlink()))
                    elif entry.name.endswith(".py"):
                        names.append(entry.name)
                    else:
                        others.append(entry.name)
                        has_gitignore = has_gitignore or entry.name == ".gitignore"
        except OSError as error:
            if watch is not None:
                watch.unsure = True
            onerror(error)
            continue
        if watch is not None:
            watch.listings[current] = ([name for name, _ in folders], [*names, *others])
        if rules is not None and has_gitignore:
            rules = rules.below(current)
        kept: list[str] = []
        for name, is_link in sorted(folders):
            if name in SKIPPED_DIRECTORIES or name.endswith(".egg-info"):
                continue
            path = os.path.join(current, name)
            if (exclude and exclude.matches(_root_relative(path, root), is_dir=True)) or (
                    rules and rules.ignored(path, is_dir=True)):
                excluded(path)
                continue
            if not is_link:
                kept.append(path)
        for name in sorted(names):
            path = os.path.join(current, name)
            if (exclude and exclude.matches(_root_relative(path, root))) or (rules and rules.ignored(path, False)):
                excluded(path)
                continue
            yield path
        pending.extend((path, rules) for path in reversed(kept))
