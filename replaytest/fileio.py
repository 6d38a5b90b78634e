"""Reading input files safely (``read_regular``, ``NotRegularFileError``, ``FileTooLargeError``) and
replacing a cache file atomically (``write_atomic``).

Everything replaytest reads from a user's tree (source files, histories, blobs, baselines) goes
through here, because a name ending in ``.py`` or ``.json`` proves nothing: a FIFO blocks a reader
forever and ``/dev/zero`` (or a symlink to it) reads until memory runs out. The file is opened without
blocking and checked on the open descriptor (no window between a check and the open); anything but a
regular file is refused with an ``OSError`` whose ``strerror`` says what it is. A caller that caps a
file's size (``max_size``) gets ``FileTooLargeError`` before anything is read: the size comes from the
open descriptor, so a sparse 2 GB file costs nothing to refuse.
"""

from __future__ import annotations

import errno
import os
import re
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


class FileTooLargeError(OSError):
    """The regular file is larger than the caller's ``max_size``; ``size`` and ``max_size`` say by how much."""

    def __init__(self, path: str, size: int, max_size: int) -> None:
        super().__init__(errno.EFBIG, f"is {size:,} bytes, more than the limit of {max_size:,} bytes", path)
        self.size = size
        self.max_size = max_size


def read_regular(path: str | os.PathLike[str], limit: int | None = None, *, max_size: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit`` of them); ``NotRegularFileError`` for anything else.
    With ``max_size``, a file larger than that is ``FileTooLargeError``, raised before reading (and a
    file that grows past it while it is read is refused too: at most ``max_size + 1`` bytes are read)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = next((name for test, name in _KINDS if test(status.st_mode)), "not a regular file")
            raise NotRegularFileError(errno.EINVAL, f"is {kind}, not a regular file", str(path))
        if max_size is not None and status.st_size > max_size:
            raise FileTooLargeError(str(path), status.st_size, max_size)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            if max_size is None:
                return handle.read() if limit is None else handle.read(limit)
            # Sized from the descriptor, not from max_size: read(n) allocates n bytes before it reads.
            wanted = status.st_size + 1 if limit is None else min(limit, status.st_size + 1)
            data = handle.read(wanted)
            if limit is None and len(data) > status.st_size:  # it grew while being read
                data += handle.read(max_size + 1 - len(data))
            if len(data) > max_size:
                raise FileTooLargeError(str(path), len(data), max_size)
            return data
    finally:
        os.close(descriptor)


def is_regular(path: Path) -> bool:
    """True for a regular file (following symlinks); False for anything else or a missing path."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


# Patterns, not compiled ones: ``re`` compiles each on its first use and keeps it. Compiling the three at
# import cost every run, the pre-commit hook's among them, about 1 ms, mostly for text it never escapes.
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_CONTROL_AND_NEWLINE = _CONTROL[:-1] + r"\n]"
_SURROGATE = r"[\ud800-\udfff]"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if "\udc80" <= char <= "\udcff":  # a byte of a file name that is not UTF-8 (surrogateescape)
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char.encode("unicode_escape").decode("ascii")


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """``text`` with control characters (CR, LF unless kept, ESC of ANSI sequences, C1 codes, bidi
    overrides) written as escapes, so names and values from a history or a file tree cannot move the
    cursor, colour the terminal or forge a summary line; and with lone surrogates escaped as
    ``escape_undecodable`` does."""
    return re.sub(_CONTROL if keep_newlines else _CONTROL_AND_NEWLINE, _escape, text)


def escape_undecodable(text: str) -> str:
    """``text`` with its lone surrogates escaped: a byte of a file name that is not UTF-8 (which Python
    holds as U+DC80..U+DCFF, ``surrogateescape``) as ``\\xNN``, any other as ``\\udNNN``. Such text cannot
    be written as UTF-8, so a JSON or XML report holding it would not parse; this keeps it readable."""
    return re.sub(_SURROGATE, _escape, text)



def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a new temporary file beside it and one rename, so a reader (another
    lint run) sees the old file or the new one, never a part. Like ``tempfile.mkstemp`` (O_EXCL, mode
    0600, a random name) without importing ``tempfile``, which a one-file lint run otherwise pays for
    its one cache write."""
    folder = os.path.dirname(path) or "."
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
