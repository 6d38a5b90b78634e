"""Reading input files safely: ``read_regular`` and ``NotRegularFileError``.

Everything replaytest reads from a user's tree (source files, histories, blobs, baselines) goes
through here, because a name ending in ``.py`` or ``.json`` proves nothing: a FIFO blocks a reader
forever and ``/dev/zero`` (or a symlink to it) reads until memory runs out. The file is opened without
blocking and checked on the open descriptor (no window between a check and the open); anything but a
regular file is refused with an ``OSError`` whose ``strerror`` says what it is.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotRegularFileError(OSError):
    """The path names a FIFO, device, socket or directory, not a regular file."""


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit`` of them); ``NotRegularFileError`` for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFileError(errno.EINVAL, f"is {kind}, not a regular file", str(path))
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read() if limit is None else handle.read(limit)
    finally:
        os.close(descriptor)


def is_regular(path: Path) -> bool:
    """True for a regular file (following symlinks); False for anything else or a missing path."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
