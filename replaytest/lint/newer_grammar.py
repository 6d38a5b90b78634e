"""A file the running Python cannot parse but a newer one can: what lint makes of it.

Lint parses with the running interpreter's parser, so under 3.10 or 3.11 a project written for 3.12 has
files with PEP 695 syntax (``type Alias = …``, ``def f[T](…)``, ``class C[T]:``) that CPython rejects.
libcst knows the newer grammar: ``downgrade`` asks it whether the file is valid Python at all and where those
constructs are, so that it can blank them out of the text with spaces — a type
parameter list becomes spaces, ``type Alias = v`` becomes ``Alias      = v`` — keeping every other
character at its line and column. The result parses under the running Python with the same positions, and
the collector analyses it like any file (type parameters hold no replay hazard). What cannot be blanked
that way (a PEP 701 f-string, a type parameter list spanning lines) leaves the file unparsed, and lint
says it needs a newer Python.

libcst is imported only here, and only for files CPython rejected; a file with a long line is never handed
to it (its native parser may crash or take minutes on long deep chains: ``parse_guard``).
"""

from __future__ import annotations

from typing import Any

from replaytest.lint.syntax import SourceText


def _module(data: bytes) -> Any | None:
    from replaytest.lint.parse_guard import risky_bytes

    if risky_bytes(data):
        return None
    try:
        import libcst

        return libcst.parse_module(data)
    except Exception:  # libcst rejects it too (or cannot be imported): an ordinary syntax error
        return None


def downgrade(data: bytes, text: str) -> tuple[bool, str | None]:
    """For a source the running Python rejected: whether it is valid Python of a later version, and
    ``text`` with its PEP 695 constructs blanked so that the running Python may parse it, every other
    character kept at its line and column (None when they cannot be blanked so)."""
    module = _module(data)
    if module is None:
        return False, None
    import libcst
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    source = SourceText(text)
    chars = list(text)

    def offset(line: int, column: int) -> int:
        return source.starts[line - 1] + column

    for node, where in positions.items():
        if isinstance(node, libcst.TypeParameters):
            if where.start.line != where.end.line:
                return True, None  # blanking a list that spans lines would leave its line breaks outside brackets
            for index in range(offset(where.start.line, where.start.column), offset(where.end.line, where.end.column)):
                chars[index] = " "
        elif isinstance(node, libcst.TypeAlias):
            name = positions[node.name]
            if name.start.line != where.start.line:
                return True, None
            start, end = offset(where.start.line, where.start.column), offset(name.end.line, name.end.column)
            spelled = node.name.value
            chars[start:end] = list(spelled + " " * (end - start - len(spelled)))
    return True, "".join(chars)
