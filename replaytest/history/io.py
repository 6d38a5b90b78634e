"""Reading, validating and writing history files: ``load_history``, ``save_history``,
``history_from_dict``, ``history_from_text``, ``history_from_document``, ``history_to_dict``.

The validator is written by hand against ``schema.json`` (shipped beside this module, for editors and
other tools) so loading needs no third-party package and every error names the file and the JSON path
of the problem (``HistoryError``). Nothing here pickles or evaluates anything: a history is data.

Writing is deterministic: the fixed key order of the contract for known fields, recorded payloads in
their recorded key order (it is the order the code saw), unknown event fields sorted, two-space
indentation, UTF-8 without escapes, a final newline. Results larger than ``BLOB_THRESHOLD`` go to the
blob store beside the file and are referenced by hash.

Loading keeps memory proportional to the history: the events are parsed one at a time and each becomes
its ``Event`` at once (``strict_json.stream_object``), so the parsed document of the whole file never
exists beside the text and the History; strings repeated in every event (kinds, names) are shared. A
file with a problem is parsed again whole, so the error is the one the whole-document check names first.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from replaytest.fileio import read_regular
from replaytest.history.blobs import BLOB_THRESHOLD, BlobStore, blob_bytes
from replaytest.history.errors import HistoryError
from replaytest.history.model import (
    EVENT_KINDS,
    FORMAT,
    FORMAT_VERSION,
    STATUSES,
    WAIT_KINDS,
    ErrorInfo,
    Event,
    History,
    PromptRef,
    Waiting,
    WorkflowInfo,
)
from replaytest.history.strict_json import StrictJSONError, loads_strict, stream_object

MAX_DEPTH = 400
_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
_TOP_KEYS = (
    "format",
    "format_version",
    "workflow",
    "code_version",
    "prompt_versions",
    "prompt_manifest",
    "status",
    "waiting",
    "input",
    "events",
    "result",
    "error",
    "redacted",
    "graph",
    "nested_namespaces",
)
_EVENT_KEYS = (
    "seq",
    "kind",
    "name",
    "args_digest",
    "prompt",
    "idempotency_key",
    "result",
    "result_ref",
    "error",
    "duration_s",
    "patch_id",
)
_WORKFLOW_KEYS = ("type", "id", "run_id", "engine", "protocol_version")


def load_history(path: Path | str) -> History:
    """Read and validate one history file; blobs resolve from ``<its directory>/blobs``.

    Every ``result_ref`` is checked against its blob's hash here, so a tampered or truncated blob store
    fails at load time, not halfway through a replay.
    """
    path = Path(path)
    try:
        raw = read_regular(path)
    except OSError as error:
        raise HistoryError(path, None, f"cannot be read: {error.strerror or error}") from None
    text = decode_history(raw, path)
    del raw  # the text is all the parser needs
    return history_from_text(text, path)


def history_from_text(text: str, path: Path | str, max_blob_bytes: int | None = None) -> History:
    """The History in ``text`` (the file at ``path`` as ``decode_history`` made it): parsed strictly,
    validated and its blobs checked, as ``history_from_document(parse_text(text, path), path, …)`` does and
    with the same errors, but with the events parsed one at a time (see the module docstring)."""
    path = Path(path)
    blobs = BlobStore.beside(path, max_blob_bytes)
    history = _streamed_history(text, path, blobs)
    if history is None:
        history = history_from_dict(parse_text(text, path), path, blobs, parsed=True)
    _check_blobs(history, path, blobs)
    return history


def _streamed_history(text: str, path: Path, blobs: BlobStore) -> History | None:
    """The History in ``text``, each event validated as it is parsed; None when the text does not stream
    or has any problem (the caller parses it whole, which names the problem the way it always has)."""
    validator = _Validator(path, check_payloads=False)
    events: list[Event] = []

    def consume(index: int, item: Any) -> None:
        events.append(validator.event(item, index))

    try:
        document = stream_object(text, "events", consume)
        if document is None:
            return None
        return history_from_dict(document, path, blobs, parsed=True, events=tuple(events), validator=validator)
    except (StrictJSONError, HistoryError):
        return None


def history_from_document(data: Any, path: Path | str, max_blob_bytes: int | None = None) -> History:
    """The History in ``data``, the document ``parse_json`` made of the file at ``path`` (read by the
    caller, so a replay that has the bytes already does not read the file again): validated, with every
    ``result_ref`` checked against its blob beside ``path``, as ``load_history`` does. A blob larger than
    ``max_blob_bytes`` is a ``HistoryError`` (its store keeps the limit for the replay's later reads)."""
    path = Path(path)
    blobs = BlobStore.beside(path, max_blob_bytes)
    history = history_from_dict(data, path, blobs, parsed=True)
    _check_blobs(history, path, blobs)
    return history


def _check_blobs(history: History, path: Path, blobs: BlobStore) -> None:
    for index, event in enumerate(history.events):
        if event.result_ref is not None:
            blobs.read_json(event.result_ref, path, f"$.events[{index}].result_ref")


def decode_history(raw: bytes, path: Path | str | None) -> str:
    """A history file's bytes as text: UTF-8, a byte order mark dropped; ``HistoryError`` for UTF-16 (or
    another wide encoding), bytes that are not UTF-8 and an empty file."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(raw) > 1 and (raw[0] == 0) != (raw[1] == 0)):
        raise HistoryError(path, None, "is UTF-16 (or another wide encoding); history files are UTF-8 JSON")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise HistoryError(path, None, f"is not UTF-8 (byte {error.start}): {error.reason}") from None
    if not text or text.isspace():  # not text.strip(): that copies the whole file
        raise HistoryError(path, None, "is empty; a history is a JSON object")
    return text


def parse_json(raw: bytes, path: Path | str | None) -> Any:
    """Strict JSON (``strict_json``: no NaN/Infinity or numbers overflowing to it, no duplicate keys),
    UTF-8; errors give line and column or the JSON path."""
    return parse_text(decode_history(raw, path), path)


def parse_text(text: str, path: Path | str | None) -> Any:
    """``text`` (as ``decode_history`` made it) parsed as strict JSON, as ``parse_json`` parses bytes."""
    try:
        return loads_strict(text)
    except StrictJSONError as error:
        raise HistoryError(path, error.json_path, error.message) from None


def history_from_dict(
    data: Any,
    source: Path | str | None = None,
    blobs: BlobStore | None = None,
    *,
    parsed: bool = False,
    events: tuple[Event, ...] | None = None,
    validator: _Validator | None = None,
) -> History:
    """Validate parsed JSON and build a History. ``source`` is named in errors; ``blobs`` resolves refs
    (by default the store beside ``source``, when there is one). ``parsed=True`` says ``data`` came from
    ``json.loads`` (as in ``load_history``), so payloads need no check that they are JSON values.
    ``events``: the events, validated already by ``validator`` as they were parsed (``data`` then holds
    an empty list under ``"events"``)."""
    src = Path(source) if source is not None else None
    if blobs is None and src is not None:
        blobs = BlobStore.beside(src)
    v = validator or _Validator(src, check_payloads=not parsed)
    if not isinstance(data, dict):
        v.fail("$", f"expected an object, got {_type_name(data)}; not a replaytest history")
    fmt = data.get("format")
    if fmt != FORMAT:
        shown = "missing" if "format" not in data else json.dumps(fmt, ensure_ascii=False)[:80]
        v.fail("$.format", f"not a replaytest history: format is {shown}, expected {FORMAT!r}")
    version = data.get("format_version")
    if not _is_int(version):
        v.fail("$.format_version", f"expected an integer, got {_type_name(version)}")
    if version > FORMAT_VERSION:
        v.fail(
            "$.format_version",
            f"format_version {version} was written by a newer replaytest (this one reads up to "
            f"{FORMAT_VERSION}); upgrade replaytest",
        )
    if version < 1:
        v.fail("$.format_version", f"expected 1, got {version}")
    for key in data:
        if key not in _TOP_KEYS:
            v.fail(_join("$", key), f"unknown key; expected one of {', '.join(_TOP_KEYS)}")
    for key in ("workflow", "status", "events"):
        if key not in data:
            v.fail("$", f"missing required key {key!r}")

    workflow = v.workflow(data["workflow"])
    status = data["status"]
    if status not in STATUSES:
        v.fail("$.status", f"expected one of {', '.join(STATUSES)}, got {_short(status)}")
    code_version = v.optional_str(data.get("code_version"), "$.code_version")
    prompt_versions = v.string_map(data.get("prompt_versions", {}), "$.prompt_versions")
    raw_manifest = data.get("prompt_manifest")
    prompt_manifest = None if raw_manifest is None else v.string_map(raw_manifest, "$.prompt_manifest")
    v.json_value(data.get("input"), "$.input")
    v.json_value(data.get("result"), "$.result")
    error = v.error(data.get("error"), "$.error")
    events_raw = data["events"]
    if not isinstance(events_raw, list):
        v.fail("$.events", f"expected an array, got {_type_name(events_raw)}")
    if events is None or events_raw:
        events = tuple(v.event(item, index) for index, item in enumerate(events_raw))
    waiting = v.waiting(data.get("waiting"), status)
    redacted_raw = data.get("redacted", [])
    if not isinstance(redacted_raw, list):
        v.fail("$.redacted", f"expected an array of JSON paths, got {_type_name(redacted_raw)}")
    redacted = tuple(v.string(item, f"$.redacted[{index}]") for index, item in enumerate(redacted_raw))
    graph = data.get("graph")
    if graph is not None:
        v.object(graph, "$.graph")
        v.json_value(graph, "$.graph")
    nested_namespaces = v.nested_namespaces(data.get("nested_namespaces"))
    return History(
        graph=graph,
        nested_namespaces=nested_namespaces,
        redacted=redacted,
        waiting=waiting,
        workflow=workflow,
        status=status,
        events=events,
        input=data.get("input"),
        result=data.get("result"),
        error=error,
        code_version=code_version,
        prompt_versions=prompt_versions,
        prompt_manifest=prompt_manifest,
        format=FORMAT,
        format_version=version,
        source=src,
        blobs=blobs,
    )


class _Validator:
    def __init__(self, source: Path | None, check_payloads: bool = True) -> None:
        self.source = source
        self.check_payloads = check_payloads
        self._prompt_refs: dict[tuple[str, str], PromptRef] = {}
        # Command names repeat across a history's events: one string each instead of one per event.
        self._names: dict[str, str] = {}

    def fail(self, json_path: str, message: str) -> Any:
        raise HistoryError(self.source, json_path, message)

    def object(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {_type_name(value)}")
        return value

    def string(self, value: Any, path: str, *, nonempty: bool = False) -> str:
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {_type_name(value)}")
        if nonempty and not value:
            self.fail(path, "expected a non-empty string")
        return value

    def optional_str(self, value: Any, path: str) -> str | None:
        return None if value is None else self.string(value, path)

    def digest(self, value: Any, path: str) -> str | None:
        if value is None:
            return None
        self.string(value, path)
        if not _SHA256.fullmatch(value):
            self.fail(path, f"expected 'sha256:' and 64 lowercase hex digits, got {_short(value)}")
        return value

    def keys(self, obj: Mapping[str, Any], path: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
        for key in required:
            if key not in obj:
                self.fail(path, f"missing required key {key!r}")
        for key in obj:
            if key not in allowed:
                self.fail(_join(path, key), f"unknown key; expected one of {', '.join(allowed)}")

    def workflow(self, value: Any) -> WorkflowInfo:
        obj = self.object(value, "$.workflow")
        self.keys(obj, "$.workflow", _WORKFLOW_KEYS, ("type", "id"))
        return WorkflowInfo(
            type=self.string(obj["type"], "$.workflow.type", nonempty=True),
            id=self.string(obj["id"], "$.workflow.id"),
            run_id=self.optional_str(obj.get("run_id"), "$.workflow.run_id"),
            engine=self.string(obj.get("engine", "journal"), "$.workflow.engine", nonempty=True),
            protocol_version=self.protocol_version(obj.get("protocol_version")),
        )

    def protocol_version(self, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail("$.workflow.protocol_version", f"expected a positive integer, got {value!r}")
        return int(value)

    def nested_namespaces(self, value: Any) -> tuple[tuple[int, str], ...] | None:
        """``$.nested_namespaces``: ``[{"nested": 0, "namespace": "…"}, …]``, nested run numbers increasing."""
        if value is None:
            return None
        if not isinstance(value, list):
            self.fail("$.nested_namespaces", f"expected an array, got {_type_name(value)}")
        found: list[tuple[int, str]] = []
        for index, item in enumerate(value):
            where = f"$.nested_namespaces[{index}]"
            obj = self.object(item, where)
            self.keys(obj, where, ("nested", "namespace"), ("nested", "namespace"))
            number = obj["nested"]
            if not _is_int(number) or number < 0 or (found and number <= found[-1][0]):
                self.fail(f"{where}.nested", "expected a nested run number (an integer from 0, increasing)")
            found.append((number, self.string(obj["namespace"], f"{where}.namespace")))
        return tuple(found)

    def waiting(self, value: Any, status: str) -> Waiting | None:
        """``$.waiting``: ``{"kind": "signal"|"timer", "name": …}`` (a timer's optionally with ``duration_s``), on
        parked histories only."""
        if value is None:
            return None
        if status != "parked":
            self.fail("$.waiting", f"only a parked history waits; this one is {status}")
        obj = self.object(value, "$.waiting")
        self.keys(obj, "$.waiting", ("kind", "name", "duration_s"), ("kind", "name"))
        if obj["kind"] not in WAIT_KINDS:
            self.fail("$.waiting.kind", f"expected one of {', '.join(WAIT_KINDS)}, got {_short(obj['kind'])}")
        duration = obj.get("duration_s")
        if duration is not None and obj["kind"] != "timer":
            self.fail("$.waiting.duration_s", "only a timer has a duration")
        if duration is not None and (not isinstance(duration, (int, float)) or isinstance(duration, bool) or not math.isfinite(duration) or duration < 0):
            self.fail("$.waiting.duration_s", f"expected a non-negative number, got {_short(duration)}")
        return Waiting(obj["kind"], self.string(obj["name"], "$.waiting.name"), duration)

    def string_map(self, value: Any, path: str) -> dict[str, str]:
        obj = self.object(value, path)
        for key, item in obj.items():
            if not isinstance(key, str):
                self.fail(path, f"object key {key!r} is not a string")
            self.string(item, _join(path, key))
        return dict(obj)

    def error(self, value: Any, path: str) -> ErrorInfo | None:
        if value is None:
            return None
        obj = self.object(value, path)
        self.keys(obj, path, ("type", "message"), ("type", "message"))
        return ErrorInfo(type=self.string(obj["type"], f"{path}.type", nonempty=True), message=self.string(obj["message"], f"{path}.message"))

    def json_value(self, value: Any, path: str, depth: int = 0) -> None:
        """Values that come from a dict (not a file) may hold anything; only JSON can be saved."""
        if not self.check_payloads:
            return
        if depth > MAX_DEPTH:
            self.fail(path, f"nested deeper than {MAX_DEPTH} levels")
        if value is None or isinstance(value, (bool, int, str)):
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(path, f"{value} is not a JSON number")
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                self.json_value(item, f"{path}[{index}]", depth + 1)
            return
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    self.fail(path, f"object key {key!r} is not a string")
                self.json_value(item, _join(path, key), depth + 1)
            return
        self.fail(path, f"expected a JSON value, got Python {type(value).__name__}")

    def event(self, value: Any, index: int) -> Event:
        fast = self._plain_event(value, index)
        if fast is not None:
            return fast
        path = f"$.events[{index}]"
        obj = self.object(value, path)
        for key in ("seq", "kind", "name"):
            if key not in obj:
                self.fail(path, f"missing required key {key!r}")
        seq = obj["seq"]
        if not _is_int(seq):
            self.fail(f"{path}.seq", f"expected an integer, got {_type_name(seq)}")
        if seq != index + 1:
            self.fail(f"{path}.seq", f"expected {index + 1} (events are numbered 1, 2, 3, … in order), got {seq}")
        kind = obj["kind"]
        if kind not in EVENT_KINDS:
            self.fail(f"{path}.kind", f"expected one of {', '.join(EVENT_KINDS)}, got {_short(kind)}")
        name = self.string(obj["name"], f"{path}.name")
        prompt = None
        if obj.get("prompt") is not None:
            prompt_obj = self.object(obj["prompt"], f"{path}.prompt")
            self.keys(prompt_obj, f"{path}.prompt", ("name", "version", "params"), ("name", "version"))
            params = prompt_obj.get("params")
            if params is not None:
                self.object(params, f"{path}.prompt.params")
                self.json_value(params, f"{path}.prompt.params")
            prompt = PromptRef(
                name=self.string(prompt_obj["name"], f"{path}.prompt.name", nonempty=True),
                version=self.string(prompt_obj["version"], f"{path}.prompt.version", nonempty=True),
                params=params,
            )
        result_ref = self.digest(obj.get("result_ref"), f"{path}.result_ref")
        if result_ref is not None and obj.get("result") is not None:
            self.fail(f"{path}.result", "an event has either result or result_ref, not both")
        self.json_value(obj.get("result"), f"{path}.result")
        duration = obj.get("duration_s")
        if duration is not None and (not isinstance(duration, (int, float)) or isinstance(duration, bool) or not math.isfinite(duration) or duration < 0):
            self.fail(f"{path}.duration_s", f"expected a non-negative number, got {_short(duration)}")
        patch_id = self.optional_str(obj.get("patch_id"), f"{path}.patch_id")
        if kind == "marker" and name == "patched" and not patch_id:
            self.fail(path, "a 'patched' marker needs a patch_id")
        extra = {key: item for key, item in obj.items() if key not in _EVENT_KEYS}
        for key, item in extra.items():
            if not isinstance(key, str):
                self.fail(path, f"object key {key!r} is not a string")
            self.json_value(item, _join(path, key))
        return Event(
            seq=seq,
            kind=_KIND_OF[kind],
            name=self._shared_name(name),
            args_digest=self.digest(obj.get("args_digest"), f"{path}.args_digest"),
            prompt=prompt,
            idempotency_key=self.optional_str(obj.get("idempotency_key"), f"{path}.idempotency_key"),
            result=obj.get("result"),
            result_ref=result_ref,
            error=self.error(obj.get("error"), f"{path}.error"),
            duration_s=duration,
            patch_id=patch_id,
            extra=dict(sorted(extra.items())) if extra else _NO_EXTRA,
        )


    def _plain_event(self, value: Any, index: int) -> Event | None:
        """The common shape (a step, model call without prompt, side effect …) checked inline; None
        sends anything else — or anything wrong — through the full validation with its exact errors."""
        if type(value) is not dict or not value.keys() <= _PLAIN_KEYS:
            return None
        get = value.get
        seq, kind, name = get("seq"), get("kind"), get("name")
        if type(seq) is not int or seq != index + 1 or type(kind) is not str or type(name) is not str:
            return None
        if kind not in _KIND_SET or kind == "marker":
            return None
        digest, key, ref = get("args_digest"), get("idempotency_key"), get("result_ref")
        if digest is not None and (type(digest) is not str or not _SHA256.fullmatch(digest)):
            return None
        if key is not None and type(key) is not str:
            return None
        result = get("result")
        if ref is not None and (type(ref) is not str or not _SHA256.fullmatch(ref) or result is not None):
            return None
        prompt = get("prompt")
        if prompt is not None:
            # Model events: the same checks as the full path (an object with exactly two non-empty strings;
            # one recording parameters takes the full path).
            if type(prompt) is not dict or prompt.keys() != _PROMPT_KEYS:
                return None
            prompt_name, prompt_version = prompt["name"], prompt["version"]
            if type(prompt_name) is not str or type(prompt_version) is not str or not prompt_name or not prompt_version:
                return None
            prompt = self._prompt_ref(prompt_name, prompt_version)
        if self.check_payloads:
            self.json_value(result, f"$.events[{index}].result")
        return Event(
            seq=seq, kind=_KIND_OF[kind], name=self._shared_name(name), args_digest=digest, prompt=prompt,
            idempotency_key=key, result=result, result_ref=ref, extra=_NO_EXTRA,
        )

    def _shared_name(self, name: str) -> str:
        return self._names.setdefault(name, name)

    def _prompt_ref(self, name: str, version: str) -> PromptRef:
        # A history repeats a handful of prompt versions thousands of times; share one frozen PromptRef each.
        key = (name, version)
        ref = self._prompt_refs.get(key)
        if ref is None:
            ref = self._prompt_refs[key] = PromptRef(name=name, version=version)
        return ref


_PLAIN_KEYS = frozenset(("seq", "kind", "name", "args_digest", "prompt", "idempotency_key", "result", "result_ref"))
_PROMPT_KEYS = frozenset(("name", "version"))
_KIND_SET = frozenset(EVENT_KINDS)
# The vocabulary's own strings, shared by every loaded event (the parser makes a new string per event).
_KIND_OF = {kind: kind for kind in EVENT_KINDS}
# Loaded events without unknown fields share one empty mapping instead of a dict each (Events are frozen;
# nothing writes to ``extra``).
_NO_EXTRA: Mapping[str, Any] = {}


def history_to_dict(history: History, blobs: BlobStore | None = None) -> dict[str, Any]:
    """The JSON form, keys in contract order. With ``blobs``, results over ``BLOB_THRESHOLD`` are
    written there and referenced; refs already present are copied from the history's own store."""
    out: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "workflow": _workflow_dict(history.workflow),
    }
    if history.code_version is not None:
        out["code_version"] = history.code_version
    out["prompt_versions"] = dict(sorted(history.prompt_versions.items()))
    if history.prompt_manifest is not None:
        out["prompt_manifest"] = dict(sorted(history.prompt_manifest.items()))
    out["status"] = history.status
    if history.waiting is not None:
        out["waiting"] = {"kind": history.waiting.kind, "name": history.waiting.name}
        if history.waiting.duration_s is not None:
            out["waiting"]["duration_s"] = history.waiting.duration_s
    out["input"] = history.input
    out["events"] = [_event_dict(history, event, blobs) for event in history.events]
    if history.result is not None:
        out["result"] = history.result
    if history.error is not None:
        out["error"] = _error_dict(history.error)
    if history.redacted:
        out["redacted"] = list(history.redacted)
    if history.graph is not None:
        out["graph"] = history.graph
    if history.nested_namespaces is not None:
        out["nested_namespaces"] = [{"nested": number, "namespace": namespace}
                                    for number, namespace in history.nested_namespaces]
    return out


def dumps_history(history: History, blobs: BlobStore | None = None) -> str:
    """The exact text ``save_history`` writes (blobs, if given, are written as a side effect)."""
    data = history_to_dict(history, blobs)
    # Validate what we are about to write: a History built in code may hold non-JSON values.
    history_from_dict(data, history.source, history.blobs)
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def save_history(history: History, path: Path | str) -> History:
    """Write ``history`` to ``path`` (atomically) with large results in ``<dir>/blobs``; returns the
    history as it now resolves from that file (same data, ``source`` and ``blobs`` updated)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    store = BlobStore.beside(path)
    text = dumps_history(history, store)
    write_text_atomically(path, text)
    return history_from_dict(json.loads(text), path, store, parsed=True)


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename. A file that already
    exists keeps its mode (a rewrite in place must not turn a 0644 history into 0600); the path itself
    is replaced, never a file a symlink there points to."""
    try:
        mode: int | None = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = None
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        if mode is not None:
            os.chmod(temp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _workflow_dict(workflow: WorkflowInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"type": workflow.type, "id": workflow.id}
    if workflow.run_id is not None:
        out["run_id"] = workflow.run_id
    out["engine"] = workflow.engine
    if workflow.protocol_version is not None:
        out["protocol_version"] = workflow.protocol_version
    return out


def _error_dict(error: ErrorInfo) -> dict[str, str]:
    return {"type": error.type, "message": error.message}


def _event_dict(history: History, event: Event, blobs: BlobStore | None) -> dict[str, Any]:
    out: dict[str, Any] = {"seq": event.seq, "kind": event.kind, "name": event.name}
    if event.args_digest is not None:
        out["args_digest"] = event.args_digest
    if event.prompt is not None:
        out["prompt"] = {"name": event.prompt.name, "version": event.prompt.version}
        if event.prompt.params is not None:
            out["prompt"]["params"] = dict(event.prompt.params)
    if event.idempotency_key is not None:
        out["idempotency_key"] = event.idempotency_key
    json_path = f"$.events[{event.seq - 1}]"
    if event.result_ref is not None:
        if blobs is not None and not blobs.path_of(event.result_ref).is_file():
            # Saving elsewhere: bring the blob along (verified on the way).
            if history.blobs is None:
                raise HistoryError(history.source, f"{json_path}.result_ref", f"blob {event.result_ref} is not available to copy")
            blobs.write_bytes(history.blobs.read_bytes(event.result_ref, history.source, f"{json_path}.result_ref"))
        out["result_ref"] = event.result_ref
    elif event.result is not None:
        try:
            data = blob_bytes(event.result) if blobs is not None else b""
        except (TypeError, ValueError) as error:
            raise HistoryError(history.source, f"{json_path}.result", f"not JSON-serialisable: {error}") from None
        if blobs is not None and len(data) > BLOB_THRESHOLD:
            out["result_ref"] = blobs.write_bytes(data)
        else:
            out["result"] = event.result
    if event.error is not None:
        out["error"] = _error_dict(event.error)
    if event.duration_s is not None:
        out["duration_s"] = event.duration_s
    if event.patch_id is not None:
        out["patch_id"] = event.patch_id
    for key in sorted(event.extra):
        if key in out or key in _EVENT_KEYS:
            raise HistoryError(history.source, _join(json_path, key), "extra field shadows a known field")
        out[key] = event.extra[key]
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _plain(key: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key))


def _join(path: str, key: Any) -> str:
    key = str(key)
    return f"{path}.{key}" if _plain(key) else f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def json_type_name(value: Any) -> str | None:
    """The JSON type of a decoded JSON value (``null``, ``boolean``, ``integer``, ``number``, ``string``,
    ``array``, ``object``); None for a value JSON has no type for."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: a bool is an int to isinstance
        return "boolean"
    for kind, name in ((int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return None


def _type_name(value: Any) -> str:
    return json_type_name(value) or f"Python {type(value).__name__}"


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = _type_name(value)
    return text if len(text) <= 60 else text[:57] + "…"
