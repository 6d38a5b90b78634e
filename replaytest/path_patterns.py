"""What a path pattern means, and which ``.gitignore`` files a directory walk honours.

Every glob setting (lint's ``exclude``/``extend-exclude`` and ``per-file-ignores``, replay's ``exclude``, the
pytest ini's ``replay_exclude`` and the ``--exclude`` flags) and every ``.gitignore`` line means what it means
to git (gitignore's wildmatch, matched by ``pathspec``'s ``GitIgnoreSpec``): ``*`` and ``?`` never cross ``/``,
``**`` does; a pattern with a ``/`` before its end is anchored to the folder it is relative to (``/x`` too),
one without matches a name at any depth; a trailing ``/`` matches folders only; a folder's match covers
everything under it; ``!pattern`` re-includes what an earlier pattern excluded (the last match wins).

``ExcludeMatcher`` compiles a list once. Literal patterns (no wildcard, no ``!``) are set lookups, a name
ending (``*.egg-info/``, ``*_pb2.py``, ``*``, each also after ``**/``) is a suffix test, and only the others
go to ``pathspec`` (which tries its patterns one by one, and whose import alone cost a warm one-file lint run
about 0.012 s), so tens of thousands of generated ``exclude`` entries cost a walk a few lookups per path. A list holding a ``!`` pattern is matched whole, in
order, since the order decides there: by those tests when every pattern is a plain path, name or name ending
(``*`` then ``!.gitignore``, as cache folders hold), else by ``pathspec``, whose ranking they reproduce (a
match of the path itself over a match of a folder above it).

``GitignoreRules`` are the ``.gitignore`` files that apply to a folder being walked: those of the folders
from the top of its git work tree (the folder holding ``.git``; outside a repository, the project root) down
to it, and ``.git/info/exclude``, each relative to its own folder, the deepest deciding first, as git
decides. They are read from the files themselves, so they apply outside a git repository too and no git
process is started.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

    # Files read (or looked for) with their stat before reading, None when absent, or only their kind ("dir",
    # "none") where that is all that decides: see ``GitignoreRules``.
    Opened = list[tuple[str, os.stat_result | str | None]]

# A wildcard or an escape: the pattern is no plain path. An empty, "." or ".." part: no plain path either.
_WILDCARD = re.compile(r"[*?\[\\]")
_ODD_PART = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")


def _spec(lines: Sequence[str]) -> GitIgnoreSpec:
    """``pathspec``'s matcher of ``lines``; imported only when a pattern needs it (a run whose patterns are all
    plain paths, or that has none, does not pay for the import)."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines)


class PatternError(ValueError):
    """A pattern git's wildmatch refuses (``!`` alone, a trailing backslash, a reversed range)."""


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` can never match anything, or None for a usable pattern: what gitignore takes for a
    comment or a blank line, a bare ``/``, or a pattern it refuses."""
    if _simple(pattern[1:] if pattern.startswith("!") else pattern) is not None:
        return None
    try:
        spec = _spec([pattern])
    except Exception as error:  # pathspec's GitIgnorePatternError, re.error for a reversed range
        return f"not a valid pattern ({error})"
    if all(compiled.include is None for compiled in spec.patterns):
        return "matches nothing (gitignore syntax reads it as a comment, a blank line or a bare '/')"
    return None


def _literal(pattern: str) -> tuple[str, bool, bool] | None:
    """``(path, anchored, folders only)`` of a pattern without wildcards, whose meaning is a plain path
    (anchored: relative to the base folder) or a plain name (at any depth); None for any other pattern."""
    if not pattern or pattern[0] in "!# " or pattern[-1] == " " or _WILDCARD.search(pattern):
        return None
    folders_only = pattern.endswith("/")
    body = pattern[:-1] if folders_only else pattern
    anchored = "/" in body
    body = body[1:] if body.startswith("/") else body
    if not body or body != body.strip() or _ODD_PART.search(body):
        return None
    return body, anchored, folders_only


def _name_ending(pattern: str) -> tuple[str, bool] | None:
    """``(ending, folders only)`` of a pattern that matches a name at any depth by how it ends: ``*`` and a
    plain ending (``*.egg-info/``, ``*_pb2.py``), also after a leading ``**/`` (which git reads as "at any
    depth", as a pattern without ``/`` already is); a plain name after ``**/`` is a literal name. None for
    any other pattern. ``*`` matches any run of characters but ``/``, a leading dot included."""
    body = pattern[3:] if pattern.startswith("**/") else pattern
    if not body.startswith("*"):
        return None
    folders_only = body.endswith("/")
    ending = body[1:-1] if folders_only else body[1:]
    if "/" in ending or ending.endswith(" ") or _WILDCARD.search(ending):
        return None
    return ending, folders_only


def _any_depth_name(pattern: str) -> tuple[str, bool] | None:
    """``(name, folders only)`` of ``**/name`` or ``**/name/`` with a plain name: the same as ``name``."""
    if not pattern.startswith("**/"):
        return None
    literal = _literal(pattern[3:])
    if literal is None or literal[1]:  # anchored: a '/' inside, so not one name at any depth
        return None
    return literal[0], literal[2]


def _simple(pattern: str) -> tuple[str, str, bool, bool] | None:
    """``(kind, text, anchored, folders only)`` of a pattern matched without ``pathspec``: kind ``path`` (a
    plain path or name, ``_literal``, ``**/name`` as ``name``) or ``ending`` (``_name_ending``); None else."""
    ending = _name_ending(pattern)
    if ending is not None:
        return "ending", ending[0], False, ending[1]
    name = _any_depth_name(pattern)
    if name is not None:
        return "path", name[0], False, name[1]
    literal = _literal(pattern)
    if literal is not None:
        return "path", literal[0], literal[1], literal[2]
    return None


def _simple_priority(simple: tuple[str, str, bool, bool], parts: list[str], is_dir: bool) -> int:
    """How a simple pattern (``_simple``) matches the path of ``parts``, as ``pathspec`` ranks it: 2 the
    file itself, 1 a folder (one above it, or the path itself asked as a folder), 0 not at all."""
    kind, text, anchored, folders_only = simple
    last = len(parts) - 1
    found = 0
    if anchored:
        depth = text.count("/")
        if depth <= last and "/".join(parts[:depth + 1]) == text:
            found = 2 if depth == last and not is_dir else 1
            if folders_only and depth == last and not is_dir:
                found = 0
        return found
    if kind == "ending" and not text and not folders_only and is_dir:
        return 2  # pathspec matches "*" to the empty name after the slash of "folder/": the path itself
    for index, part in enumerate(parts):
        if part.endswith(text) if kind == "ending" else part == text:
            if index == last and not is_dir:
                if not folders_only:
                    return 2
            else:
                found = 1
    return found


class ExcludeMatcher:
    """A list of patterns compiled once (see the module docstring for their meaning). ``relative`` is a
    ``/``-separated path relative to the folder the patterns are relative to; ``is_dir`` says it is a
    folder (a pattern ending in ``/`` matches folders only)."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._ordered: GitIgnoreSpec | None = None
        self._paths: set[str] = set()
        self._folder_paths: set[str] = set()
        self._names: set[str] = set()
        self._folder_names: set[str] = set()
        self._globs: GitIgnoreSpec | None = None
        self._endings: list[tuple[str, bool]] = []
        globs: list[str] = []
        for pattern in self.patterns:
            ending = _name_ending(pattern)
            if ending is not None:
                self._endings.append(ending)
                continue
            name = _any_depth_name(pattern)
            if name is not None:
                (self._folder_names if name[1] else self._names).add(name[0])
                continue
            literal = _literal(pattern)
            if literal is None:
                problem = pattern_problem(pattern)
                if problem is not None and problem.startswith("not a valid"):
                    raise PatternError(f"{pattern!r}: {problem}")
                globs.append(pattern)
                continue
            body, anchored, folders_only = literal
            if anchored:
                (self._folder_paths if folders_only else self._paths).add(body)
            else:
                (self._folder_names if folders_only else self._names).add(body)
        # With a "!" pattern the order decides: all of them in order, without pathspec when all are simple.
        self._sequence: list[tuple[bool, tuple[str, str, bool, bool]]] | None = None
        if any(pattern.startswith("!") for pattern in globs):
            sequence = [(not pattern.startswith("!"), _simple(pattern.removeprefix("!"))) for pattern in self.patterns]
            if all(simple is not None for _, simple in sequence):
                self._sequence = [(include, simple) for include, simple in sequence if simple is not None]
            else:
                self._ordered = _spec(self.patterns)
        elif globs:
            self._globs = _spec(globs)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def decide(self, relative: str, is_dir: bool = False) -> bool | None:
        """True when the patterns exclude ``relative``, False when a ``!`` pattern re-includes it, None when
        no pattern matches it (an outer ``.gitignore`` decides then)."""
        if not self.patterns:
            return None
        if self._sequence is not None:
            return self._decide_in_order(relative.split("/"), is_dir)
        queried = relative + "/" if is_dir else relative
        if self._ordered is not None:
            return self._ordered.check_file(queried).include
        if self._literal_match(relative, is_dir) or (self._globs is not None and self._globs.match_file(queried)):
            return True
        return None

    def _decide_in_order(self, parts: list[str], is_dir: bool) -> bool | None:
        """``pathspec``'s verdict over patterns in order, for simple ones: the last pattern that matches the
        path itself decides, else the last that matches a folder of it (``_simple_priority``)."""
        assert self._sequence is not None
        folder_verdict: bool | None = None
        for include, simple in reversed(self._sequence):
            priority = _simple_priority(simple, parts, is_dir)
            if priority == 2:
                return include
            if priority == 1 and folder_verdict is None:
                folder_verdict = include
        return folder_verdict

    def matches(self, relative: str, is_dir: bool = False) -> bool:
        return self.decide(relative, is_dir) is True

    def excludes(self, relative: str) -> bool:
        """Whether a walk that leaves excluded folders unentered, as git does, leaves out the file
        ``relative``: a folder above it is excluded, or the file itself is (a ``!`` pattern can take a file
        back, but not out of a folder that is left out whole)."""
        if self._ordered is None and self._sequence is None:
            return self.matches(relative)  # without "!", a folder's match already covers its contents
        start = relative.find("/")
        while start != -1:
            if self.decide(relative[:start], is_dir=True):
                return True
            start = relative.find("/", start + 1)
        return self.matches(relative)

    def _literal_match(self, relative: str, is_dir: bool) -> bool:
        parts = relative.split("/")
        last = len(parts) - 1
        if self._paths or self._folder_paths:
            prefix = ""
            for index, part in enumerate(parts):
                prefix = f"{prefix}/{part}" if prefix else part
                if prefix in self._paths or ((index < last or is_dir) and prefix in self._folder_paths):
                    return True
        if self._names or self._folder_names:
            for index, part in enumerate(parts):
                if part in self._names or ((index < last or is_dir) and part in self._folder_names):
                    return True
        for ending, folders_only in self._endings:
            for index, part in enumerate(parts):
                if part.endswith(ending) and (not folders_only or index < last or is_dir):
                    return True
        return False


_MATCHERS: dict[int, tuple[Sequence[str], ExcludeMatcher]] = {}


def exclude_matcher(patterns: Sequence[str] | ExcludeMatcher) -> ExcludeMatcher:
    """The compiled matcher of ``patterns``, made once per sequence object (a run passes the same list)."""
    if isinstance(patterns, ExcludeMatcher):
        return patterns
    cached = _MATCHERS.get(id(patterns))
    if cached is not None and cached[0] is patterns:
        return cached[1]
    matcher = ExcludeMatcher(patterns)
    if len(_MATCHERS) > 64:
        _MATCHERS.clear()
    _MATCHERS[id(patterns)] = (patterns, matcher)  # holding the sequence keeps its id from being reused
    return matcher


def is_excluded(relative: str, patterns: Sequence[str] | ExcludeMatcher, is_dir: bool = False) -> bool:
    """Whether ``patterns`` exclude ``relative`` (a POSIX path relative to the folder the patterns are
    relative to): the path itself or a folder above it matches. Lint's ``exclude`` and replay's share this."""
    if not patterns:
        return False
    return exclude_matcher(patterns).matches(relative, is_dir)


@functools.lru_cache(maxsize=4096)
def one_pattern(pattern: str) -> ExcludeMatcher:
    """One pattern's compiled matcher, made once (per-file-ignores and replay's exclusion ask per pattern)."""
    return ExcludeMatcher((pattern,))


def glob_matches(relative: str, glob: str) -> bool:
    """A ``per-file-ignores`` key against a file: the pattern's meaning above, and, as in ruff, ``!glob``
    applying to every file ``glob`` does not match."""
    if glob.startswith("!"):
        return not one_pattern(glob[1:]).matches(relative)
    return one_pattern(glob).matches(relative)


class GitignoreRules:
    """The ``.gitignore`` patterns in force in one folder of a walk: ``(folder, patterns)`` pairs, outermost
    first. ``below`` adds a folder's own file; ``ignored`` asks the deepest first, as git does."""

    def __init__(self, levels: tuple[tuple[str, ExcludeMatcher], ...] = (), opened: Opened | None = None) -> None:
        self.levels = levels
        # Every file these rules were read from or looked for, with its stat taken before it was read (None: it
        # was not there; a kind where only that decides), for a caller that must know when the rules could
        # change (the lint walk's record).
        self.opened = opened

    def __bool__(self) -> bool:
        return bool(self.levels)

    @classmethod
    def above(cls, folder: str, project_root: str, opened: Opened | None = None) -> GitignoreRules:
        """The rules in force in ``folder`` (absolute) from outside it: ``.git/info/exclude`` and the
        ``.gitignore`` files of the folders from the work tree's top (else the project root, when ``folder``
        lies in it) down to ``folder``'s parent. ``folder``'s own file is read by the walk (``below``).
        ``opened`` receives every file read or looked for (see ``__init__``)."""
        top, git_dir = _work_tree(folder, opened)
        levels: list[tuple[str, ExcludeMatcher]] = []
        if top is None:
            inside_root = folder == project_root or folder.startswith(project_root.rstrip(os.sep) + os.sep)
            top = project_root if inside_root else folder
        elif git_dir is not None:
            info = _read_patterns(os.path.join(git_dir, "info", "exclude"), opened)
            if info is not None:
                levels.append((top, info))
        chain: list[str] = []
        current = folder
        while current != top:
            parent = os.path.dirname(current)
            if parent == current:
                break
            chain.append(parent)
            current = parent
        for directory in reversed(chain):
            patterns = _read_patterns(os.path.join(directory, ".gitignore"), opened)
            if patterns is not None:
                levels.append((directory, patterns))
        return cls(tuple(levels), opened)

    def below(self, folder: str) -> GitignoreRules:
        """These rules with ``folder``'s own ``.gitignore`` (if it has one) added as the deepest."""
        patterns = _read_patterns(os.path.join(folder, ".gitignore"), self.opened)
        return self if patterns is None else GitignoreRules((*self.levels, (folder, patterns)), self.opened)

    def ignored(self, path: str, is_dir: bool) -> bool:
        for base, patterns in reversed(self.levels):
            relative = path[len(base) + 1:] if path.startswith(base) else path
            verdict = patterns.decide(relative if os.sep == "/" else relative.replace(os.sep, "/"), is_dir)
            if verdict is not None:
                return verdict
        return False


def _work_tree(folder: str, opened: Opened | None = None) -> tuple[str | None, str | None]:
    """(the top of the git work tree holding ``folder``, its git folder) or (None, None) outside one. A
    ``.git`` file (a linked work tree, a submodule) names the git folder; a linked work tree's
    ``info/exclude`` is the main repository's (``commondir``)."""
    current = folder
    while True:
        marker = os.path.join(current, ".git")
        if os.path.isdir(marker):
            if opened is not None:  # the git folder's own stat changes with every commit; its kind decides
                opened.append((marker, "dir"))
            return current, marker
        if os.path.isfile(marker):
            return current, _linked_git_dir(current, marker, opened)
        if opened is not None:
            opened.append((marker, "none"))
        parent = os.path.dirname(current)
        if parent == current:
            return None, None
        current = parent


def _linked_git_dir(top: str, marker: str, opened: Opened | None = None) -> str | None:
    _note_opened(marker, opened)
    try:
        with open(marker, encoding="utf-8") as handle:
            line = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    git_dir = os.path.join(top, line[len("gitdir:"):].strip())
    _note_opened(os.path.join(git_dir, "commondir"), opened)
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            return os.path.normpath(os.path.join(git_dir, handle.readline().strip()))
    except (OSError, UnicodeDecodeError):
        return git_dir


def _note_opened(path: str, opened: Opened | None) -> None:
    """Add ``path`` and its stat now (None when there is nothing there), before it is read, to ``opened``."""
    if opened is None:
        return
    try:
        opened.append((path, os.stat(path)))
    except OSError:
        opened.append((path, None))


def _read_patterns(path: str, opened: Opened | None = None) -> ExcludeMatcher | None:
    """The patterns of a ``.gitignore``-style file, or None when there is none (or it cannot be read: git
    goes on without it too). Lines git discards (invalid patterns) are left out as git leaves them out.
    ``opened`` receives the path and its stat (see ``GitignoreRules``)."""
    _note_opened(path, opened)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    kept = [line for line in _usable(lines)]
    return ExcludeMatcher(kept) if kept else None


def _usable(lines: Iterable[str]) -> Iterable[str]:
    for line in lines:
        if not line or line.startswith("#"):
            continue
        problem = pattern_problem(line)
        if problem is None or not problem.startswith("not a valid"):
            yield line
