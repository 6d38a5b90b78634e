"""Strict JSON for everything replaytest loads: ``loads_strict`` and ``StrictJSONError``.

Python's ``json`` accepts more than JSON: ``NaN``/``Infinity``, numbers that overflow to infinity
(``1e999``), and duplicate object keys (the last one silently wins, so two tools reading one file can
see two different histories). Here each is an error naming the JSON path, as are integers longer than
the interpreter converts (Python 3.11+ limits them to 4,300 digits) and nesting deeper than
``MAX_DEPTH``.
"""

from __future__ import annotations

import json
import math
import re
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


def loads_strict(text: str) -> Any:
    """Parse ``text``; ``StrictJSONError`` (with line/column or JSON path) for anything not strict JSON."""
    try:
        value = _DECODER.decode(text)
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
    problem = _find_problem(value)
    if problem is None and _SURROGATE_ESCAPE.search(text):
        problem = _find_surrogate(value)
    if problem is not None:
        raise StrictJSONError(problem[1], _short_path(problem[0]))
    return value


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


def _find_problem(root: Any) -> tuple[str, str] | None:
    """The first duplicate key, non-finite number or over-deep nesting, iteratively (depth is what is checked)."""
    stack: list[tuple[Any, str, int]] = [(root, "$", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            return path, f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(value, dict):
            if isinstance(value, _Duplicated):
                return join_path(path, value.duplicate), "duplicate key (JSON objects must not repeat a key)"
            for key, item in reversed(list(value.items())):
                if isinstance(item, (dict, list, _NonFinite)):
                    stack.append((item, join_path(path, key), depth + 1))
        elif isinstance(value, list):
            for index in range(len(value) - 1, -1, -1):
                item = value[index]
                if isinstance(item, (dict, list, _NonFinite)):
                    stack.append((item, f"{path}[{index}]", depth + 1))
        elif isinstance(value, _NonFinite):
            return path, "number is too large (it overflows to infinity)"
    return None


def join_path(path: str, key: Any) -> str:
    key = str(key)
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{json.dumps(key, ensure_ascii=True)}]"


def _first_line(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:200]
