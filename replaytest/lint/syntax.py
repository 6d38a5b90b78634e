"""Small questions about CPython ``ast`` nodes that need no scope: child nodes worth walking, names and
calls inside an expression, how the source spells a callee, literal strings, a call's arguments in source
order, and the exact source text and position of a node (``SourceText``).

Every part of the batched pass (the collector, the value model, the structural rules) uses these, so
they live apart from all of them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

# Fields that never hold code worth visiting: expression contexts, operators and plain values.
_SKIPPED_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "kind", "conversion", "is_async", "level"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that can hold code (computed once per type)."""
    names = _FIELDS.get(node_type)
    if names is None:
        names = tuple(name for name in getattr(node_type, "_fields", ()) if name not in _SKIPPED_FIELDS)
        _FIELDS[node_type] = names
    return names


def children(node: ast.AST) -> Iterator[ast.AST]:
    for name in child_fields(type(node)):
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            for child in value:
                if isinstance(child, ast.AST):
                    yield child


def calls_in(node: ast.AST) -> Iterator[ast.Call]:
    if isinstance(node, ast.Call):
        yield node
    for child in children(node):
        yield from calls_in(child)


def names_in(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
        return
    for child in children(node):
        yield from names_in(child)


def unawaited(node: ast.AST) -> ast.AST:
    """The awaited expression of ``await x`` (``x``), else the node itself."""
    return node.value if isinstance(node, ast.Await) else node


def is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def dotted_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted_name(node.value)}.{node.attr}"
    return ""


def dotted_text(node: ast.AST) -> str:
    """How the source spells a callee, compactly: ``client.chat.completions.create``, ``OpenAI().x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted_text(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{dotted_text(node.func)}()"
    if isinstance(node, ast.Subscript):
        return f"{dotted_text(node.value)}[...]"
    if isinstance(node, ast.Await):
        return dotted_text(node.value)
    return "(...)"


def string_value(node: ast.AST | None) -> str | None:
    """The value of a plain string literal, or None (f-strings, bytes, other constants)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_string_literal(node: ast.AST) -> bool:
    """A string or bytes literal, or an f-string."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))


class Arg(NamedTuple):
    """One argument of a call as the source writes it: ``keyword`` (``None`` when positional or starred),
    ``star`` (``""``, ``"*"`` or ``"**"``) and the value (without the star)."""

    keyword: str | None
    value: ast.expr
    star: str


def call_args(call: ast.Call) -> list[Arg]:
    """The arguments of ``call`` in source order (``ast`` keeps positional and keyword ones apart)."""
    found = [Arg(None, arg.value, "*") if isinstance(arg, ast.Starred) else Arg(None, arg, "") for arg in call.args]
    if call.keywords:
        keywords = [Arg(k.arg, k.value, "" if k.arg is not None else "**") for k in call.keywords]
        if found and any(arg.star == "*" for arg in found):
            # ``f(a=1, *rest)``: a starred positional may follow keywords; order by place in the source.
            nodes = {id(arg.value): arg for arg in (*found, *keywords)}
            ordered: list[Any] = sorted((*call.args, *call.keywords), key=lambda n: (n.lineno, n.col_offset))
            return [nodes[id(n.value if isinstance(n, (ast.Starred, ast.keyword)) else n)] for n in ordered]
        found.extend(keywords)
    return found


def positional_args(call: ast.Call) -> list[ast.expr]:
    return [arg for arg in call.args if not isinstance(arg, ast.Starred)]


def keyword_arg(call: ast.Call, name: str) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def first_arg_value(call: ast.Call) -> ast.expr | None:
    """The value of the first argument as written, whatever its kind (positional, keyword or starred)."""
    args = call_args(call)
    return args[0].value if args else None


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceText:
    """A module's text by line, for the exact source of a node and its position in characters.

    CPython's ``ast`` gives columns as UTF-8 byte offsets; reports count characters (as editors and
    libcst do), so a line with non-ASCII text is converted."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        starts.extend(match.end() for match in _LINE_BREAK.finditer(text))
        self.starts = starts

    def line(self, number: int) -> str:
        starts = self.starts
        if number - 1 >= len(starts):
            return ""
        start = starts[number - 1]
        end = starts[number] if number < len(starts) else len(self.text)
        return self.text[start:end]

    def column(self, line: int, byte_offset: int) -> int:
        """The character column (from 0) of a UTF-8 byte offset on ``line``."""
        text = self.line(line)
        if text.isascii():
            return byte_offset
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
        """((start line, start column), (end line, end column)): lines from 1, columns from 0, in characters."""
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        start = (line, self.column(line, getattr(node, "col_offset", 0)))
        end = (end_line, self.column(end_line, end_col)) if end_col is not None else start
        return start, end

    def code(self, node: ast.AST) -> str:
        """The exact source of a node (as written: spacing, quotes and comments inside it kept)."""
        (line, column), (end_line, end_column) = self.span(node)
        start = self.starts[line - 1] + column if line - 1 < len(self.starts) else len(self.text)
        end = self.starts[end_line - 1] + end_column if end_line - 1 < len(self.starts) else len(self.text)
        return self.text[start:end]


def short_text(source: SourceText, node: ast.AST) -> str:
    """The source of a node on one line, at most 60 characters (for messages)."""
    text = " ".join(source.code(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def arg_text(source: SourceText, arg: Arg) -> str:
    value = source.code(arg.value)
    if arg.keyword is not None:
        return f"{arg.keyword}={value}"
    return f"{arg.star}{value}"
