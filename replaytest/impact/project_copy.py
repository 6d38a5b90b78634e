"""The copy of the project a version guard is verified in (``ProjectCopy``): what it holds, what it never
holds, and what becomes of symlinks.

The copy is a folder ``replaytest-impact-*`` in the system's temporary folder (``TMPDIR``). It holds what
replaying the project's code needs, and nothing else:

- Python files (``PYTHON_SUFFIXES``: sources, stubs, compiled extension modules) anywhere in the project;
- packaging and configuration files (``CONFIG_NAMES``: ``pyproject.toml``, ``replaytest.toml`` …) anywhere in the
  project;
- every other file under a package folder (a folder holding an ``__init__.py``, and every folder below
  it): the templates, prompts and data a package ships with;
- every file the replay before the verification read, wherever it lies in the project (``reads``: the
  files ``replaytest impact`` saw opened while it imported the workflows and replayed the histories, seen
  by the same audit hook the replay cache keys on, ``replay.reads``; ``relevant`` leaves out the standard
  library, installed packages and replaytest's own files).

Never in the copy, whatever the above says:

- ``NEVER_COPIED``: files and folders that commonly hold secrets, and version control (which holds remote
  URLs with tokens, and the whole history). A folder in a shared temporary folder outlives a process killed
  by SIGKILL, so nothing in it may be worth stealing;
- the folders of tools rather than of the project (``TOOL_FOLDERS``) and virtual environments (a folder
  holding ``pyvenv.cfg``);
- the history files replayed and the ``blobs`` folders beside them: the child replays them where they are;
- the copy's own folder, when the temporary folder is inside the project;
- a file over ``COPY_SIZE_CAP`` bytes of apparent size (a sparse file counts whole), and anything that is
  not a regular file, a folder or a symlink (a FIFO, a socket, a device).

Symlinks: a link whose target, resolved, is inside the project and in the copy becomes a relative link to the
target's copy, so it resolves in the copy as it does in the project; any other link (to outside the project,
to something left out, dangling, a loop) is left out. So the copy never points outside itself: the guarded
replay cannot write into the project through it, and nothing reaches a file the rules above leave out.

What was left out, and why, is kept in ``left_out``; ``notes()`` names each left-out file the replay read,
because the verification then replayed without it and may differ from a replay in the project for that reason.
"""

from __future__ import annotations

import fnmatch
import math
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from replaytest.config import CONFIG_FILE_NAMES
from replaytest.impact.termination import uninterrupted
from replaytest.replay.reads import relevant
from replaytest.replay.settings import PYTEST_INI_NAMES

# Never copied: fnmatch patterns, compared with each file's, folder's and link's name in lower case. Environment
# files and keys; credential stores of tools (netrc, PyPI, npm, Postgres, SSH, cloud and container clients);
# files named for credentials (a module ``credentials.py`` too: a note names it if the replay imported it);
# version control (remote URLs with tokens, the whole history).
NEVER_COPIED = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    ".netrc", ".pypirc", ".npmrc", ".pgpass", ".htpasswd", "credentials*",
    ".ssh", ".aws", ".gnupg", ".docker", ".kube",
    ".git", ".hg", ".svn",
)
# Folders of tools, not of the project: caches, virtual environments by their usual names (any folder holding
# pyvenv.cfg is one too), JavaScript dependencies, build helpers.
TOOL_FOLDERS = frozenset({
    "__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".replaytest_cache", ".eggs",
})
# What an import may load: sources, stubs, compiled extension modules.
PYTHON_SUFFIXES = frozenset({".py", ".pyi", ".so", ".pyd"})
# Packaging and configuration a child replay reads (its settings come from the configuration file found as
# ``config.find_config_file`` finds it: replaytest.toml, .replaytest.toml or pyproject.toml; its replay settings
# from every file pytest reads ini options from, .pytest.ini included).
CONFIG_NAMES = frozenset({*PYTEST_INI_NAMES, *CONFIG_FILE_NAMES})
# The largest file copied, in bytes of apparent size: a prompt, a template or a table of rates is far smaller;
# a data dump or a sparse file of a GiB is no input of a workflow's control flow to copy on every run.
COPY_SIZE_CAP = 8 * 1024 * 1024
# At most this many left-out files are named in the notes; the rest are counted.
_MAX_NOTES = 5


def _size(count: int) -> str:
    """``8 MiB``, ``1.5 GiB``: rounded up to a tenth, so a file just over the cap does not read as the cap."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{math.ceil(count * 10 / size) / 10:.1f} {unit}".replace(".0 ", " ")
    return f"{count} bytes"


def never_copied(name: str) -> bool:
    """Whether a file, folder or link of this name is left out for the secrets it may hold (``NEVER_COPIED``)."""
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in NEVER_COPIED)


class ProjectCopy:
    """A temporary copy of the project (see the module docstring) into which guarded files are written, one
    candidate at a time. ``histories``: the history files replayed (left out, with their ``blobs`` folders);
    ``reads``: the files the replay before read (absolute names as ``replay.reads.FileReads`` recorded them)."""

    def __init__(self, root: Path, histories: Iterable[Path] = (), reads: Iterable[str] = ()) -> None:
        self.root = root.resolve()
        self.left_out: dict[Path, str] = {}  # project path (as walked, not resolved) -> why it is not in the copy
        self._histories = {path.resolve() for path in histories}
        self._blobs = {path.parent / "blobs" for path in self._histories}
        self._read = self._read_files(reads)
        self._copied: set[Path] = set()
        self._folders: set[Path] = {self.root}
        self._written: dict[Path, str | None] = {}  # relative path -> the text to restore (None: no file before)
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        try:
            with uninterrupted():
                self._scratch = tempfile.TemporaryDirectory(prefix="replaytest-impact-")
            self._own_folder = Path(self._scratch.name).resolve()
            self.path = Path(self._scratch.name) / self.root.name
            self.path.mkdir()
            self._link(self._walk())
        except BaseException:
            self.close()  # cut short (SIGTERM, Ctrl-C, an error): no half copy stays
            raise

    def _read_files(self, reads: Iterable[str]) -> set[Path]:
        """The project files read, each as it was named (a link's own path) and as it resolves."""
        read: set[Path] = set()
        for name in reads:
            resolved = relevant(name)
            # The histories and their blobs by set lookups: thousands of them, as many reads.
            if resolved is None or resolved in self._histories or not self._blobs.isdisjoint(resolved.parents):
                continue
            # A read through a link left out names the link only: its target may lie outside the project.
            named = Path(os.path.abspath(name)) if not name.endswith(".pyc") else resolved
            read.update(path for path in (resolved, named) if path.is_relative_to(self.root))
        return read

    def _target(self, path: Path) -> Path:
        return self.path / path.relative_to(self.root)

    def _walk(self) -> list[Path]:
        """Copy the files the rules take, folder by folder (links not followed); the links found, for ``_link``."""
        links: list[Path] = []
        pending = [(self.root, False)]
        while pending:
            folder, in_package = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as error:
                self.left_out[folder] = f"cannot be listed: {error.strerror or error}"
                continue
            package = in_package or any(entry.name == "__init__.py" for entry in entries)
            for entry in entries:
                path = Path(entry.path)
                if path in self._histories or path in self._blobs:
                    continue  # replayed where they are, not needed in the copy: no note either
                if path == self._own_folder:
                    continue  # the copy itself, when the temporary folder is inside the project
                if never_copied(entry.name):
                    self.left_out[path] = "never copied: it may hold secrets"
                elif entry.is_symlink():
                    links.append(path)
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name in TOOL_FOLDERS or (path / "pyvenv.cfg").exists():
                        self.left_out[path] = "a tool's folder (cache, virtual environment, dependencies), never copied"
                    else:
                        self._folders.add(path)
                        pending.append((path, package))
                elif entry.is_file(follow_symlinks=False):
                    self._copy_file(path, entry, package)
                else:
                    self.left_out[path] = "not a regular file (a FIFO, a socket or a device)"
        return links

    def _copy_file(self, path: Path, entry: os.DirEntry[str], in_package: bool) -> None:
        wanted = path.suffix in PYTHON_SUFFIXES or path.name in CONFIG_NAMES or in_package or path in self._read
        if not wanted:
            return
        target = self._target(path)
        try:
            size = entry.stat(follow_symlinks=False).st_size
            if size > COPY_SIZE_CAP:
                self.left_out[path] = f"{_size(size)}, over the {_size(COPY_SIZE_CAP)} copy size cap"
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        except OSError as error:  # unreadable, or gone meanwhile: like any file left out, noted if it was read
            self.left_out[path] = f"cannot be copied: {error.strerror or error}"
            target.unlink(missing_ok=True)
            return
        self._copied.add(path)

    def _link(self, links: list[Path]) -> None:
        """Each link to something in the copy, as a relative link to its copy; every other link left out."""
        for link in links:
            try:
                target = Path(os.path.realpath(link, strict=True))
            except (OSError, RuntimeError):
                self.left_out[link] = "a symlink that does not resolve (dangling, or a loop), not copied"
                continue
            if not target.is_relative_to(self.root):
                self.left_out[link] = "a symlink to outside the project, not copied"
                continue
            if target not in self._copied and target not in self._folders:
                shown = target.relative_to(self.root).as_posix() or "."
                self.left_out[link] = f"a symlink to {shown}, which is not copied"
                continue
            copied, place = self._target(target), self._target(link)
            if target in self._folders:
                copied.mkdir(parents=True, exist_ok=True)
            place.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(copied, place.parent), place)

    def notes(self) -> list[str]:
        """One sentence per left-out file (or folder) the replay read, at most ``_MAX_NOTES`` of them."""
        hits: dict[Path, None] = {}
        for read in sorted(self._read):
            for candidate in (read, *read.parents):
                if candidate in self.left_out:
                    hits[candidate] = None
                    break
                if candidate == self.root or not candidate.is_relative_to(self.root):
                    break
        named = sorted(hits)
        notes = [
            f"not in the verification copy: {path.relative_to(self.root).as_posix()} ({self.left_out[path]}), which "
            "the replay read: the guarded code was replayed without it"
            for path in named[:_MAX_NOTES]
        ]
        if len(named) > _MAX_NOTES:
            notes.append(f"{len(named) - _MAX_NOTES} more files the replay read are not in the verification copy")
        return notes

    def inside(self, path: Path) -> Path:
        return self.path / path.resolve().relative_to(self.root)

    def write(self, texts: dict[Path, str]) -> None:
        """Make the copy the current code plus ``texts`` (guarded files), undoing an earlier candidate."""
        for relative, original in self._written.items():
            if original is None:
                (self.path / relative).unlink(missing_ok=True)
            else:
                (self.path / relative).write_text(original, encoding="utf-8")
        self._written = {}
        for path, text in texts.items():
            relative = path.resolve().relative_to(self.root)
            target = self.path / relative
            # A guarded file the rules left out (over the cap, a secrets name) is still the code under test.
            self._written[relative] = target.read_text(encoding="utf-8") if target.exists() else None
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def close(self) -> None:
        with uninterrupted():
            if self._scratch is not None:
                self._scratch.cleanup()
