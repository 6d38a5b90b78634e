"""The lint cache under ``<root>/<cache-dir>/lint/``: module summaries and CPython's verdicts, by content.

``<2 hex>/<key>.json``: one module summary per entry. The key hashes the analyzer fingerprint (tool
version, configuration, rule set, profiles, analyzer code), the module name and the file's bytes, so an
edit that keeps size and mtime still misses, and a summary is reused exactly when it would be recomputed
identically. An entry is a JSON object followed, per function of the summary, by a tab and the JSON of the
function's deferred fields (``model.summary_to_entry``: parsed only when resolution first reads one), the object
holding their CRC-32; written atomically; an unreadable or corrupt entry, deferred part included, is a miss. Each entry
holds its own key and what it was made from (the fingerprint's digest and the file's sha256): an entry
copied over another key's file is a miss, not another file's clean bill of health. The folder is still
trusted input — anyone who can write it can forge an entry — which the README says, with ``--no-cache``.

``vetted.txt``: the files no rule needs parsed but that a run must still vet (CPython's parser accepts
them), one key per line (``vetted_key``: fingerprint, Python version, sha256 of the bytes), newest first,
at most ``VETTED_LIMIT``. Vetting 558 such files cost a warm run 0.13 s of its 0.44 s CPU; a lookup costs
a hash and a search of the file for a line that is the key (parsed only by a run that saves verdicts: a full
file took 27 ms to parse). Several processes may rewrite it at once: the file is replaced atomically and a lost
key is only a verdict computed again.

``pack.txt``: the entries the last run used, one per line (``<key> <entry>``), so a warm run reads one file
instead of one per module (259 opens of a real project's 785 files were a sixth of a warm one-file run). The
entry files stay the source of truth: a key the pack lacks is read from its file, and a pack line is checked
exactly as an entry file is. A run that used other entries than the pack holds rewrites it at its end,
atomically; runs racing to write it only cost the loser's pack. Reading an entry parses its object and builds
its summary's records; each function's deferred fields stay JSON text until first read (``model._Deferred``): a
warm one-file run of sdk-python parsed 1.7 MB of JSON for its 156 summaries in 12 ms, of which the functions'
deferred fields were 1 MB, and reads those of about a quarter of its functions.

``files.txt``: what a run learnt of each file from its bytes, by ``stat`` (``FileIndex``): the sha256 of the
bytes and the verdicts made from them (vetted, screened in, has suppression comments), under a header holding
the analyzer's fingerprint and the Python version (another header: the whole index is a miss). A file whose
(size, mtime, ctime, inode) is what the index recorded is neither read nor hashed; any other is read and
hashed as before, and its digest decides (an edit that restores size and mtime still changes the ctime,
which no user call can set back). A file is recorded only once its mtime and ctime are ``SETTLE_SECONDS``
older than the moment the run looked at it: a write in the same tick of a coarse file-system clock would
otherwise leave the stat unchanged. The summaries and verdicts themselves stay keyed by content (the digest),
so the index only saves reading and hashing, never decides a finding.

``config.txt`` (in the default cache folder's ``lint/``) is the configuration file's table, kept by
``config.load_config`` (see ``CONFIG_RECORD`` there).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import zlib
from pathlib import Path
from typing import Any

from replaytest import cachedir
from replaytest.fileio import write_atomic
from replaytest.lint.model import ModuleSummary, summary_from_entry, summary_to_entry
from replaytest.records import replace

VETTED_FILE = "vetted.txt"
PACK_FILE = "pack.txt"
FILE_INDEX = "files.txt"
# How much older than the moment a run looked at a file its mtime and ctime must be before the index trusts
# its stat: coarse file-system clocks (a kernel tick; 2 s on FAT) give two writes in one tick the same time.
SETTLE_SECONDS = 3
VETTED_LIMIT = 50_000
_KEY_CHARACTERS = frozenset("0123456789abcdef")


def summary_key(fingerprint: str, module: str, is_package: bool, content_digest: str) -> str:
    """The key of a module's summary: the analyzer fingerprint, the module's name and the sha256 (hex) of the
    file's bytes, so a warm run that knows a file's digest from ``FileIndex`` finds its summary unread."""
    digest = hashlib.sha256()
    digest.update(fingerprint.encode())
    digest.update(b"\0")
    digest.update(f"{module}:{int(is_package)}".encode())
    digest.update(b"\0")
    digest.update(content_digest.encode("ascii"))
    return digest.hexdigest()


def fingerprint_digest(fingerprint: str) -> str:
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:32]


def entry_binding(fingerprint_digest: str, content_digest: str) -> str:
    """What an entry records about what it was made from: the analyzer fingerprint's digest
    (``fingerprint_digest``) and the sha256 of the file's bytes (hex). ``get`` compares it with the
    caller's, so an entry is never reused for another file or configuration, even when copied over
    another key's name."""
    return f"{fingerprint_digest}:{content_digest}"


def vetted_prefix(fingerprint: str) -> bytes:
    """What a vetting verdict depends on besides the bytes: the analyzer and the running Python's grammar."""
    return f"vetted\0{fingerprint}\0{sys.implementation.cache_tag}\0{sys.version}\0".encode()


def vetted_key(prefix: bytes, content_digest: str) -> str:
    """The key of one file's verdict: ``prefix`` and the sha256 of its bytes (hex), 128 bits."""
    return hashlib.sha256(prefix + content_digest.encode()).hexdigest()[:32]


class SummaryCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory / "lint"
        self._prepared = False
        # The verdicts file as read (after a newline, so that every key line is "\n<key>\n"), searched by
        # ``is_vetted``; parsed into ``_vetted`` only when this run saves verdicts.
        self._vetted_text: bytes | None = None
        self._vetted: list[str] | None = None
        self._vetted_set: frozenset[str] = frozenset()
        self._newly_vetted: list[str] = []
        self._folders: set[str] = set()
        self._pack: dict[str, bytes] | None = None
        # Every entry this run got or put, by key: what the pack holds after the run.
        self._used: dict[str, bytes] = {}

    def get(self, key: str, path: str, binding: str) -> ModuleSummary | None:
        """The summary stored under ``key``, if the entry was made for exactly this ``binding``
        (``entry_binding``: the fingerprint and the file's content digest); anything else is a miss."""
        text = self._packed().get(key)
        if text is None:
            try:
                with open(os.path.join(self.directory, key[:2], f"{key}.json"), "rb") as handle:
                    text = handle.read()
            except OSError:
                return None
        try:
            head, tab, rest = text.partition(b"\t")
            data = json.loads(head)
            # An entry copied or renamed over another key (a poisoned or mixed-up cache) names the file
            # and configuration it was made for: reusing it would hide that file's findings.
            if not isinstance(data, dict) or data.get("key") != key or data.get("binding") != binding:
                return None
            # The functions' deferred fields are parsed when first read, during resolution: checked here, so
            # that damage to them is a miss like any other, not a failure later.
            bodies = tab + rest
            if data["deferred"] != zlib.crc32(bodies):
                return None
            summary = summary_from_entry(data["summary"], bodies.split(b"\t")[1:] if bodies else [])
        except (ValueError, KeyError, TypeError, RecursionError):  # a damaged entry is a miss
            return None
        self._used[key] = text
        return summary if summary.path == path else replace(summary, path=path)

    def put(self, key: str, summary: ModuleSummary, binding: str) -> None:
        # json.dumps, not json.dump: dump streams through the pure-Python encoder (0.09 s of a cold run's
        # 258 entries, against 0.01 s); each folder is made once per run, not once per entry.
        data, bodies = summary_to_entry(summary)
        deferred = "".join("\t" + body for body in bodies).encode("ascii")  # json.dumps writes ASCII, no tab
        entry = {"key": key, "binding": binding, "deferred": zlib.crc32(deferred), "summary": data}
        text = json.dumps(entry, separators=(",", ":")).encode("utf-8") + deferred
        try:
            self._prepare()
            folder = os.path.join(self.directory, key[:2])
            if folder not in self._folders:
                os.makedirs(folder, exist_ok=True)
                self._folders.add(folder)
            write_atomic(os.path.join(folder, f"{key}.json"), text)
        except (OSError, cachedir.CacheDirError):
            return  # a read-only checkout lints without caching
        self._used[key] = text

    def _packed(self) -> dict[str, bytes]:
        if self._pack is None:
            self._pack = {}
            try:
                with open(os.path.join(self.directory, PACK_FILE), "rb") as handle:
                    lines = handle.read().split(b"\n")
            except OSError:  # no pack yet: every entry comes from its file
                return self._pack
            for line in lines:
                key, _, text = line.partition(b" ")
                if len(key) == 64 and text:
                    self._pack[key.decode("ascii", "replace")] = text
        return self._pack

    def save_pack(self) -> None:
        """Keep the entries this run used in the pack, when they are not what it holds already."""
        if not self._used or self._used.keys() == self._packed().keys():
            return
        lines = b"".join(key.encode("ascii") + b" " + text + b"\n" for key, text in sorted(self._used.items())
                         if b"\n" not in text)  # one entry a line (json.dumps writes none; a tampered file might)
        try:
            self._prepare()
            write_atomic(os.path.join(self.directory, PACK_FILE), lines)
        except (OSError, cachedir.CacheDirError):
            return  # a read-only checkout lints without caching
        self._pack = dict(self._used)

    # --- vetting verdicts ---------------------------------------------------------------------

    def is_vetted(self, key: str) -> bool:
        """Whether an earlier run (or this one) recorded that CPython accepts the source with this key.

        Until a run saves verdicts the file is searched, not parsed: a key is vetted when a line of it is exactly
        the key (a damaged line is no key, as ``_read_vetted`` reads it). A warm run asks for the few files it
        reads, and parsing the file costs with its length (27 ms at ``VETTED_LIMIT`` keys, against 0.4 ms)."""
        if self._vetted is not None:
            return key in self._vetted_set
        if self._vetted_text is None:
            self._vetted_text = b"\n" + self._read_vetted_text()
        return (len(key) == 32 and _KEY_CHARACTERS.issuperset(key)
                and b"\n" + key.encode("ascii") + b"\n" in self._vetted_text)

    def add_vetted(self, key: str) -> None:
        """Record that CPython accepts the source with this key; written by ``save_vetted``."""
        self._newly_vetted.append(key)

    def save_vetted(self) -> None:
        """Write the verdicts of this run in front of the earlier ones (nothing new: nothing written)."""
        if not self._newly_vetted:
            return
        if self._vetted is None:
            self._vetted = self._read_vetted()
            self._vetted_set = frozenset(self._vetted)
        new = dict.fromkeys(self._newly_vetted)
        keys = [*new, *(key for key in self._vetted or () if key not in new)][:VETTED_LIMIT]
        try:
            self._prepare()
            write_atomic(os.path.join(self.directory, VETTED_FILE), ("\n".join(keys) + "\n").encode("ascii"))
        except (OSError, cachedir.CacheDirError):
            return  # a read-only checkout lints without caching
        self._vetted, self._vetted_set, self._newly_vetted = keys, frozenset(keys), []

    def _read_vetted_text(self) -> bytes:
        if self._vetted_text is not None:
            return self._vetted_text[1:]
        try:
            with open(os.path.join(self.directory, VETTED_FILE), "rb") as handle:
                return handle.read()
        except OSError:  # missing: every verdict is a miss
            return b""

    def _read_vetted(self) -> list[str]:
        try:
            text = self._read_vetted_text().decode("ascii")
        except ValueError:  # damaged: every verdict is a miss
            return []
        return [key for key in text.split() if len(key) == 32 and _KEY_CHARACTERS.issuperset(key)]

    def _prepare(self) -> None:
        if self._prepared:
            return
        cachedir.claim(self.directory.parent)
        self.directory.mkdir(exist_ok=True)
        self._prepared = True


# --- what each file's bytes gave, by stat ------------------------------------------------------------

_WALK_PREFIX = "walk "  # the line of files.txt holding the last walk's record (JSON)
VETTED = "v"  # screened out and accepted by CPython's parser: neither screened nor parsed again
SCREENED = "s"  # screened in: its summary is looked up by its digest
COMMENTED = "c"  # mentions replaytest or noqa: read for its suppression comments


def _kind(status: os.stat_result | None) -> str:
    """What is at a path, where only that decides: ``"dir"``, ``"file"`` or ``"none"`` (nothing, or another kind)."""
    if status is None:
        return "none"
    return "dir" if stat.S_ISDIR(status.st_mode) else "file" if stat.S_ISREG(status.st_mode) else "none"


def stat_signature(status: os.stat_result) -> tuple[int, int, int, int]:
    """What the index compares: size, mtime, ctime (nanoseconds) and inode."""
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino


class FileIndex:
    """``files.txt`` (see the module docstring): per path, the stat it had, the sha256 of its bytes and the
    verdicts (``VETTED``, ``SCREENED``, ``COMMENTED``) made from them under ``header``."""

    def __init__(self, directory: Path, header: str) -> None:
        self.directory = directory / "lint"
        self.header = header
        self._entries: dict[str, tuple[tuple[int, int, int, int], str, str]] | None = None
        # The last walk's record (``record_walk``), as JSON text: decoded only when a run asks for it.
        self._walk: str | None = None
        self._changed = False

    def lookup(self, path: str) -> tuple[str, str, os.stat_result] | None:
        """(digest, verdicts, stat) of ``path`` when it is a regular file whose stat is what was recorded;
        None when it must be read (not recorded, changed, not a regular file, or gone)."""
        entry = self._read().get(path)
        if entry is None:
            return None
        try:
            status = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(status.st_mode) or stat_signature(status) != entry[0]:
            return None
        return entry[1], entry[2], status

    def record(self, path: str, status: os.stat_result | None, digest: str, verdicts: str, looked_at_ns: int) -> None:
        """Remember ``path``'s digest and verdicts under the stat it had before it was read (``status``,
        taken at ``looked_at_ns``), when that stat is old enough to be trusted (``SETTLE_SECONDS``)."""
        entries = self._read()
        if status is None or "\n" in path or not stat.S_ISREG(status.st_mode):
            if entries.pop(path, None) is not None:
                self._changed = True
            return
        settled = looked_at_ns - SETTLE_SECONDS * 1_000_000_000
        if max(status.st_mtime_ns, status.st_ctime_ns) >= settled:
            if entries.pop(path, None) is not None:
                self._changed = True
            return
        entry = (stat_signature(status), digest, verdicts)
        if entries.get(path) != entry:
            entries[path] = entry
            self._changed = True

    def walk(self, key: str) -> dict[str, Any] | None:
        """The recorded walk under ``key`` when every folder and file it depended on has the stat it had
        then (a folder's changes when an entry is added, removed or renamed in it); None otherwise."""
        self._read()
        if self._walk is None:
            return None
        try:
            record = json.loads(self._walk)
            if not isinstance(record, dict) or record.get("key") != key:
                return None
            for path, signature in record["stats"]:
                try:
                    status: os.stat_result | None = os.stat(path)
                except OSError:
                    status = None
                if isinstance(signature, str):
                    now: list[int] | str | None = _kind(status)
                else:
                    now = None if status is None else list(stat_signature(status))
                if now != signature:
                    return None
        except (ValueError, KeyError, TypeError):  # a damaged record is a walk done again
            return None
        return record

    def record_walk(self, key: str, watched: list[tuple[str, os.stat_result | str | None]],
                    payload: dict[str, Any] | None, looked_at_ns: int) -> None:
        """Keep ``payload`` (what the walk found) under ``key`` with the stats of what it depended on
        (``watched``: each taken before it was read; None where nothing was there; a kind, ``"dir"``, ``"file"``
        or ``"none"``, where only that decides), when every stat is ``SETTLE_SECONDS`` old; ``payload`` None,
        or a recent change, keeps no walk."""
        text = None
        if payload is not None:
            settled = looked_at_ns - SETTLE_SECONDS * 1_000_000_000
            stats: list[list[Any]] | None = []
            for path, status in watched:
                if isinstance(status, str):
                    stats.append([path, status])  # type: ignore[union-attr]
                    continue
                if status is not None and max(status.st_mtime_ns, status.st_ctime_ns) >= settled:
                    stats = None
                    break
                stats.append([path, None if status is None else list(stat_signature(status))])  # type: ignore[union-attr]
            if stats is not None:
                text = json.dumps({"key": key, "stats": stats, **payload}, separators=(",", ":"))
        self._read()
        if text != self._walk:
            self._walk = text
            self._changed = True

    def forget_unseen(self, walked: list[str], seen: set[str]) -> None:
        """Drop the files under the folders this run walked (absolute) that it did not lint: removed, renamed
        or excluded since, so the index does not grow with every file a checkout ever had."""
        if not walked:
            return
        prefixes = tuple(folder.rstrip(os.sep) + os.sep for folder in walked)
        entries = self._read()
        gone = [path for path in entries if path not in seen and path.startswith(prefixes)]
        for path in gone:
            del entries[path]
        self._changed = self._changed or bool(gone)

    def save(self) -> None:
        """Write the index when this run changed it (atomically; a lost race only costs some hashing)."""
        if not self._changed or self._entries is None:
            return
        lines = [self.header]
        if self._walk is not None:
            lines.append(_WALK_PREFIX + self._walk)
        for path, ((size, mtime, ctime, inode), digest, verdicts) in sorted(self._entries.items()):
            lines.append(f"{digest} {verdicts or '-'} {size} {mtime} {ctime} {inode} {path}")
        try:
            self._prepare()
            write_atomic(os.path.join(self.directory, FILE_INDEX),
                         ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
        except (OSError, cachedir.CacheDirError):
            return  # a read-only checkout lints without caching
        self._changed = False

    def _read(self) -> dict[str, tuple[tuple[int, int, int, int], str, str]]:
        if self._entries is not None:
            return self._entries
        self._entries = {}
        try:
            with open(os.path.join(self.directory, FILE_INDEX), "rb") as handle:
                text = handle.read().decode("utf-8", "surrogateescape")
        except OSError:  # no index yet: every file is read
            return self._entries
        header, _, body = text.partition("\n")
        if header != self.header:  # another analyzer, configuration or Python: its verdicts do not hold
            return self._entries
        for line in body.split("\n"):
            if line.startswith(_WALK_PREFIX):
                self._walk = line[len(_WALK_PREFIX):]
                continue
            fields = line.split(" ", 6)
            if len(fields) != 7 or len(fields[0]) != 64 or not _KEY_CHARACTERS.issuperset(fields[0]):
                continue  # a damaged line is a file read again
            try:
                signature = (int(fields[2]), int(fields[3]), int(fields[4]), int(fields[5]))
            except ValueError:
                continue
            self._entries[fields[6]] = (signature, fields[0], fields[1].strip("-"))
        return self._entries

    def _prepare(self) -> None:
        cachedir.claim(self.directory.parent)
        self.directory.mkdir(exist_ok=True)
