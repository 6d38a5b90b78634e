"""The cache folder (``cache-dir``): which folder replaytest may take for its caches, and its markers.

Lint summaries, green replays and replay-coverage data all live under one folder, and replaytest writes
a ``.gitignore`` holding ``*`` into it (with a ``CACHEDIR.TAG`` for backup tools and a ``README``), so
that nothing cached is committed. Those markers hide *everything* in the folder from git and from
backups: written into the project root (``cache-dir = "."``), an ancestor of it, or a folder of the
user's (``cache-dir = "src"``), they would hide the project itself. So a folder is taken only when
replaytest creates it, when it is empty, or when replaytest's own ``README`` marker shows it made it
earlier; anything else is refused (``CacheDirError``, a configuration error: exit 2), and the markers
are only ever written into a folder taken that way.

Several processes may take the folder at once (pytest-xdist workers, parallel CI jobs on one checkout).
Each marker is written whole under a temporary name and then linked into place, so another process never
reads a half-written README and refuses the folder; the temporary names (``.replaytest-marker-*``) count
as replaytest's while they exist.

The cache folder is trusted input (see the README's security notes): an entry in it can hide a finding
or a divergence, which is what ``--no-cache`` is for.
"""

from __future__ import annotations

import os
from pathlib import Path

README_TEXT = "Created by replaytest for its lint and replay caches. Safe to delete.\n"
# Earlier releases wrote this README; a folder holding it is replaytest's too.
_OLDER_README_TEXTS = ("Created by replaytest lint. Safe to delete.\n",)
# The README first: a folder holding any marker but not it would be refused by the next run.
MARKERS: dict[str, str] = {
    "README": README_TEXT,
    "CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n",
    ".gitignore": "*\n",
}


# A marker being written by another process right now: see ``_write_marker``.
_TEMPORARY_MARKER_PREFIX = ".replaytest-marker-"


class CacheDirError(Exception):
    """The configured cache folder cannot be taken; ``problem`` says why and what to do."""

    def __init__(self, directory: Path, problem: str) -> None:
        self.directory = directory
        self.problem = problem
        super().__init__(f"{directory}: {problem}")


def containment_problem(directory: Path, root: Path) -> str | None:
    """Why ``directory`` cannot be the cache folder of the project at ``root`` by its place alone: it is
    the root or a folder above it (the markers would hide the project from git). None when it may be."""
    folder, top = _absolute(directory), _absolute(root)
    if folder == top:
        return "is the project root; the cache needs a folder of its own (e.g. .replaytest_cache)"
    if top.is_relative_to(folder):
        return "is a folder above the project root; the cache needs a folder of its own (e.g. .replaytest_cache)"
    return None


def is_replaytest_folder(directory: Path) -> bool:
    """True when replaytest's README marker is in ``directory`` (it made the folder earlier)."""
    try:
        text = (directory / "README").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    return text == README_TEXT or text in _OLDER_README_TEXTS


def check(directory: Path) -> None:
    """Refuse a folder replaytest may not take (see the module docstring); write nothing."""
    try:
        entries = sorted(os.listdir(directory))
    except FileNotFoundError:
        return  # created (with its markers) when something is first written
    except NotADirectoryError:
        raise CacheDirError(directory, "is a file, not a folder; choose a folder of its own for the cache") from None
    except OSError:
        return  # unreadable: writing fails later and lint goes on without a cache, as for a read-only checkout
    others = [name for name in entries if not name.startswith(_TEMPORARY_MARKER_PREFIX)]
    if others and not is_replaytest_folder(directory):
        shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise CacheDirError(
            directory,
            f"already holds files that are not replaytest's ({shown}); replaytest would hide them from git "
            "with its .gitignore: choose a folder of its own for the cache (cache-dir), e.g. .replaytest_cache",
        )


def claim(directory: Path) -> None:
    """Take ``directory`` for the caches: create it, or adopt it when empty, and write the markers; keep a
    folder replaytest made earlier (its missing markers written again). Raises ``CacheDirError`` for any
    other folder, ``OSError`` when it cannot be created."""
    check(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in MARKERS.items():
        if not (directory / name).exists():
            _write_marker(directory, name, text)


def _write_marker(directory: Path, name: str, text: str) -> None:
    """Write a marker whole, then link it into place: a process checking the folder meanwhile sees either
    no marker or the complete one, never an empty README (it would refuse the folder). A marker another
    process linked first is kept."""
    import tempfile  # only when a marker is written: a warm lint run does not pay for importing it

    handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_MARKER_PREFIX, dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        try:
            os.link(temporary, directory / name)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: a rename is atomic too
            os.replace(temporary, directory / name)
    finally:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass


def remove(directory: Path) -> bool:
    """Delete the cache folder (``replaytest clean``): only a folder holding replaytest's README marker, so a
    misconfigured ``cache-dir`` never deletes the user's files. False when there is nothing to delete;
    ``CacheDirError`` for a folder that is not replaytest's."""
    import shutil

    if not directory.exists():
        return False
    if directory.is_symlink() or not directory.is_dir():
        raise CacheDirError(directory, "is not a folder replaytest made (a file or a link); nothing was deleted")
    if not is_replaytest_folder(directory):
        raise CacheDirError(directory, "has no replaytest README marker, so it is not replaytest's cache folder; "
                                       "nothing was deleted (check cache-dir)")
    shutil.rmtree(directory)
    return True


def _absolute(path: Path) -> Path:
    return Path(os.path.normcase(os.path.abspath(path)))
