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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from replaytest.fileio import FileTooLargeError, read_regular
from replaytest.history.errors import HistoryError
from replaytest.history.strict_json import loads_strict

BLOB_THRESHOLD = 64 * 1024
REF_PREFIX = "sha256:"


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
