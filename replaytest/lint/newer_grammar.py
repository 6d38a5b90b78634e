"""A file the running Python cannot parse but a newer one can: what lint makes of it.

Lint parses with the running interpreter's parser, so under 3.10 or 3.11 a project written for 3.12 has
files with PEP 695 syntax (``type Alias = …``, ``def f[T](…)``, ``class C[T]:``) and PEP 701 f-strings
(a backslash or the enclosing quote inside an expression part: ``f"{"\\n".join(xs)}"``) that CPython rejects.
libcst knows the newer grammar: ``downgrade`` asks it whether the file is valid Python at all and where those
constructs are, and rewrites them in the text so that the running Python accepts it, keeping every other
character at its line and column:

- a type parameter list becomes spaces, ``type Alias = v`` becomes ``Alias      = v`` (type parameters hold
  no replay hazard);
- an f-string (or a concatenation holding one) the running Python rejects becomes a tuple of its expression
  parts, each at its own position: ``f"{a["k"]!r:>{w}} x"`` becomes ``(  a["k"],   w,    )``. Its literal text is
  blanked; the calls in its expressions stay where they are, so their hazards are reported at their lines.

The result parses under the running Python with the same positions, and the collector analyses it like any
file. What cannot be rewritten that way (a type parameter list spanning lines, syntax newer than 3.13, a file
libcst does not give back exactly, so that its positions are not the file's) leaves the file unparsed, and
lint says it needs a newer Python.

libcst is imported only here, and only for files CPython rejected; a file with a long line is never handed
to it (its native parser may crash or take minutes on long deep chains: ``parse_guard``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from replaytest.lint.syntax import SourceText

# The Python that first accepts the syntax ``downgrade`` rewrites (PEP 695 and PEP 701: 3.12; a type
# parameter default, PEP 696: 3.13).
PEP_695_701 = (3, 12)
PEP_696 = (3, 13)


class Downgraded(NamedTuple):
    """What ``downgrade`` made of a source the running Python rejected."""

    valid: bool  # libcst accepts it: valid Python of a later version
    text: str | None  # the rewritten text the running Python may parse; None when it cannot be rewritten so
    needs: tuple[int, int] | None  # the oldest Python that accepts the constructs rewritten


def _module(data: bytes) -> Any | None:
    from replaytest.lint.parse_guard import risky_bytes

    if risky_bytes(data):
        return None
    try:
        import libcst

        return libcst.parse_module(data)
    except Exception:  # libcst rejects it too (or cannot be imported): an ordinary syntax error
        return None


def _accepted_here(code: str) -> bool:
    try:
        compile("(" + code + "\n)", "<string>", "eval", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def downgrade(data: bytes, text: str) -> Downgraded:
    """For a source the running Python rejected: whether it is valid Python of a later version, and
    ``text`` with its PEP 695 and PEP 701 constructs rewritten so that the running Python may parse it, every
    other character kept at its line and column."""
    module = _module(data)
    if module is None:
        return Downgraded(False, None, None)
    import libcst
    from libcst.metadata import MetadataWrapper, PositionProvider

    if module.code != text:
        # libcst does not give this text back exactly (whitespace after an f-string conversion, ``!s  }``), so
        # its positions are not the file's: nothing is rewritten by them.
        return Downgraded(True, None, None)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    source = SourceText(text)
    chars = list(text)
    needs: tuple[int, int] | None = None

    def offset(line: int, column: int) -> int:
        return source.starts[line - 1] + column

    def bounds(node: Any) -> tuple[int, int]:
        where = positions[node]
        return offset(where.start.line, where.start.column), offset(where.end.line, where.end.column)

    def blank(start: int, end: int) -> None:
        for index in range(start, end):
            if chars[index] not in "\r\n":  # line breaks stay, so every later line keeps its number
                chars[index] = " "

    def blank_over_lines(start: int, end: int) -> bool:
        # Blanked brackets no longer hold the statement together across the line breaks they spanned: each
        # line of the range ends in a backslash instead (an explicit line join), where it has a character
        # to spare before its line break. False when a line has none (an empty line inside the brackets).
        blank(start, end)
        for index in range(start, end):
            if text[index] == "\n":
                join = index - 1 if text[index - 1] == "\r" else index
                if join - 1 < start or text[join - 1] in "\r\n":
                    return False
                chars[join - 1] = "\\"
        return True

    def keep_expressions(parts: Any) -> None:
        # Each expression part back at its place, its parentheses included (libcst's positions leave them
        # out), followed by a comma where its closing text (``}``, ``!r``, ``:spec``, ``=``) begins: never on
        # a line break, which the expression may be followed by inside the braces.
        for part in parts:
            if isinstance(part, libcst.FormattedStringExpression):
                expression = part.expression
                start = bounds(expression.lpar[0])[0] if expression.lpar else bounds(expression)[0]
                end = bounds(expression.rpar[-1])[1] if expression.rpar else bounds(expression)[1]
                chars[start:end] = text[start:end]
                closing = end
                while text[closing].isspace():
                    closing += 1
                chars[closing] = ","
                if part.format_spec:
                    keep_expressions(part.format_spec)

    def string_parts(node: Any) -> list[Any]:
        if isinstance(node, libcst.ConcatenatedString):
            return [node, *string_parts(node.left), *string_parts(node.right)]
        return [node]

    rewritten: set[int] = set()  # the strings inside a concatenation, rewritten (or kept) with it
    for node in _preorder(module):
        if isinstance(node, libcst.TypeParameters):
            if not blank_over_lines(*bounds(node)):
                return Downgraded(True, None, None)
            needs = max(needs or PEP_695_701, PEP_696 if any(getattr(p, "default", None) for p in node.params)
                        else PEP_695_701)
        elif isinstance(node, libcst.TypeAlias):
            where, name = positions[node], positions[node.name]
            if name.start.line != where.start.line:
                return Downgraded(True, None, None)
            start, end = offset(where.start.line, where.start.column), offset(name.end.line, name.end.column)
            spelled = node.name.value
            chars[start:end] = list(spelled + " " * (end - start - len(spelled)))
            needs = max(needs or PEP_695_701, PEP_695_701)
        elif isinstance(node, (libcst.ConcatenatedString, libcst.FormattedString)) and id(node) not in rewritten:
            parts = string_parts(node)
            rewritten.update(id(part) for part in parts)
            if not any(isinstance(part, libcst.FormattedString) for part in parts):
                continue
            start, end = bounds(node)
            if _accepted_here(text[start:end]):
                continue  # an f-string this Python reads: kept as written (rules read f-strings)
            blank(start, end)
            chars[start], chars[end - 1] = "(", ")"
            for part in parts:
                if isinstance(part, libcst.FormattedString):
                    keep_expressions(part.parts)
            needs = max(needs or PEP_695_701, PEP_695_701)
    return Downgraded(True, "".join(chars), needs)


def _preorder(module: Any) -> list[Any]:
    """Every node of the module, each before its children (an f-string's rewrite comes before that of the
    f-strings in its expressions, which the rewrite puts back as written)."""
    import libcst

    nodes: list[Any] = []

    class Collect(libcst.CSTVisitor):
        def on_visit(self, node: libcst.CSTNode) -> bool:
            nodes.append(node)
            return True

    module.visit(Collect())
    return nodes
