"""What the faces share to replay files: finding history files, importing the current code, dispatching
each file to its replayer, and turning anything that goes wrong outside a replayer into an ``error``
result instead of a crash.

Dispatch: a neutral history (``"format": "replaytest-history"``) goes to the replayer whose ``engine``
is its ``workflow.engine`` — an engine no installed replayer handles is an error naming it; any other
file goes to the first replayer whose ``sniff`` accepts its first bytes (an engine's native format).

``replay_file`` reads a history file once (``adapter.LoadedHistory``): recognising it, replaying it and
listing the redacted paths of a divergence all use what was kept of those bytes (their head, the text)
and what is parsed from them.

Replayers arrive as arguments (the faces get them from ``replaytest.plugins.load_plugins``), so this
module never imports a framework.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from replaytest.fileio import read_regular
from replaytest.history.errors import HistoryError
from replaytest.history.io import load_history, parse_json
from replaytest.history.model import FORMAT
from replaytest.history.sniff import UNKNOWN_ENGINE, neutral_engine
from replaytest.replay.adapter import (
    HistoryReplayer,
    HistoryTooLargeError,
    LoadedHistory,
    ReplayOptions,
    WorkflowSet,
    replay_loaded,
)
from replaytest.replay.capture import captured_output
from replaytest.replay.divergence import RUN_STATUSES, ReplayResult

SNIFF_BYTES = LoadedHistory.HEAD_BYTES  # the first bytes recognising a file
HISTORY_SUFFIX = ".json"


class WorkflowImportError(Exception):
    """A ``module:attr`` of ``replay_workflows`` / ``--workflows`` could not be imported."""


def read_head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    return read_regular(path, size)


def find_replayer(head: bytes, replayers: Sequence[HistoryReplayer]) -> HistoryReplayer | None:
    """The replayer for a file starting with ``head``: for a neutral history the one of its engine, else
    the first (in plugin order) whose ``sniff`` accepts it."""
    engine = neutral_engine(head)
    if engine is not None:
        return _replayer_of(engine, replayers)
    for replayer in replayers:
        if replayer.sniff(head):
            return replayer
    return None


def _replayer_of(engine: str, replayers: Sequence[HistoryReplayer]) -> HistoryReplayer | None:
    return next((replayer for replayer in replayers if replayer.engine == engine), None)


def recognise(
    path: Path, head: bytes, replayers: Sequence[HistoryReplayer], loaded: LoadedHistory | None = None
) -> HistoryReplayer | str:
    """The replayer for the history file ``path`` (starting with ``head``), or why there is none.

    The one recogniser of both faces (``replaytest replay`` and pytest collection run every ``*.json``
    of the replay paths through it): the first bytes decide the usual case; otherwise the whole file is
    read as strict JSON and recognised by its structure, so key order, separators or a large first
    payload never make a history invisible, and a file that is not one fails with the reason. With
    ``loaded`` (the file already read) the whole file is taken from there, never read again."""
    engines = ", ".join(r.engine for r in replayers) or "none installed"
    engine = neutral_engine(head)
    if engine is None and find_replayer(head, replayers) is None:
        try:
            document = loaded.document() if loaded is not None else parse_json(read_regular(path), path)
        except HistoryError as error:
            return f"not a history: {error}"
        except OSError as error:
            return f"cannot read history: {error.strerror or error}"
        found = _by_structure(document, replayers)
        if found is None:
            return (f"not a history any replayer recognises: a JSON document with neither \"format\": "
                    f"\"{FORMAT}\" nor a recognised engine's events (replayers: {engines})")
        engine, head = found
    if engine == UNKNOWN_ENGINE:
        # Rare (a hand-ordered file, or a broken one): the validating loader finds the engine or says
        # what is wrong with the file, with its JSON path.
        try:
            engine = (loaded.history() if loaded is not None else load_history(path)).workflow.engine
        except HistoryError as error:
            return str(error)
    if engine is not None:
        replayer = _replayer_of(engine, replayers)
        if replayer is None:
            return f"no replayer for engine {engine!r} ($.workflow.engine); installed replayers: {engines}"
        return replayer
    replayer = find_replayer(head, replayers)
    if replayer is None:
        return f"not a history any replayer recognises (replayers: {engines})"
    return replayer


def _by_structure(document: Any, replayers: Sequence[HistoryReplayer]) -> tuple[str | None, bytes] | None:
    """(neutral engine or None, a head the replayers can sniff) for a parsed document, or None."""
    if not isinstance(document, dict):
        return None
    if document.get("format") == FORMAT:
        return UNKNOWN_ENGINE, b""
    # Engine formats: the replayers sniff a canonical head made of the top-level scalars and the first event.
    summary = {key: value for key, value in document.items() if not isinstance(value, (dict, list))}
    events = document.get("events")
    if isinstance(events, list):
        summary["events"] = events[:1]
    head = json.dumps(summary, ensure_ascii=False).encode("utf-8")
    return (None, head) if find_replayer(head, replayers) is not None else None


def iter_history_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Every ``*.json`` file named or below the folders named, sorted, each once. Folders named
    ``blobs`` (content-addressed payloads stored beside histories) and hidden folders are skipped."""
    seen: set[Path] = set()
    found: list[Path] = []
    for entry in paths:
        path = Path(entry)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "blobs")
                found.extend(Path(root, name) for name in files if name.endswith(HISTORY_SUFFIX))
        else:
            found.append(path)
    for path in sorted(found, key=lambda p: p.as_posix()):
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            yield path


def is_module_name(spec: str) -> bool:
    """True for a dotted module name (``app.services``): a spec naming a whole module."""
    return bool(spec) and all(part.isidentifier() for part in spec.split("."))


def import_object(spec: str, base: Path | None = None) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted), or a whole module named without ``:attr`` (Temporal
    and Restate replay take every workflow or service in it). ``base`` is put on ``sys.path`` first if it is not there, so a
    project's own packages import the way ``celery -A`` / ``uvicorn`` find them."""
    module_name, sep, attr = spec.partition(":")
    whole_module = not sep and is_module_name(spec)
    if not whole_module and (not sep or not module_name or not attr):
        raise WorkflowImportError(
            f"{spec!r} must be module:attribute (e.g. app.workflows:support_agent) or a module name (app.workflows)"
        )
    if base is not None:
        base_text = str(base.resolve())
        if base_text not in sys.path:
            sys.path.insert(0, base_text)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise WorkflowImportError(f"cannot import {spec!r}: {error}") from None
    except SyntaxError as error:
        where = f" ({error.filename}, line {error.lineno})" if error.filename else ""
        raise WorkflowImportError(f"cannot import {spec!r}: syntax error{where}: {error.msg}") from None
    except SystemExit as error:
        # The module's own exit code must not become replaytest's.
        raise WorkflowImportError(f"cannot import {spec!r}: importing it called sys.exit({error.code!r})") from None
    except Exception as error:  # the module raised while it was imported
        raise WorkflowImportError(f"cannot import {spec!r}: importing it raised {type(error).__name__}: {error}") from None
    for part in attr.split(".") if attr else ():
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise WorkflowImportError(f"cannot import {spec!r}: module {module_name!r} has no {attr!r}") from None
    return obj


def load_workflows(specs: Iterable[str], base: Path | None = None, extra: Iterable[Any] = ()) -> WorkflowSet:
    """The current code: objects imported from ``specs`` plus ``extra`` ones (hooks, direct calls)."""
    objects: list[Any] = []
    origins: list[str] = []
    for spec in specs:
        objects.append(import_object(spec, base))
        origins.append(spec)
    for obj in extra:
        objects.append(obj)
        origins.append(f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__name__)}")
    return WorkflowSet(objects=tuple(objects), origins=tuple(origins))


def replay_file(
    path: Path,
    replayers: Sequence[HistoryReplayer],
    workflows: WorkflowSet,
    options: ReplayOptions,
    loaded: LoadedHistory | None = None,
) -> ReplayResult:
    """Replay one file with the replayer that recognises it; unreadable or unrecognised files and
    replayer crashes become ``error`` results naming the file. The file is read once, here, unless the
    caller has read it already (``loaded``, e.g. to key a cache); a file larger than
    ``options.max_history_bytes`` is an ``error`` before any of it is read."""
    started = time.perf_counter()
    if loaded is None:
        try:
            loaded = LoadedHistory.read(path, options)
        except HistoryTooLargeError as error:
            return ReplayResult(path, "?", "?", status="error", error=str(error))
        except OSError as error:
            return ReplayResult(path, "?", "?", status="error", error=f"cannot read history: {error.strerror or error}")
    head = loaded.head
    replayer = recognise(path, head, replayers, loaded)
    if isinstance(replayer, str):
        return ReplayResult(path, "?", "?", status="error", error=replayer)
    with captured_output() as captured:
        try:
            result = replay_loaded(replayer, loaded, workflows, options)
        except KeyboardInterrupt:
            raise  # the user stops the whole run
        except BaseException as error:  # noqa: BLE001 - one history must never end the run for the others
            result = ReplayResult(path, replayer.engine, "?", status="error", error=_why_replay_ended(replayer.engine, error))
    if captured.text:
        result.log = captured.text
    if result.run_status not in RUN_STATUSES and result.status != "error":
        result.run_status = recorded_run_status(loaded, head)
        if result.run_status is None:
            result.notes.append(UNKNOWN_RUN_STATUS_NOTE)
    if result.status == "diverged" and result.divergence is not None and neutral_engine(head) is not None:
        result.redacted = redacted_before(loaded, result.divergence.position)
    if not result.duration_s:
        result.duration_s = time.perf_counter() - started
    return result


def _why_replay_ended(engine: str, error: BaseException) -> str:
    """Why a replay ended by an exception that left the replayer: a replayer bug, or the replayed code
    ending the process (``sys.exit``, an engine's control-flow ``BaseException`` that escaped). Either
    way the history could not be checked, and every other history still gets its verdict."""
    if isinstance(error, SystemExit):
        return (f"the replayed code called sys.exit({error.code!r}) during {engine} replay; "
                "the history could not be checked")
    return f"{engine} replayer failed: {type(error).__name__}: {error}"


UNKNOWN_RUN_STATUS_NOTE = "the run's recorded status (running, parked, completed, failed) is unknown: its replayer does not report it"


def recorded_run_status(loaded: LoadedHistory, head: bytes) -> str | None:
    """The ``status`` of a neutral history, for a replayer that did not set ``ReplayResult.run_status``
    (the built-in ones all do); None for another format, whose replayer alone can read it."""
    if neutral_engine(head) is None:
        return None
    try:
        return loaded.history().status
    except HistoryError:
        return None


def redacted_before(history: LoadedHistory | Path, position: int | None) -> tuple[str, ...]:
    """The redacted JSON paths of a neutral history that code diverging at event ``position`` could
    have read: everything outside the events, and the events up to that position (all, if unknown).
    ``history`` is the file as the replay read it (its History is parsed already), or a path to load."""
    try:
        paths = history.history().redacted if isinstance(history, LoadedHistory) else load_history(history).redacted
    except HistoryError:
        return ()
    if position is None:
        return paths
    kept = []
    for item in paths:
        match = _EVENT_PATH.match(item)
        if match is None or int(match.group(1)) < position:
            kept.append(item)
    return tuple(kept) or paths


_EVENT_PATH = re.compile(r"\$\.events\[(\d+)\]")
