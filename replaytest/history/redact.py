"""Redaction: scrub secrets and personal data from recorded payloads before a history is shared.

Two selectors, both compiled once into a ``Redactor``:

- **key names**, matched case-insensitively and ignoring ``-``/``_``/spaces (``api_key`` matches
  ``API-Key`` and ``apiKey``), anywhere inside a payload — the whole value under the key is replaced;
- **JSON paths**, a small dialect: ``$``, ``.name``, ``['name']``, ``[3]``, ``[*]``, ``.*`` and
  ``..name`` (any depth), e.g. ``$.input.customer.email`` or ``$.events[*].result.token``.

In a history only payloads are touched: the run's ``input``, ``result`` and ``error``, and each event's
``result`` and ``error``. Paths are written against the whole document but can only select inside those;
names, ``args_digest``, idempotency keys and prompt versions are never changed, so a redacted history
still replays (argument digests were taken from the real values). ``redact_value`` does the same for
any plain JSON value, with ``$`` meaning the value itself (importers use it on raw payloads).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replaytest.history.io import load_history, save_history
from replaytest.history.model import ErrorInfo, History

DEFAULT_KEY_NAMES: tuple[str, ...] = (
    "api_key",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "authorization",
    "cookie",
    "set_cookie",
    "email",
    "ssn",
)
DEFAULT_REPLACEMENT = "[redacted]"


class RedactError(ValueError):
    """A JSON path that the dialect does not accept; the message points at the offending character."""


def normalise_key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


# A compiled path is a tuple of segments: ("key", name), ("index", n), ("wild",), ("deep", name).
Segment = tuple


def parse_json_path(path: str) -> tuple[Segment, ...]:
    """Compile one JSON path of the dialect above; ``RedactError`` if it is not one."""
    if not path.startswith("$"):
        raise RedactError(f"JSON path {path!r} must start with '$'")
    segments: list[Segment] = []
    i = 1
    name_re = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
    while i < len(path):
        if path.startswith("..", i):
            match = name_re.match(path, i + 2)
            if not match:
                raise RedactError(f"JSON path {path!r}: expected a key name after '..' at column {i + 3}")
            segments.append(("deep", match.group()))
            i = match.end()
        elif path[i] == ".":
            if path.startswith(".*", i):
                segments.append(("wild",))
                i += 2
                continue
            match = name_re.match(path, i + 1)
            if not match:
                raise RedactError(f"JSON path {path!r}: expected a key name after '.' at column {i + 2}")
            segments.append(("key", match.group()))
            i = match.end()
        elif path[i] == "[":
            close = _bracket_end(path, i)
            inner = path[i + 1 : close].strip()
            if inner == "*":
                segments.append(("wild",))
            elif re.fullmatch(r"\d+", inner):
                segments.append(("index", int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                segments.append(("key", inner[1:-1]))
            else:
                raise RedactError(f"JSON path {path!r}: expected [n], [*] or ['name'] at column {i + 1}")
            i = close + 1
        else:
            raise RedactError(f"JSON path {path!r}: unexpected {path[i]!r} at column {i + 1}")
    return tuple(segments)


def _bracket_end(path: str, start: int) -> int:
    quote = None
    for j in range(start + 1, len(path)):
        char = path[j]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "]":
            return j
    raise RedactError(f"JSON path {path!r}: '[' at column {start + 1} is never closed")


@dataclass(frozen=True)
class Redactor:
    """Compiled selectors. ``count`` of a call tells how many values were replaced."""

    key_names: frozenset[str]
    paths: tuple[tuple[Segment, ...], ...]
    replacement: Any = DEFAULT_REPLACEMENT

    @classmethod
    def build(cls, key_names: Iterable[str] = (), json_paths: Iterable[str] = (), replacement: Any = DEFAULT_REPLACEMENT) -> Redactor:
        return cls(
            key_names=frozenset(normalise_key(name) for name in key_names),
            paths=tuple(parse_json_path(path) for path in json_paths),
            replacement=replacement,
        )

    def value(self, value: Any) -> tuple[Any, int]:
        """Redact a plain JSON value (``$`` is the value): returns the new value and the number replaced.
        The input is not modified."""
        counter = [0]
        root = {"$": self._by_keys(value, counter)}
        for segments in self.paths:
            self._apply_path(root, "$", segments, counter)
        return root["$"], counter[0]

    def _by_keys(self, value: Any, counter: list[int]) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if self.key_names and isinstance(key, str) and normalise_key(key) in self.key_names:
                    out[key] = self.replacement
                    counter[0] += 1
                else:
                    out[key] = self._by_keys(item, counter)
            return out
        if isinstance(value, list):
            return [self._by_keys(item, counter) for item in value]
        return value

    def _apply_path(self, container: Any, key: Any, segments: Sequence[Segment], counter: list[int]) -> None:
        """Replace what ``segments`` select below ``container[key]`` (in place: containers are copies)."""
        if not segments:
            if container[key] != self.replacement:
                container[key] = self.replacement
                counter[0] += 1
            return
        node = container[key]
        head, rest = segments[0], segments[1:]
        if head[0] == "key":
            if isinstance(node, dict) and head[1] in node:
                self._apply_path(node, head[1], rest, counter)
        elif head[0] == "index":
            if isinstance(node, list) and head[1] < len(node):
                self._apply_path(node, head[1], rest, counter)
        elif head[0] == "wild":
            for child in _children(node):
                self._apply_path(node, child, rest, counter)
        else:  # deep: the named key at this level or any level below
            if isinstance(node, dict) and head[1] in node:
                self._apply_path(node, head[1], rest, counter)
            for child in _children(node):
                if isinstance(node[child], (dict, list)):
                    self._apply_path(node, child, segments, counter)


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


def redact_value(
    value: Any, key_names: Iterable[str] = DEFAULT_KEY_NAMES, json_paths: Iterable[str] = (), replacement: Any = DEFAULT_REPLACEMENT
) -> Any:
    """Redact one plain JSON value (``$`` is the value itself); the input is not modified."""
    return Redactor.build(key_names, json_paths, replacement).value(value)[0]


def redact_history(history: History, redactor: Redactor) -> tuple[History, int]:
    """A copy of ``history`` with its payloads redacted, and how many values were replaced.

    Results stored by reference are read, redacted and, when changed, held inline again (saving puts
    them back in the blob store under their new hash).
    """
    # Keys first, per payload; then paths over a document holding only the payloads.
    counter = [0]
    events = []
    for event in history.events:
        result = history.event_result(event) if event.result_ref is not None else event.result
        events.append(
            {"result": redactor._by_keys(result, counter), "error": _error_dict(event.error)}
        )
    document = {
        "input": redactor._by_keys(history.input, counter),
        "result": redactor._by_keys(history.result, counter),
        "error": _error_dict(history.error),
        "events": events,
    }
    root = {"$": document}
    for segments in redactor.paths:
        redactor._apply_path(root, "$", segments, counter)
    new_events = []
    for event, payload in zip(history.events, document["events"]):
        original = history.event_result(event) if event.result_ref is not None else event.result
        changes: dict[str, Any] = {"error": _error_from(payload["error"], event.error)}
        if payload["result"] != original:
            changes.update(result=payload["result"], result_ref=None)
        new_events.append(dataclasses.replace(event, **changes))
    redacted = dataclasses.replace(
        history,
        input=document["input"],
        result=document["result"],
        error=_error_from(document["error"], history.error),
        events=tuple(new_events),
    )
    return redacted, counter[0]


def _error_dict(error: ErrorInfo | None) -> Any:
    return None if error is None else {"type": error.type, "message": error.message}


def _error_from(value: Any, original: ErrorInfo | None) -> ErrorInfo | None:
    if original is None:
        return None
    if not isinstance(value, dict):
        # A path replaced the whole error object; keep the type (it is not a payload) and scrub the text.
        return ErrorInfo(type=original.type, message=str(value))
    return ErrorInfo(type=str(value.get("type", original.type)), message=str(value.get("message", original.message)))


def redact_file(source: Path, target: Path, redactor: Redactor) -> int:
    """Load ``source``, redact it and save to ``target`` (may be the same path); returns the count.

    Blobs of redacted results are written anew under their new hash; the old ones are left where they
    are because other histories in the directory may share them.
    """
    redacted, count = redact_history(load_history(source), redactor)
    save_history(redacted, target)
    return count
