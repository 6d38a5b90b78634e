"""Which files the code under test reads while replaytest imports or replays it: ``FileReads``.

One audit hook (``sys.addaudithook``) sees every ``open`` of the process — ``open``, ``io.open``,
``os.open``, pathlib, and the import system reading modules. A hook can never be removed, so it is
installed once, on first use, and does nothing but return while no ``FileReads`` is recording; a
recording is process-wide, not per context, because engines run workflow code in threads of their own
(Temporal's workflow executor), which a context variable would not follow.

What counts as a read: an open that can read the file's existing contents. Write-only opens, and opens
that truncate or create the file exclusively, see nothing of what was there before, so they are left
out (temporary files an engine creates while replaying are such opens). Reading ``__pycache__`` bytecode
counts as reading its source file, the one a change would be made in. ``relevant`` says which of the
read files can matter to a verdict at all (see there). ``unrecorded()`` leaves out what replaytest itself
reads on the current thread meanwhile (an engine adapter parsing workflow sources to find step bodies).
"""

from __future__ import annotations

import importlib.util
import os
import site
import sys
import sysconfig
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import replaytest

_recording: FileReads | None = None
_hook_installed = False
_ACCESS_MODE = getattr(os, "O_ACCMODE", os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
_EXCLUSIVE_CREATE = os.O_CREAT | os.O_EXCL
_IMPORT_SYSTEM = "<frozen importlib._bootstrap"  # the code file name of importlib's frozen frames
_own_reads = threading.local()  # ``active`` while replaytest reads for itself on this thread


class FileReads:
    """The files opened for reading while ``recording()`` was on: ``files`` maps each absolute path to
    the source files of the code on the call stack when it was opened (with ``stacks``; empty otherwise),
    which tells whose import read it. ``imported`` are the source files of the modules imported meanwhile."""

    def __init__(self, *, stacks: bool = False) -> None:
        self.stacks = stacks
        self.files: dict[str, set[str]] = {}
        self.imported: set[Path] = set()

    @contextmanager
    def recording(self) -> Iterator[FileReads]:
        global _recording
        _install_hook()
        outer, _recording = _recording, self
        modules_before = set(sys.modules)
        try:
            yield self
        finally:
            _recording = outer
            for name in set(sys.modules) - modules_before:
                source = getattr(sys.modules.get(name), "__file__", None)
                if isinstance(source, str):
                    self.imported.add(Path(source).resolve())

    def during_imports(self) -> set[str]:
        """The recorded files opened while a module was being imported (the import system's frames
        on the stack): a module's source and what its top level read. Needs ``stacks``."""
        return {name for name, callers in self.files.items() if any(c.startswith(_IMPORT_SYSTEM) for c in callers)}

    def _opened(self, target: object, flags: object) -> None:
        if isinstance(flags, int) and (flags & _ACCESS_MODE == os.O_WRONLY or flags & os.O_TRUNC
                                       or flags & _EXCLUSIVE_CREATE == _EXCLUSIVE_CREATE):
            return
        if isinstance(target, os.PathLike):
            target = os.fspath(target)
        if isinstance(target, bytes):
            target = os.fsdecode(target)
        if not isinstance(target, str):
            return  # a file descriptor: the file was opened (and seen) before
        callers = self.files.setdefault(os.path.abspath(target), set())
        if self.stacks:
            frame: FrameType | None = sys._getframe(2)
            while frame is not None:
                callers.add(frame.f_code.co_filename)
                frame = frame.f_back


@contextmanager
def unrecorded() -> Iterator[None]:
    """Opens on this thread are not recorded meanwhile: replaytest's own reads of project files (an
    adapter parsing every workflow module's source once per process) say nothing about what one
    history's verdict depends on, and would tie it to modules of other workflows."""
    outer = getattr(_own_reads, "active", False)
    _own_reads.active = True
    try:
        yield
    finally:
        _own_reads.active = outer


def _audit(event: str, args: tuple[object, ...]) -> None:
    reads = _recording
    if reads is None or event != "open" or len(args) < 3 or getattr(_own_reads, "active", False):
        return
    reads._opened(args[0], args[2])


def _install_hook() -> None:
    global _hook_installed
    if not _hook_installed:
        sys.addaudithook(_audit)
        _hook_installed = True


def _installed_code_folders() -> tuple[Path, ...]:
    folders = {Path(replaytest.__file__).resolve().parent}
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib", "scripts"):
        if key in paths:
            folders.add(Path(paths[key]).resolve())
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    for folder in [*getattr(site, "getsitepackages", list)(), *([user_site] if user_site else [])]:
        folders.add(Path(folder).resolve())
    return tuple(sorted(folders))


_INSTALLED_CODE = _installed_code_folders()
_SYSTEM_FOLDERS = tuple(Path(p) for p in ("/dev", "/proc", "/sys"))


def relevant(path: str, leave_out: Iterable[Path] = ()) -> Path | None:
    """The file a recorded read of ``path`` depends on (a bytecode file's source), or None for a read
    that cannot change a verdict or is keyed by other means:

    - the standard library, site-packages (installed packages, the engine SDKs), the scripts folder
      (console scripts installed with them, the running ``replaytest`` among them) and replaytest's own
      files: they change with the Python, library and replaytest versions, which key a cache entry;
    - ``/dev``, ``/proc``, ``/sys``: devices and kernel views, different on every read, not inputs;
    - ``leave_out``: folders or files keyed otherwise by the caller (the history file, the cache folder).
    """
    file = Path(path)
    if file.suffix == ".pyc":
        try:
            file = Path(importlib.util.source_from_cache(path))
        except (ValueError, NotImplementedError):
            return None  # bytecode without a source (shipped compiled): installed code
    resolved = file.resolve()
    if "site-packages" in resolved.parts or "dist-packages" in resolved.parts:
        return None
    for folder in (*_INSTALLED_CODE, *_SYSTEM_FOLDERS, *leave_out):
        if resolved == folder or resolved.is_relative_to(folder):
            return None
    return resolved
