"""Small questions about libcst nodes that need no scope: child fields worth walking, names and calls
inside an expression, how the source spells a callee, literal strings.

Every part of the batched pass (the collector, the value model, the structural rules) uses these, so
they live apart from all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst
else:
    from replaytest.lint import lazy_cst as cst


# Fields that never hold code worth visiting (whitespace, punctuation, parentheses).
_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
    "operator", "dot", "colon", "equal", "star", "lbracket", "rbracket", "lbrace", "rbrace", "newline",
    "trailing_whitespace", "empty_lines", "asynchronous", "default_comma", "arrow", "indent", "encoding",
    "default_indent", "default_newline", "has_trailing_newline", "value_comma",
})
_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that can hold code (computed once per type)."""
    names = _FIELDS.get(node_type)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(node_type)
            if not f.name.startswith("whitespace") and f.name not in _SKIPPED_FIELDS
        )
        _FIELDS[node_type] = names
    return names


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            for child in value:
                if isinstance(child, cst.CSTNode):
                    yield child


def calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    if isinstance(node, cst.Call):
        yield node
    for child in children(node):
        yield from calls_in(child)


def names_in(node: cst.CSTNode) -> Iterator[str]:
    if isinstance(node, cst.Name):
        yield node.value
        return
    for child in children(node):
        yield from names_in(child)


def unawaited(node: cst.BaseExpression) -> cst.BaseExpression:
    """The awaited expression of ``await x`` (``x``), else the node itself."""
    return node.expression if isinstance(node, cst.Await) else node


def is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_name(node.value)}.{node.attr.value}"
    return ""


def dotted_text(node: cst.BaseExpression) -> str:
    """How the source spells a callee, compactly: ``client.chat.completions.create``, ``OpenAI().x``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_text(node.value)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return f"{dotted_text(node.func)}()"
    if isinstance(node, cst.Subscript):
        return f"{dotted_text(node.value)}[...]"
    if isinstance(node, cst.Await):
        return dotted_text(node.expression)
    return "(...)"


def short_text(node: cst.CSTNode) -> str:
    """The source of a node on one line, at most 60 characters (for messages)."""
    text = cst.Module([]).code_for_node(node).strip()
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def arg_text(tree: cst.Module, arg: cst.Arg) -> str:
    value = tree.code_for_node(arg.value)
    if arg.keyword is not None:
        return f"{arg.keyword.value}={value}"
    return f"{arg.star}{value}"


def string_value(node: cst.CSTNode) -> str | None:
    """The value of a plain string literal, or None (f-strings, bytes, malformed literals)."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # a malformed literal is simply not a key
            return None
        return value if isinstance(value, str) else None
    return None
