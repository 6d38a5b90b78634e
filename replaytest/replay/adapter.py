"""The interface a framework implements to replay its histories: ``HistoryReplayer``, and the history file
the runner hands it already read, ``LoadedHistory``.

A replayer replays one history file against the current code. Neutral histories reach the replayer
whose ``engine`` equals their ``workflow.engine`` (the runner reads it); an engine's native format is
recognised by the replayer's ``sniff`` on the first bytes (cheap enough for collecting thousands of
files; a replayer of neutral histories only returns False). The current code is a
``WorkflowSet``: the objects named by ``replay_workflows`` / ``[tool.replaytest.replay] workflows`` and
returned by the ``pytest_replaytest_workflows`` hook; each replayer picks the objects it understands.

The runner reads each history file once: it recognises the file from its first bytes and hands it on
as a ``LoadedHistory`` (what the replay needs of the bytes, not the bytes) to the replayer's
``replay_loaded`` (``LoadedHistoryReplayer``), and looks up the redacted paths of a divergence in the
same object. ``replay_loaded`` is optional: a replayer that only
has ``replay(path, …)`` (a third-party one written before it existed) still works, and reads the file
again itself.
"""

from __future__ import annotations

import errno
import hashlib
import time
import types
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from replaytest.config import DEFAULT_MAX_BLOB_BYTES, DEFAULT_MAX_HISTORY_BYTES, HazardPolicy, PromptPolicy
from replaytest.fileio import FileTooLargeError, read_regular
from replaytest.history import History, HistoryError, load_history
from replaytest.history.io import decode_history, history_from_document, history_from_text, parse_text
from replaytest.replay.divergence import IN_FLIGHT_STATUSES, ReplayResult


@dataclass(frozen=True)
class ReplayOptions:
    """How strict a replay is. Prompt policy is per history status: a running or parked task would resume
    under the new prompt (fail by default); a completed one only documents the change (warn)."""

    prompts_running: PromptPolicy = "fail"
    prompts_completed: PromptPolicy = "warn"
    # A prompt a running/parked run has not reached yet whose version differs from the run's manifest.
    prompts_pending: PromptPolicy = "fail"
    strict_args: bool = False
    details: bool = False
    # A clock/random/uuid read in orchestration code (``nondeterministic-call``): fail, or warn.
    hazards: HazardPolicy = "fail"
    # The largest history file and blob read (``max-history-bytes``/``max-blob-bytes``); larger is an error.
    max_history_bytes: int = DEFAULT_MAX_HISTORY_BYTES
    max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES
    # Resume every in-flight run that replays green with the engine's own code past the end of its history
    # (``ReplayResult.rehearsal``), where the engine's replayer can: what ``impact`` asks for.
    rehearse: bool = False
    # Patch ids a fresh run of each workflow type is rehearsed up to (``ReplayResult.fresh_run``): one history
    # per type (a finished one first) lends its input and its recorded results; what ``impact`` verifies.
    fresh_run: tuple[str, ...] = ()
    # Set by the batch on the one history per type whose input the fresh run starts from.
    fresh_start: bool = False
    # Qualified names a project declares as model calls (RT201's ``calls`` option, the setting lint reads):
    # a recorded step that calls one and recorded no prompt version is named in a note, as for the catalogue's.
    model_calls: tuple[str, ...] = ()

    def prompt_policy(self, status: str) -> PromptPolicy:
        return self.prompts_running if status in IN_FLIGHT_STATUSES else self.prompts_completed


@dataclass(frozen=True)
class WorkflowSet:
    """The current code to replay against: any objects (functions, classes, configuration objects)."""

    objects: Sequence[Any] = field(default_factory=tuple)
    origins: Sequence[str] = field(default_factory=tuple)  # the module:attr each object came from

    def none_found(self, advice: str) -> str:
        """What a message listing an engine's known workflows says when it found none: ``advice`` (how to name
        them), or, when the current code was named as a module alone, that this engine needs ``module:attr``:
        the module was given, so advice to give one would read as if nothing had been."""
        modules = [origin for obj, origin in zip(self.objects, self.origins) if isinstance(obj, types.ModuleType)]
        if not modules:
            return f"none ({advice})"
        return (f"none: {', '.join(repr(name) for name in modules)} names a module alone, which serves the engines "
                "that find their workflows in a module (Temporal and Restate among them); name each of this "
                "engine's workflows as module:attr")


@runtime_checkable
class HistoryReplayer(Protocol):
    engine: str

    def sniff(self, head: bytes) -> bool:
        """True if a file starting with ``head`` (up to 64 KiB) is in this engine's native history format."""

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        """Replay one history file; never raises for a divergence or a stale type (see ReplayResult)."""


class HistoryTooLargeError(OSError):
    """A history file larger than ``max-history-bytes``, refused before it was read; ``str()`` names the
    file, its size, the limit and how to raise it."""

    def __init__(self, path: Path, size: int, max_size: int) -> None:
        super().__init__(
            f"{path}: history file is {size:,} bytes, more than the history limit of {max_size:,} bytes; "
            "it was not read. If it is genuine, raise max-history-bytes in [tool.replaytest.replay] (or the "
            "pytest ini option replay_max_history_bytes)"
        )
        self.size = size
        self.max_size = max_size


class LoadedHistory:
    """One history file, read once (regular files only, ``fileio.read_regular``) and kept as what the
    replay needs of it, never as its bytes: their digest (``digest``, the replay cache's key), their first
    ``HEAD_BYTES`` (``head``, for recognising the format), their size, and the text, from which the
    strict JSON document and the validated neutral ``History`` are made on first use. Once the History
    is built the text and the document are dropped (the History holds what a replay needs); a later
    ``text()`` or ``document()`` (rare: a third-party caller) reads the file again and refuses it if its
    digest changed. Results stored by
    reference (``result_ref``) stay in the blob store, read when the replay asks for them (each at most
    ``max_blob_bytes``)."""

    HEAD_BYTES = 64 * 1024

    def __init__(self, path: Path, data: bytes, max_blob_bytes: int | None = None) -> None:
        self.path = path
        self.max_blob_bytes = max_blob_bytes
        self.size = len(data)
        self.digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.head = data[: self.HEAD_BYTES]
        self._text: str | None = None
        self._text_error: HistoryError | None = None  # why the bytes are not a history's text
        try:
            self._text = decode_history(data, path)
        except HistoryError as error:
            self._text_error = error
        self._document: Any = _NOT_PARSED
        self._history: History | None = None
        self._history_error: HistoryError | None = None

    @classmethod
    def read(cls, path: Path, options: ReplayOptions | None = None) -> LoadedHistory:
        """The file at ``path`` read whole, within the size limits of ``options`` (none without);
        ``HistoryTooLargeError`` (before reading) for a file over ``max_history_bytes``, another
        ``OSError`` (``NotRegularFileError`` for a FIFO, a device …) when it cannot be read."""
        path = Path(path)
        if options is None:
            return cls(path, read_regular(path))
        try:
            data = read_regular(path, max_size=options.max_history_bytes)
        except FileTooLargeError as error:
            raise HistoryTooLargeError(path, error.size, error.max_size) from None
        return cls(path, data, options.max_blob_bytes)

    def text(self) -> str:
        """The file's text (UTF-8, a byte order mark dropped), for a parser that wants text; ``ValueError``
        saying why when the bytes are no such text (UTF-16, not UTF-8, empty)."""
        if self._text_error is not None:
            raise ValueError(self._text_error.message)
        if self._text is None:
            self._text = self._read_again()
        return self._text

    def document(self) -> Any:
        """The file's JSON, parsed strictly (``history.io.parse_text``); ``HistoryError`` naming the file
        and the position or JSON path when it is not strict JSON."""
        if self._document is _NOT_PARSED:
            if self._text_error is not None:
                raise self._text_error
            self._document = parse_text(self.text(), self.path)
        return self._document

    def history(self) -> History:
        """The neutral history in the file, validated as ``load_history`` validates it (blobs checked);
        ``HistoryError`` naming the file and the JSON path of the problem (the same one on every call)."""
        if self._history is None:
            if self._history_error is not None:
                raise self._history_error
            try:
                self._history = self._built_history()
            except HistoryError as error:
                self._history_error = error
                raise
            # The History holds what a replay needs; the text and the parsed document would only add to it.
            self._document = _NOT_PARSED
            self._text = None
        return self._history

    def _built_history(self) -> History:
        if self._text_error is not None:
            raise self._text_error
        if self._document is not _NOT_PARSED:  # parsed whole already (recognised by its structure)
            document, self._document = self._document, _NOT_PARSED
            return history_from_document(document, self.path, self.max_blob_bytes)
        text = self.text()
        self._text = None  # held by this frame alone, so it is freed as soon as the History is built
        try:
            return history_from_text(text, self.path, self.max_blob_bytes)
        except HistoryError:
            self._text = text  # a caller may still want the text of a file that is not a valid history
            raise

    def history_if_loaded(self) -> History | None:
        """The neutral ``History`` if ``history()`` has built it already (never parses anything)."""
        return self._history

    def _read_again(self) -> str:
        """The text, dropped earlier, from the file again; ``OSError`` if the file is no longer what was
        read (another size or digest) or cannot be read."""
        data = read_regular(self.path, max_size=self.size)
        if len(data) != self.size or "sha256:" + hashlib.sha256(data).hexdigest() != self.digest:
            raise OSError(errno.ESTALE, "changed since it was read for this replay", str(self.path))
        return decode_history(data, self.path)


_NOT_PARSED = object()


@runtime_checkable
class LoadedHistoryReplayer(HistoryReplayer, Protocol):
    """A replayer that replays a history the runner has read already (the runner prefers it)."""

    def replay_loaded(self, loaded: LoadedHistory, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        """Replay ``loaded`` without reading its file again; never raises for a divergence or a stale type."""


def replay_loaded(
    replayer: HistoryReplayer, loaded: LoadedHistory, workflows: WorkflowSet, options: ReplayOptions
) -> ReplayResult:
    """``replayer.replay_loaded(loaded, …)`` when the replayer has it, else ``replayer.replay(path, …)``."""
    # Not isinstance(replayer, LoadedHistoryReplayer): a runtime protocol check costs ~80 µs, per replay.
    method = getattr(replayer, "replay_loaded", None)
    if callable(method):
        result: ReplayResult = method(loaded, workflows, options)
        return result
    return replayer.replay(loaded.path, workflows, options)


class NeutralReplayer:
    """The base of an engine's replayer of neutral histories (engine ``engine`` in the file): it reads the file
    (or takes the runner's ``LoadedHistory``), times the replay, names a file that does not load, and hands
    each loaded ``History`` to ``replay_history``, the one method an engine writes. ``replaying`` wraps every
    replay (the journal pauses the garbage collector there); ``new_result`` starts the result every engine
    returns, refusing a history of another engine."""

    engine: str = ""

    def sniff(self, head: bytes) -> bool:
        return False  # neutral histories are dispatched on their ``engine``, not sniffed

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        with self.replaying():
            return replay_neutral_file(
                path, self.engine, lambda history, where: self.replay_history(history, workflows, options, where)
            )

    def replay_loaded(self, loaded: LoadedHistory, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        """Replay a history file the runner has read already."""
        with self.replaying():
            return replay_neutral(
                loaded, self.engine, lambda history, where: self.replay_history(history, workflows, options, where)
            )

    def replaying(self) -> AbstractContextManager[object]:
        return nullcontext()

    def replay_history(
        self, history: History, workflows: WorkflowSet, options: ReplayOptions, path: Path | None = None
    ) -> ReplayResult:
        """Replay an already loaded history (``path`` is only named in the result)."""
        raise NotImplementedError

    def new_result(self, history: History, path: Path | None) -> ReplayResult:
        """The result of replaying ``history``; an ``error`` one when the history is another engine's."""
        result = ReplayResult(
            path or history.source or Path("<history>"), self.engine, history.workflow.type, history.workflow.id,
            events=len(history.events),
        )
        if history.workflow.engine != self.engine:
            result.status, result.error = "error", f"a history of engine {history.workflow.engine!r}, not {self.engine!r}"
        return result


def replay_neutral(
    loaded: LoadedHistory, engine: str, replay_history: Callable[[History, Path], ReplayResult]
) -> ReplayResult:
    """Replay the neutral history in ``loaded`` with ``replay_history``, timed; a file that does not load
    is an ``error`` result naming the loader's reason (file and JSON path), never an exception."""
    started = time.perf_counter()
    try:
        history = loaded.history()
    except HistoryError as error:
        return ReplayResult(loaded.path, engine, "?", status="error", error=str(error))
    result = replay_history(history, loaded.path)
    result.duration_s = time.perf_counter() - started
    return result


def replay_neutral_file(
    path: Path, engine: str, replay_history: Callable[[History, Path], ReplayResult]
) -> ReplayResult:
    """Load a neutral history and replay it with ``replay_history``, timed, the result carrying the run's
    recorded ``status``; a file that does not load is an ``error`` result naming the loader's reason (file
    and JSON path), never an exception."""
    started = time.perf_counter()
    try:
        history = load_history(path)
    except HistoryError as error:
        return ReplayResult(path, engine, "?", status="error", error=str(error))
    result = replay_history(history, path)
    result.run_status = result.run_status or history.status  # a replayer may name it in its engine's words
    result.duration_s = time.perf_counter() - started
    return result
