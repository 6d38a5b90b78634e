"""Splitting the histories of one run across N machines (``check --shard I/N``, pytest ``--replay-shard I/N``).

A history belongs to shard ``digest mod N + 1``, where ``digest`` is the SHA-256 of the file's bytes (the
same digest the replay cache keys on). The choice depends on nothing but the file itself: adding, removing
or renaming other histories moves none of them, every machine of a CI matrix computes the same split from
its own checkout, and the N shards together take every history exactly once. A file that cannot be read
(a FIFO, one over the history size limit, a permission error) is placed by the digest of its path instead,
so exactly one shard replays it and reports why it could not be checked.

Each shard's report also carries a digest of the content digests of every history the run split
(``ShardSelection.split_digest``): the N shards of one run agree on it, and ``merge-results`` refuses shards
that do not (a history changed between the jobs: it may have fallen in no shard or in two).

The shard a history goes to also names the cache file its green verdict is kept in
(``cache_file_name``): N machines can each save their cache folder, and restoring all N of them into one
folder (or into the same shard's job on the next run) finds every entry.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from replaytest.fileio import read_regular

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
# More shards than this is almost certainly a typo (a CI matrix of 10,000 machines is not a thing).
MAX_SHARDS = 1000


_UNREADABLE = hashlib.sha256(b"unreadable").digest()


class ShardSpecError(ValueError):
    """A ``--shard`` / ``--replay-shard`` value that is not ``I/N`` with 1 <= I <= N."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def takes(self, path: Path, max_bytes: int | None = None) -> bool:
        return shard_of(path, self.count, max_bytes) == self.index


def parse_shard(text: str, option: str = "--shard") -> Shard:
    """``"2/4"`` as ``Shard(2, 4)``; ``ShardSpecError`` naming ``option`` and the right form otherwise."""
    match = _SPEC.fullmatch(text)
    if match is None:
        raise ShardSpecError(f"{option} {text!r}: expected I/N, the shard I (1-based) of N, e.g. {option} 2/4")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or count > MAX_SHARDS:
        raise ShardSpecError(f"{option} {text!r}: the number of shards N must be from 1 to {MAX_SHARDS}")
    if index < 1 or index > count:
        raise ShardSpecError(f"{option} {text!r}: the shard I must be from 1 to {count} (shards are numbered from 1)")
    return Shard(index, count)


def shard_of(path: Path, count: int, max_bytes: int | None = None) -> int:
    """The shard (1-based, of ``count``) the history file ``path`` belongs to."""
    return _shard_number(_placement(path, max_bytes)[0], count)


def _shard_number(key: bytes, count: int) -> int:
    return int.from_bytes(key[:8], "big") % count + 1


def _placement(path: Path, max_bytes: int | None) -> tuple[bytes, bytes]:
    """The key that places ``path`` in a shard, and what it adds to the digest of the split (``split_digest``)."""
    try:
        key = hashlib.sha256(read_regular(path, max_size=max_bytes)).digest()
    except OSError:
        # Unreadable here means unreadable on every machine: one shard takes it, and its replay says why.
        key = hashlib.sha256(b"path:" + path.as_posix().encode("utf-8", "surrogateescape")).digest()
        return key, _UNREADABLE  # not its path: the checkouts of two CI machines may lie in different folders
    return key, key


@dataclass
class ShardSelection:
    """What one shard took of a run's histories."""

    shard: Shard
    total: int = 0
    kept: list[Path] = field(default_factory=list)
    contents: list[bytes] = field(default_factory=list, repr=False)  # every history's content digest

    @property
    def split_digest(self) -> str:
        """A digest of the content digests of all ``total`` histories the run split (not only its share): the N
        shards of one run have the same one, and a history whose bytes changed between two shard jobs makes
        them differ (``merge-results`` refuses such shards)."""
        return hashlib.sha256(b"".join(sorted(self.contents))).hexdigest()[:32]

    def line(self) -> str:
        """The run's own account of its share, printed by every face."""
        return (f"shard {self.shard.label}: {len(self.kept)} of {self.total} "
                f"{'history' if self.total == 1 else 'histories'} (split by content digest)")

    def data(self) -> dict[str, int | str]:
        """The JSON form (``replay.shard`` of ``check --output-format json``)."""
        return {"index": self.shard.index, "count": self.shard.count, "histories": len(self.kept), "of": self.total,
                "split": self.split_digest}


def select_shard(files: Iterable[Path], shard: Shard, max_bytes: int | None = None) -> ShardSelection:
    """The histories of ``files`` that belong to ``shard``, in their order."""
    selection = ShardSelection(shard)
    for path in files:
        selection.total += 1
        key, content = _placement(path, max_bytes)
        selection.contents.append(content)
        if _shard_number(key, shard.count) == shard.index:
            selection.kept.append(path)
    return selection


CACHE_FILE = "passed.json"


def cache_file_name(shard: Shard | None) -> str:
    """The replay cache's file of a run: ``passed.json`` unsharded, ``passed.shard-I-of-N.json`` for a shard.
    A run reads every ``passed*.json`` of the folder (``cache_file_names``) and writes its own."""
    if shard is None:
        return CACHE_FILE
    return f"passed.shard-{shard.index}-of-{shard.count}.json"


def cache_file_names(folder: Path) -> list[Path]:
    """The cache files in ``folder`` a run reads: the unsharded one first, then the shards' in name order."""
    found = sorted(folder.glob("passed.shard-*-of-*.json"))
    unsharded = folder / CACHE_FILE
    return ([unsharded] if unsharded.is_file() else []) + [path for path in found if path.is_file()]
