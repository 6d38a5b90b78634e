"""Content-addressed storage for large results: ``<history dir>/blobs/sha256/<hex>``.

A result whose compact JSON exceeds ``BLOB_THRESHOLD`` bytes is written once under its SHA-256 and the
event records ``result_ref: "sha256:<hex>"``. Histories in one directory share the store, so a result
recorded by many runs is kept once. Reading verifies the hash; a mismatch or a missing blob is a
``HistoryError`` naming the history file and the event's JSON path.

The store never follows a symbolic link: ``blobs``, ``blobs/sha256`` and each blob must be a real
directory or regular file inside the history's folder. A link could point anywhere (reading it would
disclose another file, or confirm a guess of its contents through the hash; writing through it would
change files outside the folder), so a link is an error naming it.

A store may cap the size of a blob it reads (``max_bytes``, from ``[tool.replaytest.replay]
max-blob-bytes`` in a replay): a larger one is refused before it is read, naming the blob, its size and
the limit.

``references_in``, ``mark_for_removal`` and ``remove_unreferenced`` let ``replaytest redact`` leave no unredacted copy
behind: a blob that held a value now redacted is deleted once no history file in the folder tree names
its hash (a history that does keeps it, and the caller says so).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replaytest.fileio import FileTooLargeError, read_regular
from replaytest.history.errors import HistoryError
from replaytest.history.strict_json import loads_strict

BLOB_THRESHOLD = 64 * 1024
REF_PREFIX = "sha256:"
_REF_TEXT = re.compile(rb"sha256:([0-9a-f]{64})")
_REF = re.compile(r"sha256:[0-9a-f]{64}")
# Hashes of blobs a redaction stopped referencing, noted before the history is rewritten (hidden: never
# taken for a history or a blob).
PENDING_NAME = ".pending-removal"


def blob_bytes(value: Any) -> bytes:
    """The stored form of a result: compact UTF-8 JSON, key order as recorded (it is what the code saw)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def ref_of(data: bytes) -> str:
    return REF_PREFIX + hashlib.sha256(data).hexdigest()


class BlobStore:
    """The ``blobs`` directory beside a history file."""

    def __init__(self, root: Path, max_bytes: int | None = None) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes  # the largest blob read; None reads any

    @classmethod
    def beside(cls, history_path: Path, max_bytes: int | None = None) -> BlobStore:
        return cls(Path(history_path).parent / "blobs", max_bytes)

    def path_of(self, ref: str) -> Path:
        return self.root / "sha256" / ref[len(REF_PREFIX) :]

    def symlink_in(self, ref: str | None = None) -> Path | None:
        """The first part of the store's path (``blobs``, ``blobs/sha256``, the blob) that is a symlink."""
        parts = [self.root, self.root / "sha256"]
        if ref is not None:
            parts.append(self.path_of(ref))
        return next((part for part in parts if part.is_symlink()), None)

    def write_bytes(self, data: bytes) -> str:
        """Store ``data`` (atomically: temp file then rename) and return its ``sha256:`` ref."""
        ref = ref_of(data)
        target = self.path_of(ref)
        link = self.symlink_in(ref)
        if link is not None:
            raise HistoryError(link, None, "is a symbolic link; the blob store never writes through one")
        if target.is_file():
            return ref
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return ref

    def remove(self, ref: str) -> None:
        """Delete one blob (never through a symbolic link)."""
        link = self.symlink_in(ref)
        if link is not None:
            raise HistoryError(link, None, "is a symbolic link; the blob store never deletes through one")
        self.path_of(ref).unlink(missing_ok=True)

    def write_json(self, value: Any) -> str:
        return self.write_bytes(blob_bytes(value))

    def read_bytes(self, ref: str, source: Path | None, json_path: str) -> bytes:
        """The blob's bytes after checking they hash to ``ref``."""
        where = self.path_of(ref)
        link = self.symlink_in(ref)
        if link is not None:
            raise HistoryError(source, json_path, f"blob {ref}: {link} is a symbolic link; blobs are never read through one")
        try:
            data = read_regular(where, max_size=self.max_bytes)
        except FileTooLargeError as error:
            raise HistoryError(
                source, json_path,
                f"blob {where} is {error.size:,} bytes, more than the blob limit of {error.max_size:,} bytes; "
                "if it is genuine, raise max-blob-bytes in [tool.replaytest.replay] (or the pytest ini option "
                "replay_max_blob_bytes)",
            ) from None
        except OSError as error:
            raise HistoryError(source, json_path, f"blob {ref} cannot be read from {where}: {error.strerror or error}") from None
        actual = ref_of(data)
        if actual != ref:
            # The actual hash is not printed: it would confirm a guess of what the file holds.
            raise HistoryError(source, json_path, f"blob {where} does not match its hash {ref} (changed or truncated)")
        return data

    def read_json(self, ref: str, source: Path | None, json_path: str) -> Any:
        data = self.read_bytes(ref, source, json_path)
        try:
            return loads_strict(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise HistoryError(source, json_path, f"blob {ref} is not UTF-8 JSON: {error}") from None


@dataclass
class BlobReferences:
    """Which files of a folder tree name which blob hashes (``sha256:<hex>`` anywhere in them)."""

    by_ref: dict[str, list[Path]] = field(default_factory=dict)
    unreadable: list[Path] = field(default_factory=list)  # files that may name any blob: nothing is removed


def references_in(folder: Path) -> BlobReferences:
    """Every ``sha256:<hex>`` named by a regular file under ``folder`` (blob stores, hidden folders such as
    ``.git`` and symbolic links skipped). Every file, as text: a history under any name, or one that no
    longer loads, still keeps the blobs it names."""
    found = BlobReferences()
    for directory, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "blobs")
        for name in sorted(files):
            path = Path(directory) / name
            if path.is_symlink():
                continue  # a file elsewhere: not a history of this folder
            try:
                named = _refs_named_by(path)
            except OSError:
                found.unreadable.append(path)
                continue
            for ref in sorted(named):
                found.by_ref.setdefault(ref, []).append(path)
    return found


_CHUNK = 1 << 20
_REF_LENGTH = len(REF_PREFIX) + 64


def _refs_named_by(path: Path) -> set[str]:
    """The ``sha256:<hex>`` texts in a regular file, read in chunks (a large file never sits in memory
    whole); ``OSError`` for anything but a regular file, as ``read_regular``."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path} is not a regular file")
        named: set[str] = set()
        tail = b""
        while chunk := os.read(descriptor, _CHUNK):
            window = tail + chunk
            named.update(REF_PREFIX + match.decode("ascii") for match in _REF_TEXT.findall(window))
            tail = window[-(_REF_LENGTH - 1) :]  # a ref cut by the chunk boundary is found in the next window
        return named
    finally:
        os.close(descriptor)


@dataclass
class BlobRemoval:
    """What ``remove_unreferenced`` did: blobs deleted, and blobs kept with the files still naming them."""

    removed: list[str] = field(default_factory=list)
    kept: dict[str, list[Path]] = field(default_factory=dict)
    unreadable: list[Path] = field(default_factory=list)


def mark_for_removal(store: BlobStore, refs: Iterable[str]) -> None:
    """Note ``refs`` in the store before the history that stops naming them is written, so a run killed
    before ``remove_unreferenced`` leaves them to the next one (the note holds hashes only)."""
    refs = sorted(set(refs))
    if not refs or store.symlink_in() is not None or not (store.root / "sha256").is_dir():
        return
    pending = store.root / PENDING_NAME
    if pending.is_symlink() or (pending.exists() and not pending.is_file()):
        return  # never written through a link, never opened if a FIFO (it would block)
    with open(pending, "a", encoding="ascii") as out:
        out.write("".join(f"{ref}\n" for ref in refs))


def remove_unreferenced(store: BlobStore, candidates: Iterable[str]) -> BlobRemoval:
    """Delete each blob of ``candidates`` (and of the store's removal note) that no file in the store's
    folder tree names; a blob still named is kept, listed with the files naming it. Nothing is deleted
    when a file there cannot be read, since it may name any blob. Called after the histories are
    written: an interruption leaves an extra blob, never a history without its blob."""
    outcome = BlobRemoval()
    if store.symlink_in() is not None:
        return outcome
    pending = store.root / PENDING_NAME
    wanted = set(candidates)
    if pending.is_file() and not pending.is_symlink():
        wanted |= {line for line in pending.read_text(encoding="ascii", errors="replace").split() if _REF.fullmatch(line)}
    references = references_in(store.root.parent)
    outcome.unreadable = list(references.unreadable)
    for ref in sorted(wanted):
        if store.symlink_in(ref) is not None or not store.path_of(ref).is_file():
            continue
        if ref in references.by_ref or references.unreadable:
            outcome.kept[ref] = references.by_ref.get(ref, [])
            continue
        store.remove(ref)
        outcome.removed.append(ref)
    if not references.unreadable:
        pending.unlink(missing_ok=True)
    return outcome
