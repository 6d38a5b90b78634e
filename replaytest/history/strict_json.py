"""Strict JSON for everything replaytest loads: ``loads_strict``, ``stream_object`` and ``StrictJSONError``.

Python's ``json`` accepts more than JSON: ``NaN``/``Infinity``, numbers that overflow to infinity
(``1e999``), and duplicate object keys (the last one silently wins, so two tools reading one file can
see two different histories). Here each is an error naming the JSON path, as are integers longer than
the interpreter converts (Python 3.11+ limits them to 4,300 digits) and nesting deeper than
``MAX_DEPTH``.

``stream_object`` parses a top-level object with one large array member element by element, handing each
element to the caller as soon as it is parsed and checked, so a caller that turns elements into something
smaller never holds the whole parsed document (a history's events are most of its size).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 400
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class StrictJSONError(ValueError):
    """Not strict JSON; ``json_path`` says where (``None`` when the text does not parse at all)."""

    def __init__(self, message: str, json_path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.json_path = json_path


class _Duplicated(dict):  # type: ignore[type-arg]
    """An object that had a key twice: kept so the path can be found after parsing."""

    duplicate: str = ""


class _NonFinite(float):
    """A number literal that overflows to infinity (``1e999``)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    marked = _Duplicated(result)
    marked.duplicate = duplicate
    return marked


def _number(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(value)


def _constant(name: str) -> Any:
    raise StrictJSONError(f"invalid JSON: {name} is not a JSON value")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=_number, parse_constant=_constant)
# The decoder's scanner: one value at a position, what ``raw_decode`` wraps (an attribute the stubs omit).
_SCAN_ONCE: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def loads_strict(text: str) -> Any:
    """Parse ``text``; ``StrictJSONError`` (with line/column or JSON path) for anything not strict JSON."""
    value = _decoded(_DECODER.decode, text)
    problem = _find_problem(value)
    if problem is None and _SURROGATE_ESCAPE.search(text):
        problem = _find_surrogate(value)
    if problem is not None:
        raise StrictJSONError(problem[1], _short_path(problem[0]))
    return value


def stream_object(text: str, streamed_key: str, consume: Callable[[int, Any], None]) -> dict[str, Any] | None:
    """The top-level object in ``text`` with the elements of its ``streamed_key`` array handed to
    ``consume(index, element)`` one at a time, each parsed and checked as ``loads_strict`` checks it (the
    returned object holds an empty list under that key); None for a text this cannot stream: not an
    object at the top, or holding a surrogate escape (a rare file ``loads_strict`` checks whole).

    Any problem is a ``StrictJSONError``, but which one and how it is worded may differ from what
    ``loads_strict`` reports for the same text (it can stop at a problem the whole-document check would
    find later): a caller that names the problem parses the text again with ``loads_strict``."""
    end = _skip_whitespace(text, 0)
    if text[end : end + 1] != "{" or _SURROGATE_ESCAPE.search(text):
        return None
    members: dict[str, Any] = {}
    end = _skip_whitespace(text, end + 1)
    if text[end : end + 1] == "}":
        end += 1
    else:
        while True:
            if text[end : end + 1] != '"':
                raise StrictJSONError(f"invalid JSON at character {end}: expecting a property name")
            key, end = _decoded(_DECODER.raw_decode, text, end)  # a string: it starts with '"'
            if key in members:
                raise StrictJSONError("duplicate key (JSON objects must not repeat a key)", join_path("$", key))
            end = _skip_whitespace(text, end)
            if text[end : end + 1] != ":":
                raise StrictJSONError(f"invalid JSON at character {end}: expecting ':'")
            end = _skip_whitespace(text, end + 1)
            if key == streamed_key and text[end : end + 1] == "[":
                members[key] = []
                end = _stream_array(text, end + 1, key, consume)
            else:
                members[key], end = _checked_value(text, end, ["$", key])
            end = _skip_whitespace(text, end)
            delimiter, end = text[end : end + 1], end + 1
            if delimiter == "}":
                break
            if delimiter != ",":
                raise StrictJSONError(f"invalid JSON at character {end - 1}: expecting ',' or '}}'")
            end = _skip_whitespace(text, end)
    if _skip_whitespace(text, end) != len(text):
        raise StrictJSONError(f"invalid JSON at character {end}: extra data after the object")
    return members


def _stream_array(text: str, end: int, key: str, consume: Callable[[int, Any], None]) -> int:
    """Parse the array whose ``[`` ends before ``end``, handing each element on; returns the end."""
    end = _skip_whitespace(text, end)
    if text[end : end + 1] == "]":
        return end + 1
    # The loop runs once per event: the scanner and the separator pattern are called directly.
    scan, separator, index = _SCAN_ONCE, _ARRAY_SEPARATOR.match, 0
    while True:
        element, end = _decoded(scan, text, end)
        problem = _find_problem(element, ["$", key, index])
        if problem is not None:
            raise StrictJSONError(problem[1], _short_path(problem[0]))
        consume(index, element)
        del element  # the caller keeps what it made of it, not the parsed element
        index += 1
        found = separator(text, end)
        if found is None:
            raise StrictJSONError(f"invalid JSON at character {end}: expecting ',' or ']'")
        end = found.end()
        if found.group(2) is not None:
            return end


def _checked_value(text: str, start: int, at: list[Any]) -> tuple[Any, int]:
    """The JSON value starting at ``start`` and where it ends, checked as a value at path ``at``."""
    value, end = _decoded(_DECODER.raw_decode, text, start)
    problem = _find_problem(value, at)
    if problem is not None:
        raise StrictJSONError(problem[1], _short_path(problem[0]))
    return value, end


_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's four whitespace characters, as the decoder skips them
# Between two array elements: "," and the whitespace after it, or the closing "]".
_ARRAY_SEPARATOR = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|(\]))")


def _skip_whitespace(text: str, start: int) -> int:
    """Where the whitespace from ``start`` on ends."""
    return _WHITESPACE.match(text, start).end()  # type: ignore[union-attr]  # "*" matches anywhere


def _decoded(decode: Callable[..., Any], *args: Any) -> Any:
    """``decode(*args)`` with the decoder's failures turned into ``StrictJSONError``."""
    try:
        return decode(*args)
    except StopIteration as stop:  # the scanner's way of saying no value starts there
        raise StrictJSONError(f"invalid JSON at character {stop.value}: expecting a value") from None
    except json.JSONDecodeError as error:
        raise StrictJSONError(f"line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}") from None
    except RecursionError:
        raise StrictJSONError("invalid JSON: nested too deeply") from None
    except ValueError as error:  # int() refusing an over-long number (Python 3.11+)
        if isinstance(error, StrictJSONError):
            raise
        message = _first_line(error)
        if "integer string conversion" in message:
            message = "an integer has more digits than Python converts (4,300)"
        raise StrictJSONError(f"invalid JSON: {message}") from None


# A lone surrogate can only arrive as an escape; paired ones decode to one character. Searching the text
# first keeps the walk over every string for the rare file that has such an escape at all.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _find_surrogate(root: Any) -> tuple[str, str] | None:
    stack: list[tuple[Any, str]] = [(root, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path, "string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not valid Unicode"
        elif isinstance(value, dict):
            for key, item in value.items():
                if _SURROGATE.search(key):
                    return path, "object key holds a lone UTF-16 surrogate, which is not valid Unicode"
                stack.append((item, join_path(path, key)))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return None


def _short_path(path: str) -> str:
    """Paths into deep nesting are shortened: the start says where, the count how deep."""
    if len(path) <= 160:
        return path
    return f"{path[:120]}… ({path.count('[') + path.count('.')} levels)"


def _find_problem(root: Any, at: list[Any] | None = None) -> tuple[str, str] | None:
    """The first duplicate key, non-finite number or over-deep nesting, depth first, in ``root`` found at
    the path ``at`` (``["$", key, index, …]``; the whole document by default: its depth counts too).

    The walk keeps one iterator per open container and the key that led into it, so its memory grows
    with the nesting depth (at most ``MAX_DEPTH``), not with the number of values (a path string per
    container would cost as much as the document's events); the JSON path is spelled only for a problem."""
    at = at or ["$"]
    problem = _problem_of(root)
    if problem is not None:
        return _spelled(at, problem)
    if not isinstance(root, (dict, list)):
        return None
    depth = len(at) - 1  # of root
    keys: list[Any] = []  # keys[i]: the key or index that led into the container at depth i + 1
    stack: list[Any] = [_children(root)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            if keys:
                keys.pop()
            continue
        key, value = child
        if not isinstance(value, (dict, list, _NonFinite)):
            continue
        keys.append(key)
        problem = _problem_of(value) if depth + len(stack) <= MAX_DEPTH else f"nested deeper than {MAX_DEPTH} levels"
        if problem is not None:
            return _spelled([*at, *keys], problem)
        if isinstance(value, _NonFinite):
            keys.pop()
            continue
        stack.append(_children(value))
    return None


def _children(value: Any) -> Any:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value)


def _problem_of(value: Any) -> str | tuple[str, str] | None:
    """What is wrong with this one value itself (its children aside): a message, or ``(key, message)``
    for a duplicate key, whose path goes one level further."""
    if isinstance(value, _Duplicated):
        return value.duplicate, "duplicate key (JSON objects must not repeat a key)"
    if isinstance(value, _NonFinite):
        return "number is too large (it overflows to infinity)"
    return None


def _spelled(keys: list[Any], problem: str | tuple[str, str]) -> tuple[str, str]:
    if isinstance(problem, tuple):
        keys, problem = [*keys, problem[0]], problem[1]
    path = keys[0]
    for key in keys[1:]:
        path = f"{path}[{key}]" if isinstance(key, int) else join_path(path, key)
    return path, problem


def join_path(path: str, key: Any) -> str:
    key = str(key)
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{json.dumps(key, ensure_ascii=True)}]"


def _first_line(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:200]
